// Fuzzing every operation of the published OpenAPI document over a real server on loopback: fast-check builds
// requests from each operation's own schemas (path, query, headers, body) and mixes in hostile strings and shapes
// (NUL, lone surrogates, huge and deep values, wrong types, bad percent-encoding, unknown fields, bad keys).
// Whatever comes in: never a 5xx, every error is problem+json (or the shape the document declares for it), and no
// answer takes longer than 2 s.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createTestEnv, type TestEnv } from '../helpers.ts'

type Schema = Record<string, any>
interface Operation { method: string; path: string; op: Schema }

let env: TestEnv
let doc: Schema
let personal: string
let deviceKey: string
/** Ids that exist, per path parameter's path, so some requests reach the handlers behind the 404s. */
const existing: Record<string, string[]> = {}

beforeAll(async () => {
  env = await createTestEnv({ webhookAllowPrivate: true, testRoutes: false, rateLimitPerMinute: 1_000_000, deviceRateLimitPerMinute: 1_000_000 })
  const scopes = ['animals', 'activities', 'breeding', 'medical', 'contacts', 'sales', 'documents', 'environment', 'sensors', 'webhooks']
    .flatMap((area) => [`${area}:read`, `${area}:write`]) as never[]
  personal = (await env.account({ scopes })).token
  const post = async (path: string, body: unknown) => (await env.request('POST', path, { token: personal, body })).json()
  const animal = await post('/api/v1/animals', { name: 'Fuzz', species_id: 'python-regius' })
  const device = await post('/api/v1/sensors/devices', { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] })
  const endpoint = await post('/api/v1/webhooks/endpoints', { url: 'http://127.0.0.1:9/hook', enabled_events: ['*'] })
  deviceKey = device.key
  existing['/api/v1/animals/{id}'] = [animal.id]
  existing['/api/v1/sensors/devices/{id}'] = [device.id]
  existing['/api/v1/webhooks/endpoints/{id}'] = [endpoint.id]
  existing['/api/v1/webhooks/endpoints/{id}/test'] = [endpoint.id]
  doc = await (await env.request('GET', '/api/v1/openapi.json')).json()
})
afterAll(async () => { await env.close() })

const HOSTILE_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', '\udfff', 'x'.repeat(70_000), '../../etc/passwd', "' OR 1=1 --", '<script>alert(1)</script>',
  '🐍', '\u202e', '-1', '0', '1e309', 'NaN', '9'.repeat(400), 'null', 'true', '[]', '{}', '\n\r\t', '%00', 'anm_', 'anm_' + 'Z'.repeat(26),
  '2026-13-45T25:61:61Z', '1970-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '*', 'hrs_pat_' + 'a'.repeat(36),
  // Dates no store can hold (year 0000 does not exist; RFC 3339 has four-digit years): a 400/422, never a 500.
  '0000-01-01T00:00:00Z', '-000001-01-01T00:00:00Z', '0001-01-01T00:00:00+01:00', '0000-01-01', '10000-01-01',
]
/** Raw query-string texts, already percent-encoded (some wrongly): what a broken client sends. */
const HOSTILE_QUERY_TEXTS = ['%00', '%ED%A0%80', '%FF%FE', '%', '%zz', '%2F..%2F', 'a+b', '%F0%9F%90%8D', '-', '1e400', '[]', '%5B%5D']

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...HOSTILE_STRINGS),
  fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53 + 2, -1e308, 1e308, [], {}, [[[[]]]], { a: { b: { c: {} } } }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer().map((depth) => JSON.parse('['.repeat(Math.abs(depth % 60)) + ']'.repeat(Math.abs(depth % 60)))),
)

function resolve(schema: Schema | undefined): Schema {
  let s = schema ?? {}
  for (let i = 0; s.$ref && i < 10; i++) s = s.$ref.split('/').slice(1).reduce((node: Schema, key: string) => node[key], doc)
  return s
}

/** Values shaped like the schema (mostly valid, so requests get past validation), with hostile values mixed in. */
function fromSchema(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 4, arbitrary: shapedBy(resolve(schema), depth) }, { weight: 1, arbitrary: hostileValue })
}

