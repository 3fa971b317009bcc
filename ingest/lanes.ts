// How many heavy readings queries this process runs at once (READINGS_HEAVY_CONCURRENCY): a share of the CPU for them.
// A heavy query keeps a core busy between the store and this process (the store computing, this process parsing and
// encoding its rows); with as many running as there are cores, everything else (ingest acknowledgements, small
// reads, every other account) waits for a core. The rest wait their turn, first come first served.

export class Lanes {
  private running = 0
  private readonly waiting: (() => void)[] = []

  constructor(private readonly size: number) {}

  /** Waits for a free lane; false if `signal` aborts first (the caller's deadline, or its client gone). */
  async enter(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false
    if (this.running < this.size) {
      this.running++
      return true
    }
    return new Promise<boolean>((resolve) => {
      const admit = () => {
        signal.removeEventListener('abort', giveUp)
        this.running++
        resolve(true)
      }
      const giveUp = () => {
        const at = this.waiting.indexOf(admit)
        if (at >= 0) this.waiting.splice(at, 1)
        resolve(false)
      }
      this.waiting.push(admit)
      signal.addEventListener('abort', giveUp, { once: true })
    })
  }

  /** Frees the lane taken by a successful enter(), handing it to the longest waiter. */
  leave(): void {
    this.running--
    this.waiting.shift()?.()
  }
}
