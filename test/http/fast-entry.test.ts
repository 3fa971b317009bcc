// The two ingest routes are served by the fast entry (src/http/fast-entry.ts) when a request arrives over the
// network, and by Elysia through app.handle(): both must answer alike, valid or not. Each case is sent both ways;
// status, headers and body must match, up to what differs per request (the request id, the date, the rate-limit
// count).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { MAX_BODY_BYTES } from '../../src/http/checks/body-limits.ts'
import { createTestEnv, waitFor, type TestEnv } from '../helpers.ts'

let env: TestEnv
let owner: { token: string }
let device: { id: string; key: string }
beforeAll(async () => {
  env = await createTestEnv()
  owner = await env.account({ scopes: ['sensors:read', 'sensors:write'] })
  const res = await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })
  device = await res.json()
})
afterAll(async () => { await env.close() })

// Content-Length is added on the wire (app.handle's Response has none; the same response sent by Elysia over the
// network gets one too).
const PER_REQUEST = new Set(['content-length', 'date', 'x-request-id', 'ratelimit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])

interface Answer { status: number; headers: Record<string, string>; body: unknown }

async function answer(response: Response): Promise<Answer> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => { if (!PER_REQUEST.has(name)) headers[name] = value })
  const text = await response.text()
  let body: unknown = text
  if (text) {
    const parsed = JSON.parse(text)
    // The problem's request id is the response's own X-Request-Id, which differs per request.
    if (parsed.request_id !== undefined) {
      expect(parsed.request_id).toBe(response.headers.get('x-request-id'))
      parsed.request_id = '(this request)'
    }
    body = parsed
  }
  expect(response.headers.get('x-request-id')).toMatch(/^req_/)
  return { status: response.status, headers, body }
}

/** The same request over the network (fast entry) and through app.handle (Elysia); returns both answers. */
async function bothWays(method: string, path: string, init: { headers?: Record<string, string>; body?: string } = {}): Promise<[Answer, Answer]> {
  // A Request made here has no Content-Length of its own; the wire always has one (the pipeline's 415 and 413 need it).
  const headers = init.body === undefined ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) }
  const request = () => new Request(env.baseUrl + path, { method, headers, body: init.body })
  const fast = await answer(await fetch(request()))
  const elysia = await answer(await env.app.handle(request()))
  return [fast, elysia]
}

const json = (key: string | undefined, body: unknown): { headers: Record<string, string>; body: string } => ({
  headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
  body: typeof body === 'string' ? body : JSON.stringify(body),
})

describe('POST /sensors/readings answers alike through the fast entry and through Elysia', () => {
  const now = Date.now()
  const cases: [string, () => { headers?: Record<string, string>; body?: string }, number][] = [
    ['a valid batch', () => json(device.key, { readings: [{ channel: 't1', value: 27.5, ts: now - 60_000 }, { channel: 'x9', value: 1, ts: now - 60_000 }] }), 202],
    ['a batch with rejected readings', () => json(device.key, { readings: [{ channel: 't1', value: 'warm' }, { channel: 'bad channel', value: 1 }, 'x', { channel: 't1', value: 1, ts: 'yesterday' }] }), 202],
    ['an empty body', () => ({ headers: { authorization: `Bearer ${device.key}`, 'content-type': 'application/json' } }), 422],
    ['no readings field', () => json(device.key, {}), 422],
    ['an empty batch', () => json(device.key, { readings: [] }), 422],
    ['readings that are not an array', () => json(device.key, { readings: 'x' }), 422],
    ['an extra field', () => json(device.key, { readings: [{ channel: 't1', value: 1 }], extra: 1 }), 422],
    ['a batch over the limit', () => json(device.key, { readings: Array.from({ length: 5001 }, (_, i) => ({ channel: 't1', value: i, ts: now - i })) }), 422],
    ['a JSON array body', () => json(device.key, [1, 2]), 422],
    ['malformed JSON', () => json(device.key, '{"readings": ['), 400],
    ['nesting too deep', () => json(device.key, '['.repeat(40) + ']'.repeat(40)), 422],
    ['a lone surrogate', () => json(device.key, '{"readings":[{"channel":"\\ud800","value":1}]}'), 422],
    ['a body over the size limit', () => json(device.key, { readings: [{ channel: 't1', value: 1, pad: 'x'.repeat(MAX_BODY_BYTES) }] }), 413],
    ['a text/plain body', () => ({ headers: { authorization: `Bearer ${device.key}`, 'content-type': 'text/plain' }, body: '{"readings":[]}' }), 415],
    ['a form body', () => ({ headers: { authorization: `Bearer ${device.key}`, 'content-type': 'application/x-www-form-urlencoded' }, body: 'readings=1' }), 415],
    ['no key', () => json(undefined, { readings: [{ channel: 't1', value: 1 }] }), 401],
    ['an unknown key', () => json('hrs_live_nope', { readings: [{ channel: 't1', value: 1 }] }), 401],
    ['a personal key', () => json(owner.token, { readings: [{ channel: 't1', value: 1 }] }), 403],
  ]
  for (const [name, init, status] of cases) {
    test(name, async () => {
      const [fast, elysia] = await bothWays('POST', '/api/v1/sensors/readings', init())
      expect(fast.status).toBe(status)
      expect(fast).toEqual(elysia)
    })
  }
})

describe('GET /sensors/ping answers alike through the fast entry and through Elysia', () => {
  const cases: [string, () => string, number, (() => Record<string, string>)?][] = [
    ['a valid ping', () => `?key=${device.key}&t1=27.5&h1=61`, 204],
    ['a ping with its own ts', () => `?key=${device.key}&t1=27.5&ts=${Date.now() - 1000}`, 204],
    ['the key in the header', () => '?t1=27.5', 204, () => ({ authorization: `Bearer ${device.key}` })],
    ['a bad value and a good one', () => `?key=${device.key}&t1=warm&h1=61`, 422],
    ['no channel', () => `?key=${device.key}`, 422],
    ['only bad values', () => `?key=${device.key}&t1=warm`, 422],
    ['a bad ts', () => `?key=${device.key}&t1=1&ts=yesterday`, 422],
    ['a repeated channel', () => `?key=${device.key}&t1=1&t1=2`, 0],
    ['too many channels', () => `?key=${device.key}&${Array.from({ length: 40 }, (_, i) => `c${i}=1`).join('&')}`, 0],
    ['an encoded NUL', () => `?key=${device.key}&t1=1&x%00=2`, 0],
    ['no key', () => '?t1=27.5', 401],
    ['an unknown key', () => '?key=hrs_live_nope&t1=27.5', 401],
    ['a personal key', () => `?key=${owner.token}&t1=27.5`, 403],
  ]
  for (const [name, query, status, headers] of cases) {
    test(name, async () => {
      const [fast, elysia] = await bothWays('GET', `/api/v1/sensors/ping${query()}`, { headers: headers?.() })
      if (status) expect(fast.status).toBe(status)
      else expect(fast.status).toBeGreaterThanOrEqual(200)
      expect(fast).toEqual(elysia)
    })
  }
})

test('both ways count the request under the same route in the metrics', async () => {
  const count = async () => (await env.deps.metrics.registry.render()).match(/hrs_http_requests_total\{method="GET",route="\/api\/v1\/sensors\/ping",status="204"\} (\d+)/)?.[1]
  const before = Number((await count()) ?? 0)
  await bothWays('GET', `/api/v1/sensors/ping?key=${device.key}&t1=1`)
  // Elysia records after its response has gone out.
  await waitFor(async () => Number(await count()) === before + 2, 2000)
})
