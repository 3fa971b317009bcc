// The hot routes (src/http/hot-path.ts) answer exactly as Elysia does: every request below is sent to the server
// (Bun's router → the hot handler) and to a second server on the same app that hands every request to Elysia
// (app.fetch), and the two answers must be the same bytes, but for what differs per request (ids, dates, counts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { RUNTIME_BODY_LIMIT } from '../../src/http/checks/body-limits.ts'
import { createTestEnv, type TestEnv } from '../helpers.ts'

const ORIGIN = 'https://app.example'
let env: TestEnv
let elysiaServer: ReturnType<typeof Bun.serve>
let deviceKey: string
let personalToken: string

beforeAll(async () => {
  env = await createTestEnv({ corsOrigins: [ORIGIN] })
  elysiaServer = Bun.serve({ hostname: '127.0.0.1', port: 0, maxRequestBodySize: RUNTIME_BODY_LIMIT, fetch: (request) => env.app.fetch(request) })
  const owner = await env.account({ scopes: ['sensors:read', 'sensors:write'] })
  personalToken = owner.token
  const created = await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })
  deviceKey = ((await created.json()) as { key: string }).key
})
afterAll(async () => {
  await elysiaServer.stop(true)
  await env.close()
})

/** Values that differ between two requests however alike: the id, the date, the rate limit's count and clock. */
const PER_REQUEST = new Set(['x-request-id', 'date', 'ratelimit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])

async function answer(base: string, method: string, path: string, init: { headers?: Record<string, string>; body?: string }) {
  const response = await fetch(base + path, { method, headers: init.headers, body: init.body })
  const requestId = response.headers.get('x-request-id') ?? ''
  const headers = [...response.headers].map(([name, value]) => PER_REQUEST.has(name) ? [name, '…'] : [name, value])
  const text = await response.text()
  return { status: response.status, headers, body: requestId ? text.replaceAll(requestId, 'req_…') : text }
}

const json = (body: unknown) => ({ headers: { authorization: `Bearer ${deviceKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
const withKey = (init: { headers?: Record<string, string>; body?: string } = {}) => ({ ...init, headers: { authorization: `Bearer ${deviceKey}`, ...init.headers } })
const ts = Date.now() - 60_000
const readings = { readings: Array.from({ length: 10 }, (_, i) => ({ channel: i % 2 ? 't1' : 'x2', value: i, ts: ts + i })) }

const cases: [name: string, method: string, path: () => string, init: () => { headers?: Record<string, string>; body?: string }][] = [
  ['readings: accepted', 'POST', () => '/api/v1/sensors/readings', () => json(readings)],
  // Over 1,024 characters of JSON: gzipped by both (fetch sends Accept-Encoding), with Vary.
  ['readings: many rejected', 'POST', () => '/api/v1/sensors/readings', () => json({ readings: Array.from({ length: 30 }, () => ({ channel: 't1', value: 'warm' })) })],
  ['readings: some rejected', 'POST', () => '/api/v1/sensors/readings', () => json({ readings: [{ channel: 't1', value: 'warm' }, { channel: 'bad channel', value: 1 }, 'x', { channel: 't1', value: 2, ts }] })],
  ['readings: with a CORS origin and a request id', 'POST', () => '/api/v1/sensors/readings', () => ({ ...json(readings), headers: { ...json(readings).headers, origin: ORIGIN, 'x-request-id': 'device-42' } })],
  ['readings: malformed JSON', 'POST', () => '/api/v1/sensors/readings', () => ({ ...json(null), body: '{"readings": [' })],
  ['readings: no body', 'POST', () => '/api/v1/sensors/readings', () => withKey()],
  ['readings: JSON null', 'POST', () => '/api/v1/sensors/readings', () => json(null)],
  ['readings: wrong shape', 'POST', () => '/api/v1/sensors/readings', () => json({ readings: [], extra: 1 })],
  ['readings: too deep', 'POST', () => '/api/v1/sensors/readings', () => ({ ...json(null), body: '{"readings":' + '['.repeat(40) + ']'.repeat(40) + '}' })],
  ['readings: unstorable text', 'POST', () => '/api/v1/sensors/readings', () => ({ ...json(null), body: '{"readings":[{"channel":"t\\u0000","value":1}]}' })],
  ['readings: unstorable query', 'POST', () => '/api/v1/sensors/readings?x=%00', () => json(readings)],
  ['readings: wrong media type', 'POST', () => '/api/v1/sensors/readings', () => withKey({ headers: { 'content-type': 'text/plain' }, body: 'hello' })],
  ['readings: too large', 'POST', () => '/api/v1/sensors/readings', () => json({ readings: ['x'.repeat(1024 * 1024)] })],
  ['readings: no key', 'POST', () => '/api/v1/sensors/readings', () => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify(readings) })],
  ['readings: unknown key', 'POST', () => '/api/v1/sensors/readings', () => ({ ...json(readings), headers: { ...json(readings).headers, authorization: 'Bearer hrs_dev_nope' } })],
  ['readings: a personal token', 'POST', () => '/api/v1/sensors/readings', () => ({ ...json(readings), headers: { ...json(readings).headers, authorization: `Bearer ${personalToken}` } })],
  ['readings: two different keys', 'POST', () => '/api/v1/sensors/readings', () => ({ ...json(readings), headers: { ...json(readings).headers, 'x-api-key': 'hrs_dev_other' } })],
  ['readings: PUT', 'PUT', () => '/api/v1/sensors/readings', () => json(readings)],
  ['ping: GET, key in the query', 'GET', () => `/api/v1/sensors/ping?key=${deviceKey}&t1=27.5&h1=61`, () => ({})],
  ['ping: GET, key in a header, a repeated channel', 'GET', () => '/api/v1/sensors/ping?t1=1&t1=2', () => withKey({ headers: { origin: ORIGIN } })],
  ['ping: GET, a bad value and a bad channel', 'GET', () => `/api/v1/sensors/ping?key=${deviceKey}&t1=warm&bad%20channel=1`, () => ({})],
  ['ping: GET, no channels', 'GET', () => `/api/v1/sensors/ping?key=${deviceKey}`, () => ({})],
  ['ping: GET, a bad ts', 'GET', () => `/api/v1/sensors/ping?key=${deviceKey}&t1=1&ts=yesterday`, () => ({})],
  ['ping: GET, unstorable query', 'GET', () => `/api/v1/sensors/ping?key=${deviceKey}&t1=%00`, () => ({})],
  ['ping: GET, no key', 'GET', () => '/api/v1/sensors/ping?t1=1', () => ({})],
  ['ping: HEAD', 'HEAD', () => `/api/v1/sensors/ping?key=${deviceKey}&t1=1`, () => ({})],
  ['ping: POST form, key in the body', 'POST', () => '/api/v1/sensors/ping', () => ({ headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `key=${deviceKey}&t1=3` })],
  ['ping: POST JSON, key in the body', 'POST', () => '/api/v1/sensors/ping', () => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key: deviceKey, t1: 3, ts }) })],
  ['ping: POST, no body, key and channels in the query', 'POST', () => `/api/v1/sensors/ping?key=${deviceKey}&t1=1`, () => ({})],
  ['ping: POST, no key anywhere', 'POST', () => '/api/v1/sensors/ping', () => ({ headers: { 'content-type': 'application/json' }, body: '{"t1":1}' })],
  ['ping: POST, a wrong key in the body', 'POST', () => '/api/v1/sensors/ping', () => ({ headers: { 'content-type': 'application/json' }, body: '{"key":"hrs_dev_nope","t1":1}' })],
  ['ping: POST, a body of the wrong shape', 'POST', () => '/api/v1/sensors/ping', () => withKey({ headers: { 'content-type': 'application/json' }, body: '{"t1":{"x":1}}' })],
  ['ping: POST, a JSON array', 'POST', () => '/api/v1/sensors/ping', () => withKey({ headers: { 'content-type': 'application/json' }, body: '[1,2]' })],
  ['ping: POST, malformed JSON', 'POST', () => '/api/v1/sensors/ping', () => withKey({ headers: { 'content-type': 'application/json' }, body: '{"t1":' })],
  ['ping: POST form, a bad value', 'POST', () => '/api/v1/sensors/ping', () => withKey({ headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 't1=warm' })],
  ['ping: OPTIONS preflight', 'OPTIONS', () => '/api/v1/sensors/ping', () => ({ headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } })],
  ['ping: DELETE', 'DELETE', () => '/api/v1/sensors/ping', () => withKey()],
]

describe('the hot routes answer as Elysia does', () => {
  for (const [name, method, path, init] of cases) {
    test(name, async () => {
      const hot = await answer(env.baseUrl, method, path(), init())
      const elysia = await answer(`http://127.0.0.1:${elysiaServer.port}`, method, path(), init())
      expect(hot).toEqual(elysia)
    })
  }

  test('the hot routes count every answer under their route, refusals by the pipeline too', async () => {
    const text = await env.deps.metrics.registry.render()
    expect(text).toContain('hrs_http_requests_total{method="POST",route="/api/v1/sensors/readings",status="202"}')
    expect(text).toContain('hrs_http_requests_total{method="GET",route="/api/v1/sensors/ping",status="204"}')
    // Elysia counts a request its onRequest hook refused as "unmatched"; the hot route knows which route it is.
    expect(text).toContain('hrs_http_requests_total{method="POST",route="/api/v1/sensors/readings",status="401"}')
  })
})
