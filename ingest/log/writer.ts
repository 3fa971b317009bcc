// A writer: drains the ingest log into the readings store. It takes messages from the writers' shared durable
// consumer, gathers them into one store write (group commit again: up to `maxReadings`, or whatever arrived within
// `flushMs`, more and longer than the direct path gathers: config.ts's writerBatchSize says why; `concurrency` writes
// at once, as the direct path does), and acknowledges them to JetStream only once the store has them. A failed write
// hands its messages back for redelivery after a pause (to this writer or another). A message it cannot decode is
// logged and handed back for a minute, never dropped: it was acknowledged to a device, and a writer that knows its
// format (a newer version during an upgrade) may still store it; it does not hold up the messages behind it.
// With several lanes (index.ts), it consumes every lane, each from its own loop, into the same store writes.
import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream'
import type { Logger } from '../../src/log.ts'
import type { Metrics } from '../../src/observability.ts'
import type { Reading, ReadingsStore } from '../stores/interface.ts'
import { decodeMessage } from './codec.ts'
import { WRITER_CONSUMER } from './consumer.ts'
import type { IngestLogConnection } from './index.ts'

export interface WriterOptions {
  /** Readings per store write, at most (messages are whole: one may take it past). */
  maxReadings: number
  /** How long the first message of a write waits for others. */
  flushMs: number
  /** Store writes in flight at once (one at a time left QuestDB idle between them: half the direct path's rate). */
  concurrency: number
  /** A store write slower than this counts as failed (its messages are redelivered; dedup absorbs a late success). */
  writeTimeoutMs: number
  /** Told about every batch once it is stored (the alert evaluator); must not throw. */
  onWritten?: (readings: readonly Reading[]) => void
}

/** After a failed store write, its messages come back this much later. */
const RETRY_DELAY_MS = 1_000
const ERROR_LOG_INTERVAL_MS = 10_000
/** A message this writer cannot decode comes back this much later (to this writer or another). */
const UNDECODABLE_DELAY_MS = 60_000

export class LogWriter {
  private readonly messages: ConsumerMessages[] = []
  /** Per lane: messages its stream still held for the writers at the last one this writer stored. */
  private readonly lanePending = new Map<string, number>()
  private pending: { message: JsMsg; readings: Reading[] }[] = []
  private pendingReadings = 0
  private timer: ReturnType<typeof setTimeout> | undefined
  private readonly inFlight = new Set<Promise<void>>()
  private stopped = false
  private loops: Promise<void>[] = []
  /** Whether the last store write failed, and how long the last stored message took from the log to the store. */
  private failing = false
  /** Failed writes are logged once, then at most every ERROR_LOG_INTERVAL_MS with how many failed meanwhile. */
  private lastErrorLogAt = 0
  private unloggedFailures = 0
  private lastLagMs = 0

  constructor(
    private readonly log: IngestLogConnection,
    private readonly store: ReadingsStore,
    private readonly options: WriterOptions,
    private readonly deps: { log: Logger; metrics: Pick<Metrics, 'ingestLogWriterBatches' | 'ingestLogLag'> },
  ) {}

  async start(): Promise<void> {
    for (const { stream } of this.log.lanes) {
      const consumer = await this.log.js.consumers.get(stream, WRITER_CONSUMER)
      // The client keeps up to this many messages pulled ahead; the consumer's max_ack_pending bounds the rest. Pull
      // requests expire after 5 s instead of 30: one sent to a NATS node that then died is noticed (missed heartbeats)
      // and replaced within seconds (a cluster test drained 32 s after a node's death with the default, 7 s with this).
      const messages = await consumer.consume({ max_messages: 1_000, expires: 5_000 })
      this.messages.push(messages)
      this.loops.push(this.consume(messages))
    }
  }

