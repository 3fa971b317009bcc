// The batcher's sink when the ingest log is on: each group commit becomes one message per account, and the batch is
// stored once JetStream has acknowledged every one of them. A message the log refused or did not acknowledge in
// time fails the batch (503, the devices retry); one it did store is written by a writer all the same, and the
// retry adds nothing (readings are unique on device, channel and ts).
import type { Reading, ReadingsSink } from '../stores/interface.ts'
import { encodeBatch } from './codec.ts'
import type { IngestLogConnection } from './index.ts'

/** How long a publish waits for the log's acknowledgement: ingest answers 503 within 2 s while the log is away. */
const PUBLISH_TIMEOUT_MS = 1_500

export function logSink(log: IngestLogConnection, onPublished?: (messages: number) => void): ReadingsSink {
  const { js, config } = log
  return {
    async write(readings: readonly Reading[]) {
      const messages = encodeBatch(readings, config.subjectPrefix)
      await Promise.all(messages.map((m) => js.publish(m.subject, m.data, { timeout: PUBLISH_TIMEOUT_MS })))
      onPublished?.(messages.length)
    },
  }
}
