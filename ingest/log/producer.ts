// The batcher's sink when the ingest log is on: each group commit becomes one message per account, and the batch is
// stored once JetStream has acknowledged every one of them. A message the log refused or did not acknowledge in
// time fails the batch (503, the devices retry); one it did store is written by a writer all the same, and the
// retry adds nothing (readings are unique on device, channel and ts).
//
// With several lanes (index.ts), each message goes to the next lane in turn (skipping lanes that have been failing),
// and to the other lanes when it does not acknowledge within INGEST_LOG_LANE_TIMEOUT_MS: a lane whose leader died
// or is cut off costs a batch that wait, not the seconds of an election. A message whose first append only timed out may be in
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
  const appendTo = async (lane: IngestLogLane, message: LogMessage, timeout: number): Promise<void> => {
    try {
      await lane.js.publish(`${lane.subjectPrefix}.${message.accountId}`, message.data, { timeout: Math.max(1, Math.round(timeout)) })
    } catch (error) {
      lane.failed(error)
      throw error
    }
    events.appended?.(lane)
  }
  // Two steps: the lane in turn, for INGEST_LOG_LANE_TIMEOUT_MS; then every other lane at once for the rest of the
  // budget, the first acknowledgement answering the batch. At once rather than one after another: a stopped node
  // holds up two lanes of three (the one it leads, and the one whose connection goes through it), and in turn a
  // batch could wait for both; the price is a message in two lanes now and then, stored once all the same.
  const append = async (message: LogMessage): Promise<void> => {
    const deadline = performance.now() + PUBLISH_TIMEOUT_MS
    const [first, ...others] = order()
    try {
      return await appendTo(first!, message, others.length ? laneTimeoutMs : PUBLISH_TIMEOUT_MS)
    } catch (error) {
      if (!others.length) throw error
      events.failedOver?.(first!)
    }
    try {
      await Promise.any(others.map((lane) => appendTo(lane, message, deadline - performance.now())))
    } catch (error) {
      throw (error as AggregateError).errors?.[0] ?? error
    }
  }
  return {
    async write(readings: readonly Reading[]) {
      const messages = encodeBatch(readings, config.subjectPrefix)
      await Promise.all(messages.map(append))
      onPublished?.(messages.length)
    },
  }
}
