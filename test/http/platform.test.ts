import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { op } from '../../src/http/operation.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env.close() })

describe('platform endpoints', () => {
  test('GET /status is public and reports version and release date', async () => {
    const res = await env.request('GET', '/api/v1/status')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ status: 'operational', version: '1.0.0', release_date: '2026-09-11' })
  })

  test('/healthz and /readyz answer outside /api/v1; readyz names each backend', async () => {
    expect(await (await env.request('GET', '/healthz')).json()).toEqual({ status: 'ok' })
    const ready = await (await env.request('GET', '/readyz')).json()
    expect(ready.status).toBe('ready')
    expect(Object.values(ready.checks)).toEqual(['ok', 'ok'])
    expect(Object.keys(ready.checks)).toContain(env.deps.database.kind)
  })
})

describe('route-level deprecation', () => {
  test('a deprecated route sends Deprecation, Sunset (≥ 90 days later) and Link, and OpenAPI marks it', async () => {
    const { token } = await env.account()
    const res = await env.request('GET', '/api/v1/_test/deprecated', { token })
    expect(res.status).toBe(200)
    const since = Number(/^@(\d+)$/.exec(res.headers.get('deprecation')!)![1]) * 1000
    const sunset = Date.parse(res.headers.get('sunset')!)
    expect(sunset - since).toBeGreaterThanOrEqual(90 * 86_400_000)
    expect(res.headers.get('link')).toContain('rel="deprecation"')
    const doc = await (await env.request('GET', '/api/v1/openapi.json')).json()
    expect(doc.paths['/api/v1/_test/deprecated'].get.deprecated).toBe(true)
    expect(doc.paths['/api/v1/status'].get.deprecated).toBeUndefined()
    const plain = await env.request('GET', '/api/v1/me', { token })
    expect(plain.headers.get('deprecation')).toBeNull()
  })

  test('a sunset less than 90 days after deprecation is refused when the route is declared', () => {
    expect(() => op({ operationId: 'x', summary: 'x', tags: [], deprecation: { since: new Date('2026-10-01'), sunset: new Date('2026-11-01'), link: 'https://x' } })).toThrow(/90 days/)
  })
})

describe('a backend going down', () => {
  test('readyz answers 503 and status reports degraded', async () => {
    const down = await createTestEnv()
    try {
      await down.deps.database.close()
      const ready = await down.request('GET', '/readyz')
      expect(ready.headers.get('retry-after')).toBe('5')
      const body = await problem(ready, 503, 'service_unavailable')
      expect(Object.values(body.checks)).toContain('down')
      expect((await (await down.request('GET', '/api/v1/status')).json()).status).toBe('degraded')
    } finally {
      // Its database too: closed above, it is still there to drop (each run of the suite left one behind).
      await down.close()
    }
  })
})
