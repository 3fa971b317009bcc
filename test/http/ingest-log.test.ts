// The durable ingest log (INGEST_LOG, issue 22) against a private nats-server with JetStream: readings are
// acknowledged once the log has them and become visible once this process's writer has stored them; while the
// readings store is down, ingest keeps answering 202 and the backlog drains when it is back; while the log is
// down, ingest answers 503 with Retry-After within 2 s, and nothing it acknowledged is lost.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { IngestLogConfig } from '../../src/config.ts'
import { LogWriter } from '../../ingest/log/writer.ts'
import { sqlStore } from '../../ingest/stores/sql.ts'
import type { ReadingsStore } from '../../ingest/stores/interface.ts'
import { NATS_SERVER, startNats, type NatsDeployment } from '../../bench/lib/nats.ts'
import mqtt from 'mqtt'
import { createTestEnv, problem, waitFor, type TestEnv } from '../helpers.ts'

/** How long the readings store stays down under load (the minute). */
const STORE_DOWN_MS = 60_000

if (!NATS_SERVER) console.warn('ingest-log.test: skipped: no nats-server on this machine (apt-get install nats-server)')

/** The SQL store, with a switch that makes every write fail as an unreachable store would. */
function switchableStore(inner: ReadingsStore) {
  const control = { down: false, writes: 0 }
  const store: ReadingsStore = Object.assign(Object.create(inner), {
    kind: inner.kind,
    async write(readings: Parameters<ReadingsStore['write']>[0]) {
      control.writes++
      if (control.down) throw Object.assign(new Error('connect ECONNREFUSED (test: store down)'), { code: 'ECONNREFUSED' })
      return inner.write(readings)
    },
  })
  return { store, control }
}

