// Light readings requests before heavy ones (issue 57): a dashboard's page is someone looking at a screen, an
// export's next step is a file that arrives a moment later either way. Both run on this process's one thread and the
// store's few reader connections, and at the dense site an export running beside the dashboards' first asks (25 rooms
// asked for within 2.5 s, nothing kept yet) made those asks wait behind its steps and the garbage collections it asks
// for. So a heavy read (a CSV export's step, a heavy page), and a heavy file's collection, starts once no light
// request is in flight, or after waiting at most MAX_YIELD_MS: light requests come and go in tens of milliseconds,
// so a heavy read waits out a burst of them and is never starved by a steady stream.
//
// Measured: `BENCH_DENSE_STEADY=1 BENCH_DENSE_DAYS=2 bun run bench dense --store sql --duration 30`, same sitting. The
// dashboards' first asks took p50 719–981 ms, max 2,116–2,565 ms without this (five runs); 400–415 ms, max 768–925 ms
// with it (two runs), against 235 ms, max 504 ms with no export at all. The export took 6.5–7.4 s, as before (6.9–7.6).
// Waiting at most 1 s, and for reads only, the first asks took 590–875 ms, max 1,578–1,782 ms in three runs of four
// (the fourth 1,590 ms, max 4,101 ms).

/** The longest a heavy read waits for light requests to finish before it starts anyway. */
export const MAX_YIELD_MS = 3_000

export class Foreground {
  private inFlight = 0
  private readonly waiting = new Set<() => void>()

  /** Counts a light request in flight until the function it returns is called. */
  enter(): () => void {
    this.inFlight++
    let left = false
    return () => {
      if (left) return
      left = true
      if (--this.inFlight === 0) for (const wake of [...this.waiting]) wake()
    }
  }

  /** Resolves once no light request is in flight, or after `maxWaitMs`; with how long it waited, in seconds. */
  lull(maxWaitMs = MAX_YIELD_MS): Promise<number> {
    if (this.inFlight === 0) return Promise.resolve(0)
    const began = performance.now()
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        this.waiting.delete(wake)
        resolve((performance.now() - began) / 1000)
      }
      const timer = setTimeout(wake, maxWaitMs)
      this.waiting.add(wake)
    })
  }
}
