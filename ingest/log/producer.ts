// The batcher's sink when the ingest log is on: each group commit becomes one message per account, and the batch is
// stored once JetStream has acknowledged every one of them. A message the log refused or did not acknowledge in
// time fails the batch (503, the devices retry); one it did store is written by a writer all the same, and the
// retry adds nothing (readings are unique on device, channel and ts).
//
// With several lanes (index.ts), each message goes to the next lane in turn, and to another lane when its lane has
// been failing or does not acknowledge within INGEST_LOG_LANE_TIMEOUT_MS: a lane whose leader died or is cut off
// costs a batch that wait, not the seconds of an election. A message whose first append only timed out may be in
// the log twice (the slow lane stored it after all); the readings stores keep one row per (device, channel, ts), so
// it is stored once, as a device's retry is.
import type { Reading, ReadingsSink } from '../stores/interface.ts'
import { encodeBatch, type LogMessage } from './codec.ts'
import type { IngestLogConnection, IngestLogLane } from './index.ts'

/** How long a publish waits for the log's acknowledgement: ingest answers 503 within 2 s while the log is away. */
const PUBLISH_TIMEOUT_MS = 1_500

export interface LaneEvents {
  /** A message was appended to (acknowledged by) this lane. */
  appended?(lane: IngestLogLane): void
  /** An append to this lane failed or timed out, and the message went on to another lane. */
  failedOver?(lane: IngestLogLane): void
}

export function logSink(log: IngestLogConnection, onPublished?: (messages: number) => void, events: LaneEvents = {}): ReadingsSink {
  const { js, config, lanes } = log
  if (lanes.length <= 1) {
    return {
      async write(readings: readonly Reading[]) {
        const messages = encodeBatch(readings, config.subjectPrefix)
        await Promise.all(messages.map((m) => js.publish(m.subject, m.data, { timeout: PUBLISH_TIMEOUT_MS })))
        if (lanes[0]) for (let i = 0; i < messages.length; i++) events.appended?.(lanes[0])
        onPublished?.(messages.length)
      },
    }
  }
  const laneTimeoutMs = config.laneTimeoutMs ?? 300
  let turn = 0
  /** The lanes in the order this message tries them: from the next in turn, the ones answering first. */
  const order = (): IngestLogLane[] => {
    const start = turn++ % lanes.length
    const rotated = lanes.map((_, i) => lanes[(start + i) % lanes.length]!)
    return [...rotated.filter((l) => l.up), ...rotated.filter((l) => !l.up)]
  }
  const append = async (message: LogMessage): Promise<void> => {
    const deadline = performance.now() + PUBLISH_TIMEOUT_MS
    const tries = order()
    let lastError: unknown = new Error('ingest log: no lane took the message in time')
    for (let i = 0; i < tries.length; i++) {
      const lane = tries[i]!
      const remaining = deadline - performance.now()
      if (remaining <= 0) break
      // The last lane has whatever time is left: with every lane slow, the batch still gets the whole budget.
      const timeout = Math.round(i === tries.length - 1 ? remaining : Math.min(laneTimeoutMs, remaining))
      try {
        await lane.js.publish(`${lane.subjectPrefix}.${message.accountId}`, message.data, { timeout })
        events.appended?.(lane)
        return
      } catch (error) {
        lastError = error
        lane.failed(error)
        if (i < tries.length - 1) events.failedOver?.(lane)
      }
    }
    throw lastError
  }
  return {
    async write(readings: readonly Reading[]) {
      const messages = encodeBatch(readings, config.subjectPrefix)
      await Promise.all(messages.map(append))
      onPublished?.(messages.length)
    },
  }
}
