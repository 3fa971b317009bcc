// The ingest log writer's store writes (INGEST_LOG_WRITER_BATCH_SIZE, INGEST_LOG_WRITER_FLUSH_MS): their own
// settings, larger than the direct path's group commit, since no device waits for them.
import { expect, test } from 'bun:test'
import { loadConfig } from '../../src/config.ts'

const base = { INGEST_LOG: 'nats://127.0.0.1:4222' }

test('the writer gathers 20,000 readings for up to 100 ms unless told otherwise', () => {
  const config = loadConfig(base)
  expect(config.ingestLog).toMatchObject({ writerBatchSize: 20_000, writerFlushMs: 100 })
  // The direct path keeps its own, smaller group commit: devices wait for it.
  expect(config.ingestBatchSize).toBeLessThan(config.ingestLog!.writerBatchSize)
})

test('the writer settings are read from the environment, and nonsense is refused at the start', () => {
  expect(loadConfig({ ...base, INGEST_LOG_WRITER_BATCH_SIZE: '5000', INGEST_LOG_WRITER_FLUSH_MS: '0' }).ingestLog)
    .toMatchObject({ writerBatchSize: 5000, writerFlushMs: 0 })
  expect(() => loadConfig({ ...base, INGEST_LOG_WRITER_BATCH_SIZE: '0' })).toThrow('INGEST_LOG_WRITER_BATCH_SIZE must be an integer ≥ 1')
  expect(() => loadConfig({ ...base, INGEST_LOG_WRITER_FLUSH_MS: 'soon' })).toThrow('INGEST_LOG_WRITER_FLUSH_MS must be an integer ≥ 0')
})

test('one lane and a 300 ms lane deadline unless told otherwise; nonsense is refused at the start', () => {
  expect(loadConfig(base).ingestLog).toMatchObject({ lanes: 1, laneTimeoutMs: 300 })
  expect(loadConfig({ ...base, INGEST_LOG_LANES: '3', INGEST_LOG_LANE_TIMEOUT_MS: '250' }).ingestLog).toMatchObject({ lanes: 3, laneTimeoutMs: 250 })
  expect(() => loadConfig({ ...base, INGEST_LOG_LANES: '0' })).toThrow('INGEST_LOG_LANES must be an integer ≥ 1')
  expect(() => loadConfig({ ...base, INGEST_LOG_LANE_TIMEOUT_MS: '5' })).toThrow('INGEST_LOG_LANE_TIMEOUT_MS must be an integer ≥ 10')
})
