// Conditional reads (issue 24): a GET of a versioned record with If-None-Match naming its current ETag answers 304
// with no body and does not count against the key's rate limit; a changed record answers 200 with its new ETag.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestEnv, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env.close() })

const remaining = (response: Response) => Number(response.headers.get('x-ratelimit-remaining'))

describe('If-None-Match', () => {
  test('an animal not changed since is a 304 with its ETag and no body; changed, a 200 with the new ETag', async () => {
    const { token } = await env.account({ scopes: ['animals:read', 'animals:write'] })
    const animal = await (await env.request('POST', '/api/v1/animals', { token, body: { name: 'Cond', species_id: 'python-regius' } })).json()
    const path = `/api/v1/animals/${animal.id}`
    const first = await env.request('GET', path, { token })
    expect(first.headers.get('etag')).toBe('"v1"')
    for (const tag of ['"v1"', 'W/"v1"', '"v0", "v1"', '*']) {
      const cached = await env.request('GET', path, { token, headers: { 'if-none-match': tag } })
      expect({ tag, status: cached.status, etag: cached.headers.get('etag'), body: await cached.text() }).toEqual({ tag, status: 304, etag: '"v1"', body: '' })
      expect(cached.headers.get('x-request-id')).toMatch(/^req_/)
    }
    expect((await env.request('PATCH', path, { token, body: { name: 'Changed' } })).status).toBe(200)
    const changed = await env.request('GET', path, { token, headers: { 'if-none-match': '"v1"' } })
    expect(changed.status).toBe(200)
    expect(changed.headers.get('etag')).toBe('"v2"')
    expect((await changed.json()).name).toBe('Changed')
    // If-None-Match on a write is no precondition here: PATCH still takes If-Match only.
    expect((await env.request('PATCH', path, { token, body: { name: 'Again' }, headers: { 'if-none-match': '"v2"' } })).status).toBe(200)
  })

  test('a 304 does not count against the rate limit, for a personal token and for a device key reading itself', async () => {
    const { token } = await env.account({ scopes: ['animals:read', 'animals:write', 'sensors:write', 'sensors:read'] })
    const animal = await (await env.request('POST', '/api/v1/animals', { token, body: { name: 'Counted', species_id: 'python-regius' } })).json()
    const path = `/api/v1/animals/${animal.id}`
    const before = remaining(await env.request('GET', path, { token }))
    for (let i = 0; i < 5; i++) expect((await env.request('GET', path, { token, headers: { 'if-none-match': '"v1"' } })).status).toBe(304)
    // Only the plain GET below counts: five 304s later, one request more is spent than before.
    expect(remaining(await env.request('GET', path, { token }))).toBe(before - 1)

    const device = await (await env.request('POST', '/api/v1/sensors/devices', { token, body: { name: 'Self', channels: [] } })).json()
    const devicePath = `/api/v1/sensors/devices/${device.id}`
    const read = await env.request('GET', devicePath, { token: device.key })
    const etag = read.headers.get('etag')!
    const deviceBefore = remaining(read)
    for (let i = 0; i < 5; i++) expect((await env.request('GET', devicePath, { token: device.key, headers: { 'if-none-match': etag } })).status).toBe(304)
    expect(remaining(await env.request('GET', devicePath, { token: device.key }))).toBe(deviceBefore - 1)
  })

  test('the document offers If-None-Match and the 304 on every GET of a versioned record', async () => {
    const doc = await (await env.request('GET', '/api/v1/openapi.json')).json()
    for (const path of ['/api/v1/animals/{id}', '/api/v1/sensors/devices/{id}', '/api/v1/environment/alert-rules/{id}']) {
      const get = doc.paths[path].get
      expect(get.parameters.map((p: { name: string }) => p.name)).toContain('If-None-Match')
      expect(get.responses['304'].headers.ETag).toBeDefined()
    }
  })
})
