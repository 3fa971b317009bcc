// Hostile requests that used to reach a 500 or echo the caller's Host (issue 20): dates no store can hold, in
// every date field and date filter of the published document; a Host header that names no host; methods no route
// serves; and spoofed Host / X-Forwarded-* headers, which must never choose an absolute URL we answer with.
// Requests go over a raw socket where fetch would not send them as written (Host, CONNECT).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { ALL_SCOPES } from '../../src/auth/scopes.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

type Schema = Record<string, any>

let env: TestEnv
let token: string
let doc: Schema
const PUBLIC_URL = 'https://records.example.test/base'

beforeAll(async () => {
  env = await createTestEnv({ webhookAllowPrivate: true, publicUrl: PUBLIC_URL })
  token = (await env.account({ scopes: ALL_SCOPES })).token
  doc = await (await env.request('GET', '/api/v1/openapi.json')).json()
})
afterAll(async () => { await env.close() })

interface RawAnswer { status: number; headers: Record<string, string>; body: string; ms: number }

/** Sends `text` as written on a fresh connection and reads the answer (the server closes after it). */
function raw(text: string): Promise<RawAnswer> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(env.baseUrl).port), '127.0.0.1', () => socket.write(text))
    let data = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk) => { data += chunk })
    socket.on('error', reject)
    socket.on('close', () => {
      const [head = '', ...rest] = data.split('\r\n\r\n')
      const [statusLine = '', ...lines] = head.split('\r\n')
      const headers: Record<string, string> = {}
      for (const line of lines) { const i = line.indexOf(':'); headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim() }
      resolve({ status: Number(statusLine.split(' ')[1] ?? 0), headers, body: rest.join('\r\n\r\n'), ms: performance.now() - started })
    })
    setTimeout(() => socket.destroy(new Error(`no answer within 5 s to ${text.split('\r\n')[0]}`)), 5_000)
  })
}

