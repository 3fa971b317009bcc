// Response compression (src/http/compression.ts): which Accept-Encoding values take gzip, and which answers the
// app's mapResponse hook compresses, leaves as they are, or leaves to Elysia. Over HTTP: test/http/compression.test.ts.
import { describe, expect, test } from 'bun:test'
import { acceptsGzip, COMPRESSION, jsonResponse } from '../../src/http/compression.ts'

describe('acceptsGzip (RFC 9110 §12.5.3)', () => {
  test.each([
    ['gzip', true], ['GZIP', true], ['x-gzip', true], ['gzip, deflate, br, zstd', true], ['br;q=1.0, gzip;q=0.8', true],
    ['gzip;q=0.001', true], ['*', true], ['*;q=0.5', true], ['identity, *;q=1', true],
    [null, false], ['', false], ['identity', false], ['br, deflate', false], ['gzip;q=0', false], ['gzip; q=0.000', false],
    ['*;q=0', false], ['gzip;q=0, *', false], ['*, gzip;q=0', false], ['gzip;q=nonsense', false], ['gzipped', false],
  ])('%p → %p', (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected)
  })
})

describe('jsonResponse', () => {
  const request = (acceptEncoding?: string) => new Request('http://x/api/v1/animals', { headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} })
  const large = { data: Array.from({ length: 40 }, (_, i) => ({ id: `anm_${i}`, name: `Animal ${i}` })) }
  const small = { data: [{ id: 'anm_1' }] }

  test('a large answer is gzipped for a client that takes gzip, with Vary; the bytes inflate to the JSON', async () => {
    const set = { status: 200, headers: { 'x-request-id': 'req_1' } as Record<string, unknown> }
    const response = jsonResponse(request('gzip, br'), set, large)!
    expect(JSON.stringify(large).length).toBeGreaterThanOrEqual(COMPRESSION.minChars)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-encoding')).toBe('gzip')
    expect(response.headers.get('vary')).toBe('Accept-Encoding')
    expect(response.headers.get('x-request-id')).toBe('req_1')
    expect(response.headers.get('content-type')).toBe('application/json;charset=utf-8')
    const bytes = new Uint8Array(await response.arrayBuffer())
    expect(bytes.length).toBeLessThan(JSON.stringify(large).length)
    expect(JSON.parse(new TextDecoder().decode(Bun.gunzipSync(bytes)))).toEqual(large)
  })

  test('the same answer to a client that does not take gzip is the JSON as is, still with Vary', async () => {
    for (const header of [undefined, 'identity', 'gzip;q=0']) {
      const response = jsonResponse(request(header), { status: 201, headers: {} }, large)!
      expect({ header, status: response.status, encoding: response.headers.get('content-encoding'), vary: response.headers.get('vary') })
        .toEqual({ header, status: 201, encoding: null, vary: 'Accept-Encoding' })
      expect(await response.json()).toEqual(large)
    }
  })

  test('a small answer leaves as it is and without Vary; an existing Vary (CORS) gains Accept-Encoding once', async () => {
    const response = jsonResponse(request('gzip'), { headers: {} }, small)!
    expect(response.headers.get('content-encoding')).toBeNull()
    expect(response.headers.get('vary')).toBeNull()
    expect(await response.json()).toEqual(small)
    expect(jsonResponse(request('gzip'), { headers: { vary: 'Origin' } }, large)!.headers.get('vary')).toBe('Origin, Accept-Encoding')
    expect(jsonResponse(request('gzip'), { headers: { vary: 'Origin, accept-encoding' } }, large)!.headers.get('vary')).toBe('Origin, accept-encoding')
  })

  test('an answer with an ETag is never compressed (the ETag names the bytes sent)', async () => {
    const response = jsonResponse(request('gzip'), { headers: { etag: '"v3"' } }, large)!
    expect(response.headers.get('content-encoding')).toBeNull()
    expect(response.headers.get('etag')).toBe('"v3"')
    expect(await response.json()).toEqual(large)
  })

  test('anything but a plain JSON object or array, cookies, redirects and named statuses are left to Elysia', () => {
    const set = () => ({ headers: {} })
    for (const value of [undefined, null, 'text', 42, new Response('x'), new Uint8Array(4), new Date(), new (class Box { a = 1 })()]) {
      expect(jsonResponse(request('gzip'), set(), value)).toBeUndefined()
    }
    expect(jsonResponse(request('gzip'), { headers: {}, cookie: { session: { value: 's' } } }, large)).toBeUndefined()
    expect(jsonResponse(request('gzip'), { headers: {}, redirect: '/x' }, large)).toBeUndefined()
    expect(jsonResponse(request('gzip'), { headers: {}, status: 'Created' }, large)).toBeUndefined()
    expect(jsonResponse(request('gzip'), { headers: {}, cookie: {} }, large)).toBeInstanceOf(Response)
  })
})
