// The ingest service (CONTRACT §7): the group-commit batcher in front of the readings store and the cache of
// device configurations. Its routes are in routes.ts (writing) and query.ts (reading).
// It names what it needs in IngestDeps rather than importing src/deps.ts, which builds it: no import circle.
import type { Database } from '../db/client.ts'
import type { Config } from '../src/config.ts'
import type { SharedStore } from '../src/kv/interface.ts'
import type { Logger } from '../src/log.ts'
import type { Metrics } from '../src/observability.ts'
import { Batcher, type BatcherOptions } from './batcher.ts'
import { DeviceDirectory } from './devices.ts'
import type { ReadingsStore } from './stores/interface.ts'

export interface Ingest {
  readonly batcher: Batcher
  readonly devices: DeviceDirectory
  /** Writes everything queued (after the server stopped taking requests) and stops background work. */
  drain(): Promise<void>
}

export interface IngestDeps {
  readonly config: Pick<Config, 'ingestBatchSize' | 'ingestFlushMs' | 'ingestMaxQueued' | 'ingestFlushConcurrency' | 'ingestWriteTimeoutMs'>
  readonly database: Database
  readonly shared: SharedStore
  readonly readings: ReadingsStore
  readonly log: Logger
  readonly metrics: Pick<Metrics, 'ingestFlushReadings' | 'ingestFlushDuration' | 'ingestStoreErrors'>
  /** Told about every batch once it is durably written (the alert evaluator). */
  readonly onWritten?: BatcherOptions['onWritten']
  /** The batcher's clock for its recovery pause (epoch ms); tests move it instead of waiting. */
  readonly clock?: () => number
}

export async function createIngest(deps: IngestDeps): Promise<Ingest> {
  const { config } = deps
  const batcher = new Batcher(deps.readings, {
    maxBatch: config.ingestBatchSize, flushMs: config.ingestFlushMs, maxQueued: config.ingestMaxQueued,
    concurrency: config.ingestFlushConcurrency, writeTimeoutMs: config.ingestWriteTimeoutMs,
    onWriteError: (error, readings) => deps.log.error('readings store write failed', { readings, store: deps.readings.kind, error: String(error) }),
    onFlush: (readings, seconds, ok) => {
      deps.metrics.ingestFlushReadings.observe([], readings)
      deps.metrics.ingestFlushDuration.observe([ok ? 'ok' : 'failed'], seconds)
      if (!ok) deps.metrics.ingestStoreErrors.inc()
    },
    onWritten: deps.onWritten,
    now: deps.clock,
  })
  const devices = new DeviceDirectory(deps.database.db, deps.shared)
  await devices.start()
  return {
    batcher, devices,
    async drain() {
      await batcher.drain()
      devices.stop()
      await devices.writeBack()
    },
  }
}
