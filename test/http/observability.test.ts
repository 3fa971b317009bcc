// Operability: an access-log line per request (never the key), and GET /metrics in the Prometheus text format,
// open on a loopback HOST and behind METRICS_TOKEN elsewhere.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createLogger } from '../../src/log.ts'
import { createTestEnv, problem, waitFor, type TestEnv } from '../helpers.ts'

describe('access log and metrics on a loopback HOST', () => {
  let env: TestEnv
  const lines: Record<string, any>[] = []
  beforeAll(async () => {
    const log = createLogger('info', (text) => { for (const line of text.trim().split('\n')) lines.push(JSON.parse(line)) })
    env = await createTestEnv({ host: '127.0.0.1', logLevel: 'info' }, { log })
  })
  afterAll(async () => { await env.close() })

  test('every request leaves one JSON line: request id, method, route template, status, duration, key id; never the key', async () => {
    const key = await env.account({ scopes: ['animals:read', 'sensors:write'] })
    const me = await env.request('GET', '/api/v1/me', { token: key.token })
    const missing = await env.request('GET', '/api/v1/animals/anm_01jd0000000000000000000000', { token: key.token })
    const device = await (await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
    expect(device.key).toBeString()
    const denied = await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { name: '' } })
    const ping = await env.request('GET', `/api/v1/sensors/ping?key=${device.key}&t1=21.5`)
    expect([me.status, missing.status, ping.status]).toEqual([200, 404, 204])
    await env.deps.log.flush()
    await waitFor(async () => { await env.deps.log.flush(); return lines.filter((l) => l.message === 'request').length >= 5 }, 2_000)
    const byId = (response: Response) => lines.find((l) => l.message === 'request' && l.request_id === response.headers.get('x-request-id'))
    expect(byId(me)).toMatchObject({ level: 'info', method: 'GET', route: '/api/v1/me', status: 200, key_id: key.keyId, duration_ms: expect.any(Number) })
    expect(byId(missing)).toMatchObject({ method: 'GET', route: '/api/v1/animals/:id', status: 404, key_id: key.keyId })
    expect(byId(denied)).toMatchObject({ method: 'POST', route: '/api/v1/sensors/devices', status: 422 })
    expect(byId(ping)).toMatchObject({ method: 'GET', route: '/api/v1/sensors/ping', status: 204, key_id: expect.stringMatching(/^key_/) })
    const everything = JSON.stringify(lines)
    expect(everything).not.toContain(key.token)
    expect(everything).not.toContain(device.key)
  })

  test('GET /metrics: request counts by route template and status, latency histograms, ingest, webhooks and backends', async () => {
    const key = await env.account({ scopes: ['animals:read', 'sensors:write'] })
    await env.request('GET', '/api/v1/me', { token: key.token })
    const device = await (await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
    const readings = Array.from({ length: 7 }, (_, i) => ({ channel: 't1', value: i, ts: Date.now() - 10_000 + i }))
    expect((await env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings } })).status).toBe(202)
    const response = await env.request('GET', '/metrics')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith('text/plain; version=0.0.4')
    const text = await response.text()
    const value = (series: string) => Number(text.split('\n').find((line) => line.startsWith(series + ' '))?.slice(series.length + 1))
    expect(value('hrs_http_requests_total{method="GET",route="/api/v1/me",status="200"}')).toBeGreaterThanOrEqual(1)
    expect(value('hrs_http_requests_total{method="POST",route="/api/v1/sensors/readings",status="202"}')).toBe(1)
    expect(value('hrs_http_request_duration_seconds_count{method="GET",route="/api/v1/me"}')).toBeGreaterThanOrEqual(1)
    expect(value('hrs_ingest_flush_readings_sum')).toBeGreaterThanOrEqual(7)
    expect(value('hrs_ingest_flush_duration_seconds_count{outcome="ok"}')).toBeGreaterThanOrEqual(1)
    expect(value('hrs_ingest_queued_readings')).toBe(0)
    expect(value('hrs_webhook_backlog')).toBeGreaterThanOrEqual(0)
    expect(text).toMatch(/^hrs_backend_up\{backend="(pglite|postgres)"\} 1$/m)
    expect(text).toContain('# TYPE hrs_http_request_duration_seconds histogram')
  })

  test('GET /metrics: pending rollup marks and the age of the oldest, by store table', async () => {
    // Marks as a QuestDB store's writes leave them (ingest/stores/questdb-rollups.ts): two for one table, the older
    // last written 90 s ago; none for a table that has none.
    await env.deps.database.query(`insert into reading_rollup_marks (store, minute, marked_at) values
      ('hrs_metrics_probe', '2026-01-01T00:00:00Z', now() - interval '90 seconds'), ('hrs_metrics_probe', '2026-01-01T00:01:00Z', now())`)
    const text = await (await env.request('GET', '/metrics')).text()
    const value = (series: string) => Number(text.split('\n').find((line) => line.startsWith(series + ' '))?.slice(series.length + 1))
    expect(value('hrs_rollup_marks_pending{store="hrs_metrics_probe"}')).toBe(2)
    const age = value('hrs_rollup_marks_oldest_age_seconds{store="hrs_metrics_probe"}')
    expect(age).toBeGreaterThanOrEqual(90)
    expect(age).toBeLessThan(600)
    expect(text).toContain('# TYPE hrs_rollup_marks_pending gauge')
    await env.deps.database.query(`delete from reading_rollup_marks where store = 'hrs_metrics_probe'`)
    expect(await (await env.request('GET', '/metrics')).text()).not.toContain('hrs_metrics_probe')
  })
})

describe('GET /metrics on a public HOST', () => {
  test('without METRICS_TOKEN it is not served; with one it needs the token', async () => {
    const closed = await createTestEnv({ host: '0.0.0.0' })
    const guarded = await createTestEnv({ host: '0.0.0.0', metricsToken: 'scrape-secret' })
    try {
      await problem(await closed.request('GET', '/metrics'), 404, 'not_found')
      await problem(await guarded.request('GET', '/metrics'), 401, 'authentication_required')
      await problem(await guarded.request('GET', '/metrics', { token: 'wrong' }), 401, 'authentication_required')
      const ok = await guarded.request('GET', '/metrics', { token: 'scrape-secret' })
      expect(ok.status).toBe(200)
      expect(await ok.text()).toContain('hrs_http_requests_total')
    } finally {
      await closed.close()
      await guarded.close()
    }
  })
})
