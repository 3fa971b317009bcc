// Edges a newcomer and a hostile client hit (issue 32): HEAD on every GET resource, integers in query strings
// written only as decimal digits, ping values only as JSON numbers, and impossible calendar days and times refused
// (over HTTP and MQTT, which share ingest/parse.ts) instead of being moved to the next valid instant.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { eq } from 'drizzle-orm'
import mqtt from 'mqtt'
import { sensorReadings } from '../../db/schema/index.ts'
import { ALL_SCOPES } from '../../src/auth/scopes.ts'
import { createTestEnv, problem, waitFor, type TestEnv } from '../helpers.ts'

type Schema = Record<string, any>
let env: TestEnv
let token: string
let doc: Schema

beforeAll(async () => {
  env = await createTestEnv({ host: '127.0.0.1', mqtt: { port: 0, tlsPort: undefined, tlsCertFile: undefined, tlsKeyFile: undefined } })
  token = (await env.account({ scopes: ALL_SCOPES })).token
  doc = await (await env.request('GET', '/api/v1/openapi.json')).json()
})
afterAll(async () => { await env.close() })

interface Device { id: string; key: string }
async function device(): Promise<Device> {
  const res = await env.request('POST', '/api/v1/sensors/devices', { token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })
  expect(res.status).toBe(201)
  return res.json()
}
const stored = (deviceId: string) => env.deps.database.db.select().from(sensorReadings).where(eq(sensorReadings.device_id, deviceId))