/** A valid-looking value with exactly one of its leaves (or itself) replaced by a hostile value. */
function withOneHostileLeaf(schema: Schema): fc.Arbitrary<unknown> {
  // A string leaf mostly gets a hostile string, so the body still passes the schema and reaches the handler.
  return fc.tuple(shapedBy(resolve(schema), 0), fc.nat(), hostileValue, fc.oneof(fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfff'), fc.constantFrom(...HOSTILE_STRINGS.filter((h) => h.length <= 100 && h !== ''))))
    .map(([value, pick, hostile, hostileString]) => {
    const slots: { holder: any; key: string | number }[] = []
    const visit = (node: any) => {
      if (node === null || typeof node !== 'object') return
      for (const key of Object.keys(node)) { slots.push({ holder: node, key: Array.isArray(node) ? Number(key) : key }); visit(node[key]) }
    }
    const copy = structuredClone(value)
    visit(copy)
    if (!slots.length) return hostile
    const slot = slots[pick % slots.length]!
    slot.holder[slot.key] = typeof slot.holder[slot.key] === 'string' && pick % 4 !== 0 ? hostileString : hostile
    return copy
  })
}

function shapedBy(s: Schema, depth: number): fc.Arbitrary<unknown> {
  if (s.const !== undefined) return fc.constant(s.const)
  if (Array.isArray(s.enum) && s.enum.length) return fc.constantFrom(...s.enum)
  const alternatives = s.anyOf ?? s.oneOf
  if (Array.isArray(alternatives) && alternatives.length) return fc.oneof(...alternatives.map((a: Schema) => fromSchema(a, depth + 1)))
  const type = Array.isArray(s.type) ? s.type[0] : s.type
  switch (type) {
    case 'string':
      if (Array.isArray(s.examples) && s.examples.length) return fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...s.examples) }, { weight: 1, arbitrary: fc.string({ maxLength: 24 }) })
      if (s.format === 'date-time') return fc.date({ min: new Date('2020-01-01'), max: new Date('2030-01-01'), noInvalidDate: true }).map((d) => d.toISOString())
      if (s.format === 'date') return fc.date({ min: new Date('2020-01-01'), max: new Date('2030-01-01'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10))
      if (s.format === 'uri') return fc.constantFrom('http://127.0.0.1:9/h', 'https://example.com/h', 'ftp://x', 'not a url')
      return fc.string({ minLength: Math.min(s.minLength ?? 0, 24), maxLength: Math.min(s.maxLength ?? 24, 24) })
    case 'integer': return fc.integer({ min: s.minimum ?? -1_000_000, max: s.maximum ?? 1_000_000 })
    case 'number': return fc.double({ noNaN: true, min: s.minimum ?? -1e6, max: s.maximum ?? 1e6 })
    case 'boolean': return fc.boolean()
    case 'null': return fc.constant(null)
    case 'array':
      if (depth > 4) return fc.constant([])
      return fc.array(shapedBy(resolve(s.items), depth + 1), { maxLength: Math.min(s.maxItems ?? 3, 3) })
    case 'object': {
      if (depth > 4) return fc.constant({})
      const properties: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [name, property] of Object.entries<Schema>(s.properties ?? {})) properties[name] = shapedBy(resolve(property), depth + 1)
      const required = (s.required ?? []).filter((k: string) => k in properties) as string[]
      // Often only the required fields: optional ones that point at other records would make most bodies a 422.
      const record = fc.oneof(
        fc.record(Object.fromEntries(required.map((k) => [k, properties[k]!]))),
        fc.record(properties, { requiredKeys: required }),
      )
      // Sometimes an unknown field too: it must be a 422, never ignored into a 500.
      const extra = fc.tuple(fc.constantFrom('unknown_field', '__proto__', 'constructor', 'id', 'account_id'), hostileValue)
      return fc.tuple(record, fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: extra }))
        .map(([value, extra]) => (extra ? { ...value, [extra[0]]: extra[1] } : value))
    }
    default:
      return hostileValue
  }
}

function operations(): Operation[] {
  const list: Operation[] = []
  for (const [path, methods] of Object.entries<Schema>(doc.paths)) {
    for (const [method, op] of Object.entries<Schema>(methods)) list.push({ method: method.toUpperCase(), path, op })
  }
  return list
}

