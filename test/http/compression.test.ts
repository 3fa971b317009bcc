// Compression over HTTP (src/http/compression.ts): a large JSON answer leaves gzipped for a client that takes gzip,
// with Vary and the compressed Content-Length, HEAD included; as is otherwise; never with an ETag. node:http is the
// client here because it hands over the bytes as sent (fetch inflates them, as every other test relies on).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { request as httpRequest } from 'node:http'
import { COMPRESSION } from '../../src/http/compression.ts'
import { createTestEnv, type TestEnv } from '../helpers.ts'

let env: TestEnv
let token: string
let animalId: string
beforeAll(async () => {
  env = await createTestEnv()
  token = (await env.account({ scopes: ['animals:read', 'animals:write', 'environment:read', 'sensors:write'] })).token
  for (let i = 0; i < 12; i++) {
    const response = await env.request('POST', '/api/v1/animals', { token, body: { name: `Compressible ${i}`, species_id: 'python-regius', notes: 'Fed on Sunday; shed complete. '.repeat(4) } })
    expect(response.status).toBe(201)
    animalId = (await response.json()).id
  }
})
afterAll(async () => { await env.close() })

/** One request with exactly these headers; the body as the server sent it. */
function raw(method: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const url = new URL(env.baseUrl + path)
    const req = httpRequest({ method, host: url.hostname, port: url.port, path: url.pathname + url.search, headers: { authorization: `Bearer ${token}`, ...headers } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

describe('response compression', () => {
  const list = '/api/v1/animals?limit=50'

  test('a large list leaves gzipped for a client that takes gzip: Vary, the compressed length, the same JSON inflated', async () => {
    const plain = await raw('GET', list, {})
    const text = plain.body.toString('utf8')
    expect(text.length).toBeGreaterThanOrEqual(COMPRESSION.minChars)
    const zipped = await raw('GET', list, { 'accept-encoding': 'gzip, deflate, br' })
    expect(zipped.status).toBe(200)
    expect(zipped.headers['content-encoding']).toBe('gzip')
    expect(zipped.headers.vary).toBe('Accept-Encoding')
    expect(Number(zipped.headers['content-length'])).toBe(zipped.body.length)
    expect(zipped.body.length).toBeLessThan(text.length / 3)
    expect(JSON.parse(new TextDecoder().decode(Bun.gunzipSync(new Uint8Array(zipped.body))))).toEqual(JSON.parse(text))
    expect(zipped.headers['x-request-id']).toMatch(/^req_/)
    expect(zipped.headers['ratelimit']).toBeDefined()
  })

  test('a page of readings (made as text, ingest/query.ts) leaves as every JSON answer does: gzipped, byte for byte the plain page inflated', async () => {
    const device = await env.request('POST', '/api/v1/sensors/devices', { token, body: { name: 'Compressible hub', channels: [{ key: 't1', metric: 'temperature' }] } })
    expect(device.status).toBe(201)
    const key = (await device.json()).key as string
    const now = Date.now()
    const readings = Array.from({ length: 40 }, (_, i) => ({ channel: 't1', value: 20 + i / 10, ts: now - (i + 1) * 60_000 }))
    expect((await env.request('POST', '/api/v1/sensors/readings', { token: key, body: { readings } })).status).toBe(202)
    const page = `/api/v1/environment/readings?from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now).toISOString()}&limit=100`
    const plain = await raw('GET', page, {})
    expect(plain.status).toBe(200)
    expect(plain.headers['content-encoding']).toBeUndefined()
    expect(plain.body.length).toBeGreaterThanOrEqual(COMPRESSION.minChars)
    expect(JSON.parse(plain.body.toString()).data).toHaveLength(40)
    const zipped = await raw('GET', page, { 'accept-encoding': 'gzip' })
    expect(zipped.status).toBe(200)
    expect(zipped.headers['content-encoding']).toBe('gzip')
    expect(zipped.headers.vary).toBe('Accept-Encoding')
    expect(zipped.headers['content-type']).toBe('application/json;charset=utf-8')
    expect(Number(zipped.headers['content-length'])).toBe(zipped.body.length)
    expect(Buffer.from(Bun.gunzipSync(new Uint8Array(zipped.body))).equals(plain.body)).toBe(true)
    expect(zipped.headers['x-request-id']).toMatch(/^req_/)
    expect(zipped.headers['ratelimit']).toBeDefined()
  })

  test('without Accept-Encoding, or refusing gzip, the list is the JSON as is, still with Vary', async () => {
    for (const headers of [{}, { 'accept-encoding': 'identity' }, { 'accept-encoding': 'gzip;q=0, br' }] as Record<string, string>[]) {
      const answer = await raw('GET', list, headers)
      expect({ headers, encoding: answer.headers['content-encoding'], vary: answer.headers.vary }).toEqual({ headers, encoding: undefined, vary: 'Accept-Encoding' })
      expect(JSON.parse(answer.body.toString()).data.length).toBe(12)
    }
  })

  test('HEAD has the GET\'s encoding and compressed Content-Length, and no body', async () => {
    const get = await raw('GET', list, { 'accept-encoding': 'gzip' })
    const head = await raw('HEAD', list, { 'accept-encoding': 'gzip' })
    expect(head.status).toBe(200)
    expect(head.headers['content-encoding']).toBe('gzip')
    expect(head.headers['content-length']).toBe(String(get.body.length))
    expect(head.body.length).toBe(0)
  })

  test('a record with an ETag, and a small answer, leave as they are', async () => {
    const record = await raw('GET', `/api/v1/animals/${animalId}`, { 'accept-encoding': 'gzip' })
    expect(record.headers.etag).toBe('"v1"')
    expect(record.headers['content-encoding']).toBeUndefined()
    expect(JSON.parse(record.body.toString()).id).toBe(animalId)
    const small = await raw('GET', '/api/v1/animals?limit=1', { 'accept-encoding': 'gzip' })
    expect(small.body.length).toBeLessThan(COMPRESSION.minChars)
    expect(small.headers['content-encoding']).toBeUndefined()
    expect(small.headers.vary).toBeUndefined()
  })

  test('fetch (and so the SDK) reads a gzipped list as JSON without knowing', async () => {
    const answer = await env.request('GET', list, { token })
    expect(answer.headers.get('content-encoding')).toBe('gzip')
    expect((await answer.json()).data.length).toBe(12)
  })
})