  private consume(messages: ConsumerMessages): Promise<void> {
    return (async () => {
      for await (const message of messages) {
        let readings: Reading[]
        try {
          readings = decodeMessage(message.data)
        } catch (error) {
          this.deps.log.error('ingest log message not understood; handed back for a minute', { subject: message.subject, seq: message.seq, error: String(error) })
          message.nak(UNDECODABLE_DELAY_MS)
          continue
        }
        this.pending.push({ message, readings })
        this.pendingReadings += readings.length
        // Waiting here while a full batch is written holds back the loop, and so the pulling: backpressure.
        if (this.pendingReadings >= this.options.maxReadings) await this.flush()
        else this.timer ??= setTimeout(() => void this.flush(), this.options.flushMs)
      }
    })().catch((error) => { if (!this.stopped) this.deps.log.error('ingest log writer stopped', { error: String(error) }) })
  }

  /**
   * `down` while its store writes fail, or readings reach the store later than `lagBoundMs` after the log took them
   * (0 once the writer has caught up with the log).
   */
  state(lagBoundMs: number): 'ok' | 'down' {
    return this.failing || this.lastLagMs > lagBoundMs ? 'down' : 'ok'
  }

  /** Stops taking messages, writes what it holds, and returns; unacknowledged messages go to other writers. */
  async stop(): Promise<void> {
    this.stopped = true
    await Promise.all(this.messages.map((m) => m.close()))
    await Promise.all(this.loops)
    await this.flush()
    await Promise.all(this.inFlight)
  }

  /** Starts writing what is pending; resolves once the write has started (after waiting for a free slot). */
  private async flush(): Promise<void> {
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined }
    if (!this.pending.length) return
    const batch = this.pending
    this.pending = []
    this.pendingReadings = 0
    while (this.inFlight.size >= this.options.concurrency) await Promise.race(this.inFlight)
    const writing: Promise<void> = this.write(batch).finally(() => this.inFlight.delete(writing))
    this.inFlight.add(writing)
  }

  private async write(batch: { message: JsMsg; readings: Reading[] }[]): Promise<void> {
    const readings = batch.length === 1 ? batch[0]!.readings : batch.flatMap((m) => m.readings)
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      await Promise.race([
        this.store.write(readings),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('write timed out')), this.options.writeTimeoutMs) }),
      ])
    } catch (error) {
      this.failing = true
      this.deps.metrics.ingestLogWriterBatches.inc(['failed'])
      // While the store is down every batch fails, many times a second: one line now and then says so.
      if (Date.now() - this.lastErrorLogAt >= ERROR_LOG_INTERVAL_MS) {
        this.deps.log.error('ingest log writer: readings store write failed; messages will be redelivered', { messages: batch.length, readings: readings.length, store: this.store.kind, failed_since_last_line: this.unloggedFailures, error: String(error) })
        this.lastErrorLogAt = Date.now()
        this.unloggedFailures = 0
      } else {
        this.unloggedFailures++
      }
      for (const { message } of batch) message.nak(RETRY_DELAY_MS)
      return
    } finally {
      clearTimeout(timer)
    }
    const now = Date.now()
    for (const { message } of batch) {
      message.ack()
      // The message's timestamp is when the log stored it, which is when its batch was acknowledged to the devices.
      this.lastLagMs = Math.max(0, now - Number(message.timestampNanos / 1_000_000n))
      this.deps.metrics.ingestLogLag.observe([], this.lastLagMs / 1000)
    }
    // Caught up (the log holds nothing more for this writer, and nothing waits here): no reading is late now. Without
    // this, the lag of a backlog's last message stayed the writer's state until the next message came, so a writer
    // idle after draining a long outage reported itself down indefinitely.
    for (const { message } of batch) this.lanePending.set(message.info.stream, message.info.pending)
    if (!this.pending.length && [...this.lanePending.values()].every((pending) => pending === 0)) this.lastLagMs = 0
    this.failing = false
    this.deps.metrics.ingestLogWriterBatches.inc(['stored'])
    this.options.onWritten?.(readings)
  }
}