const request = (method: string, target: string, host: string | undefined, extra = '', body = '') =>
  `${method} ${target} HTTP/1.1\r\n${host === undefined ? '' : `Host: ${host}\r\n`}Authorization: Bearer ${token}\r\n${extra}` +
  `${body ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` : ''}Connection: close\r\n\r\n${body}`

const resolveRef = (schema: Schema | undefined): Schema => {
  let s = schema ?? {}
  for (let i = 0; s.$ref && i < 10; i++) s = s.$ref.split('/').slice(1).reduce((node: Schema, key: string) => node[key], doc)
  return s
}
/** The format of a property's schema, looking through `anyOf` (nullable fields). */
const formatOf = (schema: Schema): string | undefined => {
  const s = resolveRef(schema)
  return s.format ?? (s.anyOf ?? []).map(resolveRef).find((b: Schema) => b.format)?.format
}

const OUT_OF_RANGE = {
  // Outside the range, and (issue 32) days and times no calendar has: refused, never moved to the next valid one.
  'date-time': ['0000-01-01T00:00:00Z', '-000001-01-01T00:00:00Z', '0001-01-01T00:00:00+01:00', '10000-01-01T00:00:00Z', '2025-02-30T00:00:00Z', '2025-01-01T24:00:00Z', '2025-01-01T23:60:00Z'],
  date: ['0000-01-01', '-000001-01-01', '10000-01-01', '2025-02-30', '2025-04-31'],
} as Record<string, string[]>

describe('dates no store can hold, and days no calendar has', () => {
  test('every date and date-time query parameter refuses them with a 400 naming the parameter', async () => {
    let checked = 0
    for (const [path, methods] of Object.entries<Schema>(doc.paths)) {
      if (path.includes('{')) continue
      for (const [method, op] of Object.entries<Schema>(methods)) {
        for (const parameter of (op.parameters ?? []) as Schema[]) {
          const format = parameter.in === 'query' ? formatOf(parameter.schema) : undefined
          if (!format || !OUT_OF_RANGE[format]) continue
          for (const value of OUT_OF_RANGE[format]!) {
            const response = await env.request(method.toUpperCase(), `${path}?${parameter.name}=${encodeURIComponent(value)}`, { token })
            const body = await problem(response, 400, 'invalid_parameter')
            expect({ path, value, errors: body.errors.map((e: { path: string }) => e.path) }).toEqual({ path, value, errors: [`/query/${parameter.name}`] })
            checked++
          }
        }
      }
    }
    // updated_since on every mutable list, and the activity, readings, breeding and invoice date windows.
    expect(checked).toBeGreaterThanOrEqual(40)
  })

  test('every date and date-time field of a create body refuses them with a 422 naming the field, and nothing is written', async () => {
    const animal = await (await env.request('POST', '/api/v1/animals', { token, body: { name: 'Dated', species_id: 'python-regius' } })).json()
    const valid: Record<string, Record<string, unknown>> = {
      '/api/v1/animals': { name: 'Dated', species_id: 'python-regius' },
      '/api/v1/activities': { animal_id: animal.id, type: 'handling', details: { minutes: 5 } },
    }
    let checked = 0
    for (const [path, body] of Object.entries(valid)) {
      const schema = resolveRef(doc.paths[path].post.requestBody.content['application/json'].schema)
      for (const [field, property] of Object.entries<Schema>(schema.properties)) {
        const format = formatOf(property)
        if (!format || !OUT_OF_RANGE[format]) continue
        for (const value of OUT_OF_RANGE[format]!) {
          const refused = await problem(await env.request('POST', path, { token, body: { ...body, [field]: value } }), 422, 'validation_failed')
          expect({ field, value, errors: refused.errors.map((e: { path: string }) => e.path) }).toEqual({ field, value, errors: [`/body/${field}`] })
          checked++
        }
      }
    }
    // birth_date and acquired_date of an animal, occurred_at of an activity.
    expect(checked).toBe(5 + 5 + 7)
    const animals = await (await env.request('GET', '/api/v1/animals', { token })).json()
    expect(animals.data.map((a: { id: string }) => a.id)).toEqual([animal.id])
    const activities = await (await env.request('GET', `/api/v1/activities?animal_id=${animal.id}`, { token })).json()
    expect(activities.data).toEqual([])
  })

  test('the first and last days of the range are taken', async () => {
    const created = await env.request('POST', '/api/v1/animals', { token, body: { name: 'Old', species_id: 'testudo-hermanni', birth_date: '0001-01-01', acquired_date: '9999-12-31' } })
    expect(created.status).toBe(201)
    expect(await created.json()).toMatchObject({ birth_date: '0001-01-01', acquired_date: '9999-12-31' })
    expect((await env.request('GET', '/api/v1/animals?updated_since=0001-01-01T00:00:00Z', { token })).status).toBe(200)
    expect((await env.request('GET', '/api/v1/animals?updated_since=9999-12-31T23:59:59.999Z', { token })).status).toBe(200)
  })
})

describe('a Host header that names no host', () => {
  const HOSTS = ['evil.example:99999', 'a@evil.example', 'evil.example:80:80', '[::1', 'a b', '', 'evil.example/path', 'ex\u00e4mple.com']
  const TARGETS = ['/api/v1/animals', '/api/v1/nope', '/api/v1/docs', '/console', '/console/nope', '/healthz', '/']

  test('is a 400 problem+json on the API, the console and the docs page, never the runtime\'s error page', async () => {
    for (const host of HOSTS) {
      for (const target of TARGETS) {
        const answer = await raw(request('GET', target, host))
        expect({ host, target, status: answer.status, type: answer.headers['content-type'] }).toEqual({ host, target, status: 400, type: 'application/problem+json' })
        const body = JSON.parse(answer.body)
        expect(body).toMatchObject({ code: 'invalid_parameter', errors: [{ path: '/header/host' }], type: `${PUBLIC_URL}/api/v1/errors/invalid_parameter` })
        expect(answer.ms).toBeLessThan(2_000)
      }
    }
  })

  test('a well-formed Host of any name is served, and a request without one (HTTP/1.0) too', async () => {
    for (const host of ['localhost', '127.0.0.1:1', 'records.example.com:65535', '[::1]:8080', 'under_score.local']) {
      expect({ host, status: (await raw(request('GET', '/api/v1/me', host))).status }).toEqual({ host, status: 200 })
    }
    const answer = await raw(`GET /healthz HTTP/1.0\r\n\r\n`)
    expect(answer.status).toBe(200)
  })
})

describe('methods no route serves', () => {
  test('are a 405 problem+json with Allow on every path, never a 500', async () => {
    const cases: [string, string, string][] = [
      ['CONNECT', 'evil.example:443', ''],
      ['CONNECT', '/api/v1/animals', 'GET, HEAD, POST'],
      ['TRACE', '/api/v1/status', 'GET, HEAD'],
      ['PROPFIND', '/api/v1/animals', 'GET, HEAD, POST'],
      ['TRACE', '/console', 'GET, HEAD'],
      ['PROPFIND', '/healthz', 'GET, HEAD'],
      ['MKCOL', '/nowhere', ''],
    ]
    for (const [method, target, allow] of cases) {
      const answer = await raw(request(method, target, 'localhost'))
      expect({ method, target, status: answer.status, type: answer.headers['content-type'], allow: answer.headers['allow'] })
        .toEqual({ method, target, status: 405, type: 'application/problem+json', allow })
      expect(JSON.parse(answer.body).code).toBe('method_not_allowed')
    }
  })
})

describe('spoofed Host and X-Forwarded-* headers', () => {
  const SPOOFS = [
    'Host: evil.example\r\n',
    'Host: evil.example:8443\r\n',
    'Host: localhost\r\nX-Forwarded-Host: evil.example\r\nX-Forwarded-Proto: https\r\nForwarded: host=evil.example;proto=https\r\n',
  ]

  test('never choose the problem type: it is always on PUBLIC_URL', async () => {
    for (const spoof of SPOOFS) {
      const answer = await raw(`GET /api/v1/animals HTTP/1.1\r\n${spoof}Connection: close\r\n\r\n`)
      expect(answer.status).toBe(401)
      expect(JSON.parse(answer.body).type).toBe(`${PUBLIC_URL}/api/v1/errors/authentication_required`)
      expect(answer.body).not.toContain('evil.example')
    }
  })

  test('never choose where a device sends its owner to pair it', async () => {
    for (const spoof of SPOOFS) {
      const body = JSON.stringify({ model: 'probe' })
      const answer = await raw(`POST /api/v1/sensors/claim/start HTTP/1.1\r\n${spoof}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)
      expect(answer.status).toBe(201)
      const claim = JSON.parse(answer.body)
      expect(claim.verification_uri).toBe(`${PUBLIC_URL}/console/activate`)
      expect(claim.verification_uri_complete).toBe(`${PUBLIC_URL}/console/activate?user_code=${claim.user_code}`)
      expect(answer.body).not.toContain('evil.example')
    }
  })
})
