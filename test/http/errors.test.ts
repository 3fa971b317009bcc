import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

let env: TestEnv
let token: string
beforeAll(async () => {
  env = await createTestEnv()
  token = (await env.account({ scopes: ['animals:write'] })).token
})
afterAll(async () => { await env.close() })

describe('RFC 9457 errors', () => {
  test('unknown routes are 404, inside and outside /api/v1', async () => {
    await problem(await env.request('GET', '/api/v1/no-such-thing', { token }), 404, 'not_found')
    await problem(await env.request('GET', '/nothing-here'), 404, 'not_found')
  })

  test('a wrong method is 405 with Allow', async () => {
    const res = await env.request('PUT', '/api/v1/me', { token, body: {} })
    expect(res.headers.get('allow')).toBe('GET, HEAD')
    await problem(res, 405, 'method_not_allowed')
    const publicPath = await env.request('POST', '/api/v1/status')
    expect(publicPath.headers.get('allow')).toBe('GET, HEAD')
    await problem(publicPath, 405, 'method_not_allowed')
  })

  test('a write to a path v1 does not serve is 405 with an empty Allow', async () => {
    for (const path of ['/api/v1/environment/zones', '/api/v1/anything']) {
      const res = await env.request('POST', path, { token, body: {} })
      expect(res.headers.get('allow')).toBe('')
      const body = await problem(res, 405, 'method_not_allowed')
      // The empty Allow is explained, with the 404 a GET meets on the same path.
      expect(body.detail).toContain('serves no method on this path, so the Allow header is empty and a GET here is 404')
      await problem(await env.request('GET', path, { token }), 404, 'not_found')
    }
  })

  test('malformed JSON is 400 malformed_json', async () => {
    for (const body of ['{"name":', 'not json at all', '{"name":"x"} trailing']) {
      await problem(await env.request('POST', '/api/v1/_test/echo', { token, body, headers: { 'content-type': 'application/json' } }), 400, 'malformed_json')
    }
  })

  test('a non-JSON content type is 415', async () => {
    await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type')
    await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: '{"name":"x"}', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type')
    const charset = await env.request('POST', '/api/v1/_test/echo', { token, body: '{"name":"x"}', headers: { 'content-type': 'application/json; charset=utf-8' } })
    expect(charset.status).toBe(200)
  })

  test('bodies over 1 MiB are 413, with Content-Length or streamed without it', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024) })
    await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: big, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large')
    const chunks = [new TextEncoder().encode('{"name":"'), new TextEncoder().encode('y'.repeat(1024 * 1024 + 10)), new TextEncoder().encode('"}')]
    const stream = new ReadableStream({ pull(c) { const next = chunks.shift(); if (next) c.enqueue(next); else c.close() } })
    await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: stream, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large')
  })

  test('schema violations are 422 with JSON Pointer paths; unknown fields are 422 too', async () => {
    const wrong = await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: { name: '', count: -1, tags: ['ok', ''] } }), 422, 'validation_failed')
    const paths = wrong.errors.map((e: { path: string }) => e.path)
    expect(paths).toContain('/body/name')
    expect(paths).toContain('/body/count')
    expect(paths).toContain('/body/tags/1')
    const unknown = await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: { name: 'x', nmae: 'typo' } }), 422, 'validation_failed')
    expect(unknown.errors.map((e: { path: string }) => e.path)).toContain('/body/nmae')
    await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: [] }), 422, 'validation_failed')
    await problem(await env.request('POST', '/api/v1/_test/echo', { token }), 422, 'validation_failed')
  })

  test('a bad query parameter is 400 invalid_parameter naming it', async () => {
    const body = await problem(await env.request('GET', '/api/v1/_test/slow?ms=abc'), 400, 'invalid_parameter')
    expect(JSON.stringify(body.errors)).toContain('ms')
  })

  test('a thrown error is 500 internal_error with no internals', async () => {
    const res = await env.request('GET', '/api/v1/_test/boom', { token })
    const text = await res.clone().text()
    await problem(res, 500, 'internal_error')
    expect(text).not.toContain('secret_table')
    expect(text).not.toContain('/srv/app')
    expect(text).not.toContain('at ')
  })

  test('X-Request-Id is echoed when valid and generated otherwise; API-Version is on every response', async () => {
    const echoed = await env.request('GET', '/api/v1/status', { headers: { 'x-request-id': 'client-trace-123' } })
    expect(echoed.headers.get('x-request-id')).toBe('client-trace-123')
    const replaced = await env.request('GET', '/api/v1/status', { headers: { 'x-request-id': 'bad id with spaces' } })
    expect(replaced.headers.get('x-request-id')).toMatch(/^req_[0-9a-z]{26}$/)
    const error = await env.request('GET', '/api/v1/me', { headers: { 'x-request-id': 'trace-401' } })
    expect((await problem(error, 401, 'authentication_required')).request_id).toBe('trace-401')
    for (const res of [echoed, replaced, error]) expect(res.headers.get('api-version')).toBe('1.0.0')
  })

  test('refused requests change nothing: a rejected body never reaches the handler', async () => {
    // The echo route would answer 200 with the body; every refusal above answered a problem instead.
    const ok = await env.request('POST', '/api/v1/_test/echo', { token, body: { name: 'fine', count: 2 } })
    expect(await ok.json()).toEqual({ name: 'fine', count: 2 })
  })
})
