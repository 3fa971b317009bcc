// The ingest log as several lanes (INGEST_LOG_LANES, issue 60) on one private nats-server: appends are spread over
// the lanes and the writer stores from every one; a lane that stops answering (here its stream is deleted: every
// append to it fails) costs no acknowledgement, the others take its appends, /metrics counts the failovers and
// /readyz stays ready; and a batch in the log twice (in two lanes: an append that timed out and was stored after
// all, then made to another lane) is stored once. The cluster's leader losses are test/processes/ingest-log-cluster.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { IngestLogConfig } from '../../src/config.ts'
import { encodeBatch } from '../../ingest/log/codec.ts'
import { NATS_SERVER, startNats, type NatsDeployment } from '../../bench/lib/nats.ts'
import { createTestEnv, waitFor, type TestEnv } from '../helpers.ts'

if (!NATS_SERVER) console.warn('ingest-log-lanes.test: skipped: no nats-server on this machine (apt-get install nats-server)')

describe.skipIf(!NATS_SERVER)('the ingest log in lanes', () => {
  let nats: NatsDeployment
  let env: TestEnv
  let token: string
  let device: { id: string; key: string }
  let accountId: string

  beforeAll(async () => {
    nats = await startNats(1)
    const ingestLog: IngestLogConfig = {
      servers: nats.servers.split(','), stream: 'HRS_LANES', subjectPrefix: 'lanes.readings', replicas: 1,
      maxAgeSeconds: 3600, maxBytes: 64 * 1024 * 1024, writer: true, writerBatchSize: 20_000, writerFlushMs: 100, ackWaitSeconds: 5, lagBoundSeconds: 5,
      lanes: 3, laneTimeoutMs: 300,
    }
    env = await createTestEnv({ ingestLog, deviceRateLimitPerMinute: 1_000_000, host: '127.0.0.1' })
    const account = await env.account({ scopes: ['sensors:write', 'environment:read'] })
    token = account.token
    accountId = account.accountId
    device = await (await env.request('POST', '/api/v1/sensors/devices', { token, body: { name: 'Laned', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
  })
  afterAll(async () => {
    await env?.close()
    await nats?.close()
  })

  const post = (readings: { channel: string; value: number; ts: number }[]) =>
    env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings } })
  const stored = async (from: number, to: number): Promise<{ all: number; distinct: number }> => {
    const rows = await env.deps.database.query<{ ts: Date | string }>(
      'select ts from sensor_readings where device_id = $1 and ts >= $2::timestamptz and ts < $3::timestamptz', [device.id, new Date(from).toISOString(), new Date(to).toISOString()])
    return { all: rows.length, distinct: new Set(rows.map((r) => new Date(r.ts).getTime())).size }
  }
  const metric = (text: string, name: string, lane: string) => Number(new RegExp(`^${name}\\{lane="${lane}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0)

  test('appends go to every lane in turn and the writer stores them all', async () => {
    const streams = (await Array.fromAsync(env.deps.ingest.log!.jsm.streams.list())).map((s) => s.config.name).sort()
    expect(streams).toEqual(['HRS_LANES', 'HRS_LANES_1', 'HRS_LANES_2'])
    const t0 = Date.now() - 3_600_000
    // One after another: each batch is its own group commit, so its own append.
    for (let n = 0; n < 9; n++) expect((await post(Array.from({ length: 10 }, (_, i) => ({ channel: 't1', value: i, ts: t0 + n * 10 + i })))).status).toBe(202)
    await waitFor(async () => (await stored(t0, t0 + 90)).distinct === 90, 5_000, 10)
    const metrics = await (await env.request('GET', '/metrics')).text()
    for (const lane of ['HRS_LANES', 'HRS_LANES_1', 'HRS_LANES_2']) {
      expect(metric(metrics, 'hrs_ingest_log_appends_total', lane)).toBeGreaterThan(0)
      expect(metric(metrics, 'hrs_ingest_log_lane_up', lane)).toBe(1)
    }
    expect(metrics).toMatch(/^hrs_ingest_log_pending_messages 0$/m)
  })

  test('a batch in two lanes is stored once', async () => {
    const t0 = Date.now() - 3_500_000
    const readings = Array.from({ length: 40 }, (_, i) => ({ accountId, deviceId: device.id, channel: 't1', ts: t0 + i, value: i, metric: 'temperature', environmentId: null }))
    const [message] = encodeBatch(readings, 'unused')
    const { lanes } = env.deps.ingest.log!
    // As the producer makes a timed-out append again elsewhere: the same message, acknowledged by two lanes.
    for (const lane of [lanes[0]!, lanes[1]!]) await lane.js.publish(`${lane.subjectPrefix}.${accountId}`, message!.data)
    await waitFor(async () => (await stored(t0, t0 + 40)).distinct === 40, 5_000, 10)
    // Both messages are taken from the log: the second's readings were dropped by the store, not left behind.
    await waitFor(async () => /^hrs_ingest_log_pending_messages 0$/m.test(await (await env.request('GET', '/metrics')).text()), 5_000, 20)
    expect(await stored(t0, t0 + 40)).toEqual({ all: 40, distinct: 40 })
  })

  test('a lane that fails every append: the others take them, no batch refused, failovers counted, still ready', async () => {
    const log = env.deps.ingest.log!
    await log.jsm.streams.delete('HRS_LANES_1')
    const t0 = Date.now() - 3_400_000
    const waits: number[] = []
    for (let n = 0; n < 12; n++) {
      const started = performance.now()
      const response = await post(Array.from({ length: 10 }, (_, i) => ({ channel: 't1', value: i, ts: t0 + n * 10 + i })))
      waits.push(performance.now() - started)
      expect(response.status).toBe(202)
    }
    await waitFor(async () => (await stored(t0, t0 + 120)).distinct === 120, 5_000, 10)
    // A failed-over message goes to both other lanes at once: in the log twice, stored once.
    expect(await stored(t0, t0 + 120)).toEqual({ all: 120, distinct: 120 })
    const metrics = await (await env.request('GET', '/metrics')).text()
    console.log(`ingest-log-lanes.test: with one lane gone, 12 batches acknowledged, longest wait ${Math.round(Math.max(...waits))} ms; failovers from it ${metric(metrics, 'hrs_ingest_log_failovers_total', 'HRS_LANES_1')}`)
    expect(metric(metrics, 'hrs_ingest_log_failovers_total', 'HRS_LANES_1')).toBeGreaterThan(0)
    expect(metric(metrics, 'hrs_ingest_log_lane_up', 'HRS_LANES_1')).toBe(0)
    expect(metric(metrics, 'hrs_ingest_log_lane_up', 'HRS_LANES')).toBe(1)
    const ready = await env.request('GET', '/readyz')
    expect(ready.status).toBe(200)
    expect((await ready.json()).checks.ingest_log).toBe('ok')
  })
})
