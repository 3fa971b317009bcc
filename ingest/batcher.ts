// Group commit (CONTRACT §7): readings from many requests gather in one batch; a batch is written to the store
// in one call when it holds `maxBatch` readings, or has waited `flushMs`, and a write slot is free. While every
// slot is taken it goes on gathering, up to `maxBatchWhileBusy`, and is written when a slot frees: a store that
// falls behind gets fewer, larger writes rather than a queue of small ones. Each request is answered only after
// the write that holds its readings succeeded. Memory is bounded: past `maxQueued` readings waiting or in
// flight, new requests are refused (503) instead of queued, and after a failed write the store gets a moment
// to recover before more work is accepted.
import type { Reading, ReadingsSink } from './stores/interface.ts'

export interface BatcherOptions {
  /** What a batch is written to, as refusals name it: "readings store", or "ingest log". */
  sinkName?: string
  maxBatch: number
  /** How large a batch may grow while every write slot is taken (ingest/index.ts says why); maxBatch if unset. */
  maxBatchWhileBusy?: number
  flushMs: number
  maxQueued: number
  /** Batches written at once; more than one keeps the store busy while the next batch fills. */
  concurrency: number
  /** A write that takes longer fails its requests (503); if it lands later, a retry is deduplicated. */
  writeTimeoutMs: number
  /** Told about every failed write (the requests only learn that it failed). */
  onWriteError?: (error: unknown, readings: number) => void
  /** Told about every write when it has settled: how many readings, how long it took, whether it succeeded. */
  onFlush?: (readings: number, seconds: number, ok: boolean) => void
  /** Told about every batch once it is durably written (the alert evaluator); must not throw. */
  onWritten?: (readings: readonly Reading[]) => void
  /** The clock the recovery pause is measured on (epoch ms); tests pass their own so they need not wait for it. */
  now?: () => number
}

/** Why readings were not accepted; the route answers 503 with Retry-After. */
export class IngestUnavailable extends Error {
  constructor(message: string, readonly retryAfterSeconds: number) { super(message) }
}

/** Every request whose readings are in a batch awaits the batch's one promise, settled by its write. */
interface Batch { readings: Reading[]; written: Promise<void>; settle: { resolve(): void; reject(error: Error): void } }

function newBatch(): Batch {
  const { promise, resolve, reject } = Promise.withResolvers<void>()
  // A batch is written only once a request awaits it; this keeps a failure from counting as unhandled before then.
  promise.catch(() => {})
  return { readings: [], written: promise, settle: { resolve, reject } }
}

const RECOVERY_MS = 1000

export class Batcher {
  private current: Batch = newBatch()
  private readonly sealed: Batch[] = []
  private inFlight = 0
  /** Readings accepted into memory and not yet written (current + sealed + in flight). */
  private queued = 0
  /** Cancels the pending seal of `current`, when one is scheduled. */
  private cancelSeal: (() => void) | undefined
  /** A seal came due while every write slot was taken: `current` is sealed when a write finishes. */
  private sealWhenFree = false
  private unhealthyUntil = 0
  private closing = false
  private idle: (() => void)[] = []
  private readonly now: () => number

  constructor(private readonly store: ReadingsSink, private readonly options: BatcherOptions) {
    this.now = options.now ?? Date.now
  }

  get queuedReadings(): number { return this.queued }

  /** Resolves when every reading is durably stored; rejects with IngestUnavailable otherwise. */
  add(readings: Reading[]): Promise<void> {
    if (this.closing) return Promise.reject(new IngestUnavailable('The server is shutting down.', 1))
    if (this.now() < this.unhealthyUntil) return Promise.reject(new IngestUnavailable(`The ${this.options.sinkName ?? 'readings store'} is not answering.`, Math.ceil(RECOVERY_MS / 1000)))
    if (this.queued + readings.length > this.options.maxQueued) return Promise.reject(new IngestUnavailable('Ingest is at capacity.', 1))
    this.queued += readings.length
    const limit = this.inFlight < this.options.concurrency ? this.options.maxBatch : this.options.maxBatchWhileBusy ?? this.options.maxBatch
    if (this.current.readings.length + readings.length > limit) this.seal()
    const batch = this.current
    for (const reading of readings) batch.readings.push(reading)
    if (batch.readings.length >= this.options.maxBatch) this.sealIfFree()
    else this.cancelSeal ??= this.scheduleSeal()
    return batch.written
  }

  /** Stops accepting, writes everything queued, and resolves when the last write has finished (SIGTERM). */
  async drain(): Promise<void> {
    this.closing = true
    this.seal()
    if (this.queued === 0) return
    await new Promise<void>((resolve) => this.idle.push(resolve))
  }

  /**
   * Seals `current` after `flushMs`, or, at 0, once this turn of the event loop has run every request it read: a
   * timer is never shorter than a millisecond in Bun, and a bare Bun.serve whose answers waited for a timer cost
   * about 3 µs more per request than one whose answers waited for the end of the turn (14.5-16.4 against
   * 12.6-13.2 µs; bench/README.md, "Where the HTTP layer's CPU goes").
   */
  private scheduleSeal(): () => void {
    const fire = () => { this.cancelSeal = undefined; this.sealIfFree() }
    if (this.options.flushMs > 0) {
      const timer = setTimeout(fire, this.options.flushMs)
      return () => clearTimeout(timer)
    }
    const immediate = setImmediate(fire)
    return () => clearImmediate(immediate)
  }

  /**
   * Seals `current` if a write can start now. Otherwise it goes on gathering readings until a write finishes, and
   * is then written at once: one larger write rather than a queue of small ones (at flushMs 0, one per turn).
   */
  private sealIfFree() {
    if (this.inFlight < this.options.concurrency) this.seal()
    else this.sealWhenFree = true
  }

  private seal() {
    this.cancelSeal?.()
    this.cancelSeal = undefined
    // Whatever was due is sealed now; the next batch is due by its own size or wait.
    this.sealWhenFree = false
    if (this.current.readings.length === 0) return
    this.sealed.push(this.current)
    this.current = newBatch()
    this.pump()
  }

  private pump() {
    while (this.inFlight < this.options.concurrency && this.sealed.length) {
      const batch = this.sealed.shift()!
      this.inFlight++
      void this.write(batch)
    }
  }

  private async write(batch: Batch) {
    let timer: ReturnType<typeof setTimeout> | undefined
    const started = performance.now()
    let ok = false
    try {
      await Promise.race([
        this.store.write(batch.readings),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('write timed out')), this.options.writeTimeoutMs) }),
      ])
      ok = true
      batch.settle.resolve()
      this.options.onWritten?.(batch.readings)
    } catch (cause) {
      this.options.onWriteError?.(cause, batch.readings.length)
      this.unhealthyUntil = this.now() + RECOVERY_MS
      const error = new IngestUnavailable(`The ${this.options.sinkName ?? 'readings store'} did not take the readings; retry the batch.`, Math.ceil(RECOVERY_MS / 1000))
      batch.settle.reject(error)
    } finally {
      clearTimeout(timer)
      this.options.onFlush?.(batch.readings.length, (performance.now() - started) / 1000, ok)
      this.inFlight--
      this.queued -= batch.readings.length
      if (this.sealWhenFree) {
        this.sealWhenFree = false
        this.seal()
      }
      this.pump()
      if (this.queued === 0) for (const resolve of this.idle.splice(0)) resolve()
    }
  }
}