/** One request for `operation`: path, query, headers and body drawn from its schemas, plus hostile variants. */
function requestFor({ path, op }: Operation): fc.Arbitrary<{ url: string; headers: Record<string, string>; body?: string }> {
  const parameters: Schema[] = op.parameters ?? []
  const pathValue = fc.oneof(fc.constantFrom(...(existing[path] ?? ['anm_01jd0000000000000000000000'])), fc.constantFrom(...HOSTILE_STRINGS.filter((s) => s.length < 100)))
  const queryPart = (p: Schema) => fc.option(fc.oneof(
    fromSchema(p.schema).map((v) => `${p.name}=${encodeSafely(typeof v === 'string' ? v : JSON.stringify(v) ?? '')}`),
    fc.constantFrom(...HOSTILE_QUERY_TEXTS).map((raw) => `${p.name}=${raw}`),
  ), { nil: undefined })
  const security: Schema[] = op.security ?? []
  const wantsDevice = security.some((r) => 'deviceKey' in r) && !security.some((r) => 'personalToken' in r)
  const token = fc.oneof(
    { weight: 8, arbitrary: fc.constant(wantsDevice ? deviceKey : personal) },
    { weight: 1, arbitrary: fc.constantFrom(undefined, 'hrs_pat_x', 'Bearer', '\u0000', deviceKey, personal) },
  )
  const json = op.requestBody?.content?.['application/json']?.schema
  const body = json
    ? fc.oneof(
      { weight: 3, arbitrary: shapedBy(resolve(json), 0).map((v) => JSON.stringify(v) ?? 'null') },
      { weight: 4, arbitrary: withOneHostileLeaf(json).map((v) => JSON.stringify(v) ?? 'null') },
      { weight: 1, arbitrary: fc.constantFrom('{', '[1,]', '"\\ud800"', '{"a":"\\u0000"}', '[' .repeat(5000) + ']'.repeat(5000), 'x'.repeat(2_000_000), '') },
    )
    : fc.constant(undefined)
  return fc.record({
    pathValues: fc.array(pathValue, { minLength: 4, maxLength: 4 }),
    query: fc.tuple(...parameters.filter((p) => p.in === 'query').map(queryPart), fc.constant(undefined)),
    headers: fc.tuple(...parameters.filter((p) => p.in === 'header').map((p) => fc.option(fc.constantFrom('"v1"', '*', '', 'x'.repeat(300), 'k-1').map((v) => [p.name, v] as const), { nil: undefined })), fc.constant(undefined)),
    token, body,
  }).map(({ pathValues, query, headers, token, body }) => {
    let i = 0
    const filled = path.replace(/\{[^}]+\}/g, () => encodeSafely(pathValues[i++]!))
    const queryText = query.filter((q): q is string => q !== undefined).join('&')
    const sent: Record<string, string> = {}
    for (const header of headers) if (header) sent[header[0]] = header[1]
    if (token !== undefined) sent.authorization = `Bearer ${token}`
    if (body !== undefined) sent['content-type'] = 'application/json'
    return { url: filled + (queryText ? `?${queryText}` : ''), headers: sent, body }
  })
}

/** Percent-encodes what encodeURIComponent can, and sends a lone surrogate as the bytes a broken client would. */
function encodeSafely(value: string): string {
  try { return encodeURIComponent(value) } catch { return '%ED%A0%80' }
}

describe('fuzzing every operation', () => {
  test('no 5xx, every error problem+json, no answer slower than 2 s', async () => {
    const ops = operations()
    expect(ops.length).toBeGreaterThanOrEqual(36)
    let sent = 0
    const statuses = new Map<number, number>()
    const failures: string[] = []
    for (const operation of ops) {
      // DELETEs last would be kinder to the fixtures, but any order must hold: a deleted fixture is just a 404.
      await fc.assert(fc.asyncProperty(requestFor(operation), async (request) => {
        const started = performance.now()
        const response = await fetch(env.baseUrl + request.url, { method: operation.method, headers: request.headers, body: request.body })
        // An event stream that opened goes on for ever: its status and headers are the answer, the body is let go.
        const streaming = response.ok && (response.headers.get('content-type') ?? '').startsWith('text/event-stream')
        const text = streaming ? (await response.body?.cancel(), '') : await response.text()
        const ms = performance.now() - started
        sent++
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
        const type = response.headers.get('content-type') ?? ''
        // Bun's HTTP server answers a request line or headers over 16 KiB with a bare 431 before the app sees it.
        const refusedByBun = response.status === 431 && text === '' && request.url.length > 16 * 1024
        // An error is problem+json, unless the document declares another shape for this status (InfluxDB's write
        // endpoints answer as InfluxDB does, in application/json): then that one.
        const declared = Object.keys(operation.op.responses?.[String(response.status)]?.content ?? {})
        const expectedType = declared.length && !declared.includes('application/problem+json') ? declared : ['application/problem+json']
        const problem = response.status >= 400 && !expectedType.some((t) => type.startsWith(t)) && !refusedByBun
        if (response.status >= 500 || problem || ms > 2_000) {
          failures.push(`${operation.method} ${request.url.slice(0, 200)} → ${response.status} ${type} in ${Math.round(ms)} ms: ${text.slice(0, 300)}`)
          return false
        }
        return true
      }), { numRuns: 80, seed: 20261122, endOnFailure: true }).catch(() => {})
    }
    console.log(`fuzz.test: ${sent} requests over ${ops.length} operations; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`)
    expect(failures).toEqual([])
  })
})