describe.skipIf(!NATS_SERVER)('ingest through the log', () => {
  let nats: NatsDeployment
  let env: TestEnv
  let control: { down: boolean; writes: number }
  let token: string
  let device: { id: string; key: string }

  beforeAll(async () => {
    nats = await startNats(1)
    const ingestLog: IngestLogConfig = {
      servers: nats.servers.split(','), stream: 'HRS_TEST', subjectPrefix: 'test.readings', replicas: 1,
      maxAgeSeconds: 3600, maxBytes: 64 * 1024 * 1024, writer: true, writerBatchSize: 20_000, writerFlushMs: 100, ackWaitSeconds: 5, lagBoundSeconds: 5,
    }
    env = await createTestEnv({ ingestLog, deviceRateLimitPerMinute: 1_000_000, host: '127.0.0.1', mqtt: { port: 0, tlsPort: undefined, tlsCertFile: undefined, tlsKeyFile: undefined } }, {
      readings: (database) => { const s = switchableStore(sqlStore(database)); control = s.control; return s.store },
    })
    token = (await env.account({ scopes: ['sensors:write', 'environment:read'] })).token
    device = await (await env.request('POST', '/api/v1/sensors/devices', { token, body: { name: 'Logged', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
  })
  afterAll(async () => {
    await env?.close()
    await nats?.close()
  })

  const post = (readings: { channel: string; value: number; ts: number }[]) =>
    env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings } })
  const stored = async (from: number, to: number): Promise<number[]> => {
    const rows = await env.deps.database.query<{ ts: Date | string }>(
      'select ts from sensor_readings where device_id = $1 and ts >= $2::timestamptz and ts < $3::timestamptz', [device.id, new Date(from).toISOString(), new Date(to).toISOString()])
    return rows.map((r) => new Date(r.ts).getTime()).sort((a, b) => a - b)
  }

  test('a batch is acknowledged by the log and visible once the writer has stored it; readyz and metrics say so', async () => {
    const t0 = Date.now() - 3_600_000
    const response = await post(Array.from({ length: 50 }, (_, i) => ({ channel: 't1', value: i, ts: t0 + i })))
    expect(response.status).toBe(202)
    expect(await response.json()).toEqual({ accepted: 50, rejected: [] })
    const lagMs = await waitFor(async () => (await stored(t0, t0 + 50)).length === 50, 5_000, 10)
    console.log(`ingest-log.test: visible ${Math.round(lagMs)} ms after the acknowledgement`)
    const query = await (await env.request('GET', `/api/v1/environment/readings?device_id=${device.id}&from=${new Date(t0).toISOString()}&to=${new Date(t0 + 50).toISOString()}&limit=100`, { token })).json()
    expect(query.data).toHaveLength(50)
    const ready = await (await env.request('GET', '/readyz')).json()
    expect(ready.checks).toMatchObject({ ingest_log: 'ok', readings_writer: 'ok' })
    const metrics = await (await env.request('GET', '/metrics')).text()
    expect(metrics).toMatch(/^hrs_ingest_log_published_messages_total [1-9]/m)
    expect(metrics).toMatch(/^hrs_ingest_log_writer_batches_total\{outcome="stored"\} [1-9]/m)
    expect(metrics).toMatch(/^hrs_ingest_log_lag_seconds_count [1-9]/m)
    expect(metrics).toMatch(/^hrs_ingest_log_pending_messages 0$/m)
  })

  test('MQTT publishes are acknowledged through the log the same way, and visible once the writer has stored them', async () => {
    const t0 = Date.now() - 3_500_000
    const published = (text: string) => Number(/^hrs_ingest_log_published_messages_total (\d+)/m.exec(text)?.[1] ?? 0)
    const before = published(await (await env.request('GET', '/metrics')).text())
    const client = mqtt.connect(`mqtt://127.0.0.1:${env.mqtt!.port}`, { protocolVersion: 5, username: 'logged', password: device.key, reconnectPeriod: 0 })
    try {
      await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('error', reject) })
      await client.publishAsync(`devices/${device.id}/readings`, JSON.stringify({ readings: Array.from({ length: 30 }, (_, i) => ({ channel: 't1', value: i, ts: t0 + i })) }), { qos: 1 })
      // The PUBACK came after the log stored the batch: its message is counted already.
      expect(published(await (await env.request('GET', '/metrics')).text())).toBeGreaterThan(before)
      await waitFor(async () => (await stored(t0, t0 + 30)).length === 30, 5_000, 10)
    } finally {
      client.end(true)
    }
  })

  test('with the readings store down, ingest keeps answering 202; the backlog drains when it is back, nothing lost or doubled', async () => {
    const t0 = Date.now() - 2 * 3_600_000
    const acknowledged: number[] = []
    let n = 0
    let running = true
    const refused: string[] = []
    const load = (async () => {
      while (running) {
        const readings = Array.from({ length: 20 }, (_, i) => ({ channel: 't1', value: n, ts: t0 + n * 20 + i }))
        n++
        const response = await post(readings)
        if (response.status === 202) acknowledged.push(...readings.map((r) => r.ts))
        else refused.push(`${response.status} ${await response.text()}`)
        await Bun.sleep(5)
      }
    })()
    await waitFor(async () => acknowledged.length >= 200, 5_000, 10)
    control.down = true
    const downAt = acknowledged.length
    // The writer reports the failing store: /status degraded, readiness still 200 (the records API serves).
    await waitFor(async () => (await (await env.request('GET', '/readyz')).json()).checks.readings_writer === 'down', 5_000, 50)
    expect((await (await env.request('GET', '/api/v1/status')).json()).status).toBe('degraded')
    // Down for a minute under load: the devices are still answered 202 (the log has their readings).
    await Bun.sleep(STORE_DOWN_MS)
    expect(acknowledged.length).toBeGreaterThan(downAt + 1_000)
    expect((await stored(t0, t0 + n * 20)).length).toBeLessThan(acknowledged.length)
    control.down = false
    running = false
    await load
    const drainMs = await waitFor(async () => (await stored(t0, t0 + n * 20)).length >= acknowledged.length, 30_000, 50)
    console.log(`ingest-log.test: ${acknowledged.length - downAt} readings acknowledged during ${STORE_DOWN_MS / 1000} s with the store down; backlog drained ${Math.round(drainMs)} ms after it came back`)
    expect(refused).toEqual([])
    const rows = await stored(t0, t0 + n * 20)
    expect(rows).toEqual([...new Set(acknowledged)].sort((a, b) => a - b))
    await waitFor(async () => (await (await env.request('GET', '/readyz')).json()).checks.readings_writer === 'ok', 5_000, 50)
  }, STORE_DOWN_MS + 60_000)

  test('with the log down, ingest answers 503 with Retry-After within 2 s; what it acknowledged is stored', async () => {
    const t0 = Date.now() - 3 * 3_600_000
    expect((await post([{ channel: 't1', value: 1, ts: t0 }])).status).toBe(202)
    await nats.nodes[0]!.kill()
    const started = performance.now()
    const refused = await post([{ channel: 't1', value: 2, ts: t0 + 1 }])
    const ms = performance.now() - started
    await problem(refused, 503, 'service_unavailable')
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(ms).toBeLessThan(2_000)
    await waitFor(async () => (await (await env.request('GET', '/readyz')).json()).checks.ingest_log === 'down', 5_000, 50)
    await nats.nodes[0]!.start()
    // Back: the client reconnects by itself and the log takes readings again.
    await waitFor(async () => (await post([{ channel: 't1', value: 3, ts: t0 + 2 }])).status === 202, 15_000, 200)
    await waitFor(async () => (await stored(t0, t0 + 3)).includes(t0 + 2), 10_000, 50)
    const rows = await stored(t0, t0 + 3)
    expect(rows).toContain(t0)
    expect(rows).toContain(t0 + 2)
  }, 60_000)
})

