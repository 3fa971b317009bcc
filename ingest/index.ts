// The ingest service (CONTRACT §7): the group-commit batcher in front of the readings store and the cache of
// device configurations. Its routes are in routes.ts (writing) and query.ts (reading).
// With INGEST_LOG the batcher's group commits go to the durable ingest log (log/), and a writer in this process
// drains the log into the store (unless INGEST_LOG_WRITER=0).
// It names what it needs in IngestDeps rather than importing src/deps.ts, which builds it: no import circle.
import type { Database } from '../db/client.ts'
import type { Config } from '../src/config.ts'
import type { SharedStore } from '../src/kv/interface.ts'
import type { Logger } from '../src/log.ts'
import type { Metrics } from '../src/observability.ts'
import { Batcher, type BatcherOptions } from './batcher.ts'
import { DeviceDirectory, type DeviceInfo } from './devices.ts'
import type { IngestLogConnection } from './log/index.ts'
import { logSink } from './log/producer.ts'
import type { LogWriter } from './log/writer.ts'
import { ReadingsMaintenance } from './maintenance.ts'
import type { Parsed } from './parse.ts'
import type { ReadingsStore } from './stores/interface.ts'

export interface Ingest {
  readonly batcher: Batcher
  readonly devices: DeviceDirectory
  /** The ingest log's connection, when INGEST_LOG is set. */
  readonly log: IngestLogConnection | undefined
  /** This process's writer from the log to the store, when the log is on and this process runs one. */
  readonly writer: LogWriter | undefined
  /** Partitions, expiry and layout moves of the readings store, when this process writes to it (ingest/maintenance.ts). */
  readonly maintenance: ReadingsMaintenance | undefined
  /**
   * Resolves once a device's parsed readings are durable (group commit: in the store, or in the log), then notes
   * the sighting. Every transport (HTTP, MQTT) acknowledges after this; it throws IngestUnavailable when it cannot.
   */
  accept(device: DeviceInfo, parsed: Parsed): Promise<void>
  /** Writes everything queued (after the server stopped taking requests) and stops background work. */
  drain(): Promise<void>
}

export interface IngestDeps {
  readonly config: Pick<Config, 'ingestBatchSize' | 'ingestFlushMs' | 'ingestMaxQueued' | 'ingestFlushConcurrency' | 'ingestWriteTimeoutMs' | 'ingestLog' | 'readingsRetention'>
  readonly database: Database
  readonly shared: SharedStore
  readonly readings: ReadingsStore
  readonly log: Logger
  readonly metrics: Pick<Metrics, 'ingestFlushReadings' | 'ingestFlushDuration' | 'ingestStoreErrors' | 'ingestLogPublished' | 'ingestLogAppends' | 'ingestLogFailovers' | 'ingestLogWriterBatches' | 'ingestLogLag'>
  /** Told about every batch once it is in the readings store (the alert evaluator). */
  readonly onWritten?: BatcherOptions['onWritten']
  /** The batcher's clock for its recovery pause (epoch ms); tests move it instead of waiting. */
  readonly clock?: () => number
}

/**
 * How far past INGEST_BATCH_SIZE a batch for the readings store grows while every write slot is taken. QuestDB
 * applies each write as one transaction, and a transaction landing among the rows of the ones before it rewrites
 * the partition's tail from there: paced writes of 2,000 rows cost it 3.3 µs of CPU a row, as fast as it can take
 * them 2.2 (bench ingest-questdb, 2026-11-29). At saturation the batches then grow to what the store can take, and
 * at any lower rate they stay as small (and their answers as quick) as INGEST_BATCH_SIZE and INGEST_FLUSH_MS make
 * them. Measured on QuestDB 7.4.2 (`bun run bench ingest-questdb`, three pairs taking turns): the mean write went
 * from 1,950 to 2,340 rows, and readings/s ÷ InfluxDB's from 0.76, 0.83, 0.78 to 0.84, 0.86, 0.88. Not for the
 * ingest log, whose writer makes its own store writes: there, larger publishes stored 4–11% fewer readings in
 * three pairs of `bun run bench ingest-log`.
 */
const STORE_BUSY_GROWTH = 4

export async function createIngest(deps: IngestDeps): Promise<Ingest> {
  const { config } = deps
  // The NATS client is loaded only when the log is configured: the embedded default never holds its modules.
  const log = config.ingestLog ? await (await import('./log/index.ts')).openIngestLog(config.ingestLog, deps.log) : undefined
  const sink = log ? logSink(log, (messages) => deps.metrics.ingestLogPublished.inc([], messages), {
    appended: (lane) => deps.metrics.ingestLogAppends.inc([lane.stream]),
    failedOver: (lane) => deps.metrics.ingestLogFailovers.inc([lane.stream]),
  }) : deps.readings
  const sinkName = log ? 'ingest log' : 'readings store'
  const batcher = new Batcher(sink, {
    sinkName,
    maxBatch: config.ingestBatchSize, flushMs: config.ingestFlushMs, maxQueued: config.ingestMaxQueued,
    maxBatchWhileBusy: log ? undefined : config.ingestBatchSize * STORE_BUSY_GROWTH,
    concurrency: config.ingestFlushConcurrency, writeTimeoutMs: config.ingestWriteTimeoutMs,
    onWriteError: (error, readings) => deps.log.error(`${sinkName} write failed`, { readings, store: log ? 'ingest_log' : deps.readings.kind, error: String(error) }),
    onFlush: (readings, seconds, ok) => {
      deps.metrics.ingestFlushReadings.observe([], readings)
      deps.metrics.ingestFlushDuration.observe([ok ? 'ok' : 'failed'], seconds)
      if (!ok) deps.metrics.ingestStoreErrors.inc()
    },
    // With the log, the writer tells the evaluator once the readings are in the store.
    onWritten: log ? undefined : deps.onWritten,
    now: deps.clock,
  })
  const writer = log && config.ingestLog!.writer
    ? new (await import('./log/writer.ts')).LogWriter(log, deps.readings, { maxReadings: config.ingestLog!.writerBatchSize, flushMs: config.ingestLog!.writerFlushMs, concurrency: config.ingestFlushConcurrency, writeTimeoutMs: config.ingestWriteTimeoutMs, onWritten: deps.onWritten }, deps)
    : undefined
  await writer?.start()
  // The processes that write to the store look after it: without the log every server process, with it the writers.
  const maintenance = !log || writer ? new ReadingsMaintenance(deps.readings, config.readingsRetention, deps.log) : undefined
  maintenance?.start()
  const devices = new DeviceDirectory(deps.database.db, deps.shared)
  await devices.start()
  return {
    batcher, devices, log, writer, maintenance,
    accept(device, parsed) {
      if (!parsed.readings.length) return Promise.resolve(devices.seen(device, parsed.unmapped))
      return batcher.add(parsed.readings).then(() => devices.seen(device, parsed.unmapped))
    },
    async drain() {
      await batcher.drain()
      await maintenance?.stop()
      await writer?.stop()
      await log?.close()
      devices.stop()
      await devices.writeBack()
    },
  }
}