/** The headers a client compares between GET and HEAD (Date and the request id differ by nature). */
function comparable(response: Response): Record<string, string> {
  const headers = Object.fromEntries(response.headers)
  for (const name of ['date', 'x-request-id', 'set-cookie', 'ratelimit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) delete headers[name]
  return headers
}

describe('HEAD', () => {
  test('answers every GET resource with the GET\'s status and headers (ETag, RateLimit, Content-Type) and no body', async () => {
    const animal = await (await env.request('POST', '/api/v1/animals', { token, body: { name: 'Headed', species_id: 'python-regius' } })).json()
    const paths = ['/api/v1/animals', `/api/v1/animals/${animal.id}`, '/api/v1/me', '/api/v1/status', '/api/v1/openapi.json', '/api/v1/nope', `/api/v1/animals/anm_01jd8x3m5v6w7y8z9a0b1c2d3e`, '/healthz', '/console/sign-in']
    for (const path of paths) {
      const get = await env.request('GET', path, { token })
      const getBody = await get.arrayBuffer()
      const head = await env.request('HEAD', path, { token })
      expect({ path, status: head.status, body: (await head.arrayBuffer()).byteLength }).toEqual({ path, status: get.status, body: 0 })
      expect({ path, headers: comparable(head) }).toEqual({ path, headers: comparable(get) })
      // The length of the body a GET would have sent (or none: RFC 9110 §9.3.2 allows either). fetch inflates a gzipped
      // body; its Content-Length, the compressed length, was compared with the GET's among the headers above.
      const length = head.headers.get('content-length')
      if (length !== null && get.status !== 404 && !get.headers.get('content-encoding')) expect(Number(length)).toBe(getBody.byteLength)
    }
    const head = await env.request('HEAD', `/api/v1/animals/${animal.id}`, { token })
    expect(head.headers.get('etag')).toBe('"v1"')
    expect(head.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/)
    expect(head.headers.get('content-type')).toStartWith('application/json')
    // A conditional HEAD is answered like a conditional GET.
    expect((await env.request('HEAD', `/api/v1/animals/${animal.id}`, { token, headers: { 'if-none-match': '"v1"' } })).status).toBe(304)
    // Without a key: the GET's 401 problem, headers only.
    const anonymous = await env.request('HEAD', '/api/v1/animals')
    expect([anonymous.status, anonymous.headers.get('content-type'), (await anonymous.text()).length]).toEqual([401, 'application/problem+json', 0])
  })

  test('a 405\'s Allow names HEAD wherever GET is served', async () => {
    const refused = await env.request('PUT', '/api/v1/animals', { token })
    expect(refused.status).toBe(405)
    expect(refused.headers.get('allow')).toBe('GET, HEAD, POST')
  })
})

describe('integers in query strings', () => {
  const LOOSE = ['0x10', '1e2', '+5', ' 5', '5.0', '5 ', '0b11', '']

  test('every integer query parameter of the published document takes decimal digits only, naming the parameter', async () => {
    let checked = 0
    for (const [path, methods] of Object.entries<Schema>(doc.paths)) {
      if (path.includes('{')) continue
      for (const [method, operation] of Object.entries<Schema>(methods)) {
        for (const parameter of (operation.parameters ?? []) as Schema[]) {
          if (parameter.in !== 'query' || parameter.schema?.type !== 'integer') continue
          for (const value of LOOSE) {
            const response = await env.request(method.toUpperCase(), `${path}?${parameter.name}=${encodeURIComponent(value)}`, { token })
            const body = await problem(response, 400, 'invalid_parameter')
            expect({ path, value, errors: body.errors.map((e: { path: string }) => e.path) }).toEqual({ path, value, errors: [`/query/${parameter.name}`] })
            checked++
          }
        }
      }
    }
    // `limit` on every list, the readings' limit, the clutches' season.
    expect(checked).toBeGreaterThanOrEqual(LOOSE.length * 15)
  })

  test('decimal digits are still taken, and the schema still checks the bounds', async () => {
    expect((await env.request('GET', '/api/v1/animals?limit=5', { token })).status).toBe(200)
    expect((await env.request('GET', '/api/v1/animals?limit=%35', { token })).status).toBe(200)
    const body = await problem(await env.request('GET', '/api/v1/animals?limit=0', { token }), 400, 'invalid_parameter')
    expect(body.errors.map((e: { path: string }) => e.path)).toEqual(['/query/limit'])
  })
})

describe('ping values', () => {
  test('are numbers as JSON writes them: 0x10, 0b11, +5, .5, Infinity are refused and nothing is stored', async () => {
    const sensor = await device()
    for (const value of ['0x10', '0b11', '0o7', '+5', '.5', '5.', 'Infinity', ' 5', '1_000']) {
      const refused = await problem(await env.request('GET', `/api/v1/sensors/ping?key=${sensor.key}&t1=${encodeURIComponent(value)}`), 422, 'validation_failed')
      expect({ value, errors: refused.errors.map((e: { path: string }) => e.path) }).toEqual({ value, errors: ['/query/t1'] })
    }
    expect(await stored(sensor.id)).toEqual([])
    for (const value of ['27.5', '-3', '0', '1e2', '2.5E-1']) {
      expect({ value, status: (await env.request('GET', `/api/v1/sensors/ping?key=${sensor.key}&t1=${value}&ts=${Date.now() - 60_000 - Math.round(Number(value) * 10)}`)).status }).toEqual({ value, status: 204 })
    }
    expect((await stored(sensor.id)).map((r) => r.value).sort((a, b) => a - b)).toEqual([-3, 0, 0.25, 27.5, 100])
  })
})

describe('impossible calendar days and times', () => {
  const IMPOSSIBLE = ['2025-02-30T00:00:00Z', '2025-04-31T12:00:00Z', '2025-02-29T00:00:00Z', '2025-01-01T24:00:00Z', '2025-01-01T23:60:00Z', '2025-01-01T23:59:61Z', '2025-01-01T12:00:00+24:00', '2025-13-01T00:00:00Z']

  test('a reading\'s ts over HTTP is rejected, not moved', async () => {
    const sensor = await device()
    const res = await env.request('POST', '/api/v1/sensors/readings', { token: sensor.key, body: { readings: IMPOSSIBLE.map((ts, i) => ({ channel: 't1', value: i, ts })) } })
    expect(res.status).toBe(202)
    const body = await res.json()
    expect(body.accepted).toBe(0)
    expect(body.rejected.map((r: { code: string }) => r.code)).toEqual(IMPOSSIBLE.map(() => 'invalid_timestamp'))
    expect(await stored(sensor.id)).toEqual([])
    // A real leap day is taken.
    const leap = await (await env.request('POST', '/api/v1/sensors/readings', { token: sensor.key, body: { readings: [{ channel: 't1', value: 1, ts: '2024-02-29T23:59:59Z' }] } })).json()
    expect(leap).toMatchObject({ accepted: 1, rejected: [] })
  })

  test('a ping\'s ts is refused with a 422 naming it', async () => {
    const sensor = await device()
    for (const ts of IMPOSSIBLE) {
      const refused = await problem(await env.request('POST', '/api/v1/sensors/ping', { body: { key: sensor.key, t1: 1, ts } }), 422, 'validation_failed')
      expect({ ts, errors: refused.errors.map((e: { path: string }) => e.path) }).toEqual({ ts, errors: ['/body/ts'] })
    }
    expect(await stored(sensor.id)).toEqual([])
  })

  test('a reading\'s ts over MQTT is rejected on the errors topic, not moved', async () => {
    const sensor = await device()
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${env.mqtt!.port}`, { username: 'firmware', password: sensor.key, reconnectPeriod: 0 })
    try {
      await client.subscribeAsync(`devices/${sensor.id}/errors`, { qos: 1 })
      const report = new Promise<any>((resolve) => client.on('message', (_topic, payload) => resolve(JSON.parse(payload.toString()))))
      await client.publishAsync(`devices/${sensor.id}/readings`, JSON.stringify({ readings: IMPOSSIBLE.map((ts, i) => ({ channel: 't1', value: i, ts })) }), { qos: 1 })
      const payload = await report
      expect(payload).toMatchObject({ code: 'rejected_readings', accepted: 0 })
      expect(payload.rejected.map((r: { code: string }) => r.code)).toEqual(IMPOSSIBLE.map(() => 'invalid_timestamp'))
      await client.publishAsync(`devices/${sensor.id}/readings`, JSON.stringify({ readings: [{ channel: 't1', value: 7, ts: '2024-02-29T12:00:00Z' }] }), { qos: 1 })
      await waitFor(async () => (await stored(sensor.id)).length === 1, 5_000)
      expect((await stored(sensor.id)).map((r) => r.value)).toEqual([7])
    } finally {
      await client.endAsync(true)
    }
  })
})

/** Sends `text` as written on a fresh connection; resolves with what came back once the server closes or 5 s pass. */
function raw(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(env.baseUrl).port), '127.0.0.1', () => socket.write(text))
    let data = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk) => { data += chunk })
    socket.on('error', reject)
    socket.on('close', () => resolve(data))
    setTimeout(() => { socket.destroy(); resolve(data) }, 5_000)
  })
}

describe('bodies over the limit', () => {
  test('a Content-Length of 2 GB is our 413 problem (not the runtime\'s empty one), and the connection closes', async () => {
    const answer = await raw(`POST /api/v1/animals HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 2000000000\r\n\r\n{`)
    const [head = '', body = ''] = answer.split('\r\n\r\n')
    expect(head).toStartWith('HTTP/1.1 413')
    expect(head.toLowerCase()).toContain('content-type: application/problem+json')
    expect(head.toLowerCase()).toContain('connection: close')
    expect(JSON.parse(body)).toMatchObject({ code: 'payload_too_large', status: 413 })
  })

  test('20 MB sent at full speed, with a length or chunked, is answered 413 problem+json that the client reads', async () => {
    const big = new Uint8Array(20_000_000).fill(0x61)
    for (const body of [big, new Blob([big]).stream()]) {
      const response = await fetch(`${env.baseUrl}/api/v1/animals`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body })
      await problem(response, 413, 'payload_too_large')
    }
    // The server is still serving on the same port.
    expect((await env.request('GET', '/api/v1/me', { token })).status).toBe(200)
  })

  test('a console form over the limit is a 413 too, read no further than the limit', async () => {
    const response = await fetch(`${env.baseUrl}/console/sign-in`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'token=' + 'a'.repeat(2_000_000) })
    await problem(response, 413, 'payload_too_large')
  })
})

describe('examples in the published document', () => {
  test('every id a field or parameter takes has a realistic example (the docs page showed "animal_id": "string")', async () => {
    const found: string[] = []
    const problems: string[] = []
    const check = (where: string, schema: Schema | undefined) => {
      const target = schema?.type === 'array' ? schema.items : schema?.anyOf ? schema.anyOf.find((b: Schema) => b.type === 'string') : schema
      if (!target || target.$ref || target.enum) return
      found.push(where)
      const example = target.examples?.[0]
      if (typeof example !== 'string') problems.push(`${where}: no example`)
      else if (target.pattern && !new RegExp(target.pattern).test(example)) problems.push(`${where}: ${example} does not match ${target.pattern}`)
      else if (example === 'string' || example.includes('…')) problems.push(`${where}: ${example}`)
    }
    const walk = (node: unknown, where: string, path: string) => {
      if (Array.isArray(node)) { node.forEach((item, i) => walk(item, `${where}/${i}`, path)); return }
      if (node === null || typeof node !== 'object') return
      const object = node as Schema
      for (const [name, property] of Object.entries<Schema>(object.properties ?? {})) if (/_ids?$/.test(name)) check(`${where}.${name}`, property)
      if ((object.in === 'query' && /_id$/.test(object.name)) || (object.in === 'path' && object.name === 'id')) check(`${path} ${object.in} ${object.name}`, object.schema)
      for (const [key, value] of Object.entries(object)) walk(value, `${where}/${key}`, path || (key.startsWith('/') ? key : ''))
    }
    walk(doc.paths, '#/paths', '')
    walk(doc.components.schemas, '#/components/schemas', '')
    expect(problems).toEqual([])
    expect(found.length).toBeGreaterThan(60)
    const activityCreate = doc.components.schemas.ActivityCreate.properties.animal_id
    expect(activityCreate.examples[0]).toMatch(/^anm_[0-9a-hjkmnp-tv-z]{26}$/)
  })
})

describe('what the runtime answers before our code runs (as the document says)', () => {
  // Bun's HTTP parser refuses these before a Request exists, so neither the app nor Bun.serve's error handler sees
  // them. Kept as a test so that the document's list stays true when Bun changes.
  const line = (target: string, extra = '') => `GET ${target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n${extra}Connection: close\r\n\r\n`
  test('431 for headers over 16 KiB; 400 for a NUL in a header, no Host, OPTIONS *; FOO is closed unanswered', async () => {
    const status = async (text: string) => (await raw(text)).split('\r\n')[0] ?? ''
    expect(await status(line('/api/v1/animals', `X-Big: ${'a'.repeat(20_000)}\r\n`))).toBe('HTTP/1.1 431 Request Header Fields Too Large')
    expect(await status(line(`/api/v1/animals/${'a'.repeat(60_000)}`))).toBe('HTTP/1.1 431 Request Header Fields Too Large')
    expect(await status(line('/api/v1/animals', 'X-A: a\u0000b\r\n'))).toBe('HTTP/1.1 400 Bad Request')
    expect(await status(`GET /api/v1/me HTTP/1.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`)).toBe('HTTP/1.1 400 Bad Request')
    expect(await status('OPTIONS * HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')).toBe('HTTP/1.1 400 Bad Request')
    expect(await raw(`FOO /api/v1/me HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`)).toBe('')
    // Just under the runtime's limit, the request is ours: a long id is a 404 problem.
    expect(await status(line(`/api/v1/animals/${'a'.repeat(10_000)}`))).toBe('HTTP/1.1 404 Not Found')
  })
})