describe.skipIf(!NATS_SERVER)('what a log acknowledgement survives', () => {
  test('one replica: the NATS server killed (SIGKILL) and started again still holds every batch it acknowledged', async () => {
    const nats = await startNats(1)
    // No writer in this process: the readings stay in the log until one is started after the crash.
    const env = await createTestEnv({ host: '127.0.0.1', deviceRateLimitPerMinute: 1_000_000, ingestLog: {
      servers: nats.servers.split(','), stream: 'HRS_CRASH', subjectPrefix: 'crash.readings', replicas: 1,
      maxAgeSeconds: 3600, maxBytes: 64 * 1024 * 1024, writer: false, writerBatchSize: 20_000, writerFlushMs: 100, ackWaitSeconds: 5, lagBoundSeconds: 5,
    } })
    let writer: LogWriter | undefined
    try {
      const token = (await env.account({ scopes: ['sensors:write'] })).token
      const device = await (await env.request('POST', '/api/v1/sensors/devices', { token, body: { name: 'Crash', channels: [] } })).json()
      const t0 = Date.now() - 3_600_000
      for (let n = 0; n < 20; n++) {
        const readings = Array.from({ length: 100 }, (_, i) => ({ channel: 't1', value: i, ts: t0 + n * 100 + i }))
        const response = await env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings } })
        expect(response.status).toBe(202)
      }
      await nats.nodes[0]!.kill()
      await nats.nodes[0]!.start()
      writer = new LogWriter(env.deps.ingest.log!, env.deps.readings, { maxReadings: 10_000, flushMs: 10, concurrency: 2, writeTimeoutMs: 10_000 }, env.deps)
      // The client reconnects by itself; the writer's consumer then finds the 2,000 readings.
      await waitFor(async () => writer!.start().then(() => true, () => false), 15_000, 200)
      await waitFor(async () => {
        const [row] = await env.deps.database.query<{ n: number | string }>('select count(*) as n from sensor_readings where device_id = $1', [device.id])
        return Number(row!.n) === 2_000
      }, 20_000, 100)
    } finally {
      await writer?.stop().catch(() => {})
      await env.close()
      await nats.close()
    }
  }, 60_000)
})
