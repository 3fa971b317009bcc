// CORS for browser apps (issue 24): with CORS_ORIGINS, a page on an allowed origin calls the API from Chromium
// (preflight answered without a key; RateLimit, ETag, X-Request-Id and Idempotent-Replayed readable), a page on
// another origin is refused by the browser, and without CORS_ORIGINS no CORS header is sent at all.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { freePort } from '../../bench/lib/processes.ts'
import { createTestEnv, type TestEnv } from '../helpers.ts'

const CHROMIUM = '/usr/bin/chromium'

/** A page server on its own loopback port: its origin is `http://127.0.0.1:<port>`. */
function pageServer() {
  const port = freePort()
  const server = Bun.serve({ hostname: '127.0.0.1', port, fetch: () => new Response('<!doctype html><title>app</title><p>app</p>', { headers: { 'content-type': 'text/html' } }) })
  return { origin: `http://127.0.0.1:${port}`, stop: () => server.stop(true) }
}

describe('CORS', () => {
  let env: TestEnv
  let token: string
  let allowed: ReturnType<typeof pageServer>
  let other: ReturnType<typeof pageServer>

  beforeAll(async () => {
    allowed = pageServer()
    other = pageServer()
    env = await createTestEnv({ corsOrigins: [allowed.origin] })
    token = (await env.account({ scopes: ['animals:read', 'animals:write', 'activities:write'] })).token
  })
  afterAll(async () => {
    await env?.close()
    allowed?.stop()
    other?.stop()
  })

  test('a preflight from an allowed origin is answered without a key; another origin gets no CORS headers', async () => {
    const preflight = await env.request('OPTIONS', '/api/v1/animals', { headers: { origin: allowed.origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' } })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe(allowed.origin)
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST')
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Authorization.*Idempotency-Key/)
    expect(preflight.headers.get('access-control-allow-credentials')).toBeNull()
    const stranger = await env.request('OPTIONS', '/api/v1/animals', { headers: { origin: other.origin, 'access-control-request-method': 'POST' } })
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull()
    const plain = await env.request('GET', '/api/v1/animals', { token, headers: { origin: allowed.origin } })
    expect(plain.headers.get('access-control-allow-origin')).toBe(allowed.origin)
    expect(plain.headers.get('access-control-expose-headers')).toMatch(/RateLimit.*ETag.*X-Request-Id.*Idempotent-Replayed/)
    // Errors carry them too, so a browser app can read the problem.
    const refused = await env.request('GET', '/api/v1/animals', { headers: { origin: allowed.origin } })
    expect(refused.status).toBe(401)
    expect(refused.headers.get('access-control-allow-origin')).toBe(allowed.origin)
  })

  test('without CORS_ORIGINS, no CORS header is sent and a preflight is refused like any request without a key', async () => {
    const closed = await createTestEnv()
    try {
      const preflight = await closed.request('OPTIONS', '/api/v1/animals', { headers: { origin: allowed.origin, 'access-control-request-method': 'GET' } })
      expect(preflight.status).toBe(401)
      expect(preflight.headers.get('access-control-allow-origin')).toBeNull()
      const key = await closed.account({ scopes: ['animals:read'] })
      const plain = await closed.request('GET', '/api/v1/animals', { token: key.token, headers: { origin: allowed.origin } })
      expect(plain.headers.get('access-control-allow-origin')).toBeNull()
    } finally {
      await closed.close()
    }
  })

  test.skipIf(!existsSync(CHROMIUM))('in Chromium: a page on the allowed origin lists, creates and replays; a page on another origin is refused', async () => {
    const { chromium } = await import('playwright-core')
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'], timeout: 30_000 })
    try {
      const page = await browser.newPage()
      await page.goto(allowed.origin)
      const seen = await page.evaluate(async ({ api, token }) => {
        const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': 'cors-1' }
        const body = JSON.stringify({ name: 'Browser', species_id: 'python-regius' })
        const list = await fetch(`${api}/api/v1/animals`, { headers: { authorization: `Bearer ${token}` } })
        const created = await fetch(`${api}/api/v1/animals`, { method: 'POST', headers, body })
        const animal = await created.json()
        const read = await fetch(`${api}/api/v1/animals/${animal.id}`, { headers: { authorization: `Bearer ${token}` } })
        return {
          animalId: animal.id as string,
          list: { status: list.status, rateLimit: list.headers.get('ratelimit'), requestId: list.headers.get('x-request-id') },
          created: { status: created.status, etag: created.headers.get('etag') },
          read: { status: read.status, etag: read.headers.get('etag') },
        }
      }, { api: env.baseUrl, token })
      expect(seen.animalId).toMatch(/^anm_/)
      expect(seen.list).toEqual({ status: 200, rateLimit: expect.stringMatching(/^"default";r=\d+;t=\d+$/), requestId: expect.stringMatching(/^req_/) })
      expect(seen.created).toEqual({ status: 201, etag: '"v1"' })
      expect(seen.read).toEqual({ status: 200, etag: '"v1"' })
      // An idempotent create replayed from the page: the browser may read Idempotent-Replayed.
      const replay = await page.evaluate(async ({ api, token, animalId }) => {
        const send = () => fetch(`${api}/api/v1/activities`, {
          method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': 'cors-2' },
          body: JSON.stringify({ animal_id: animalId, type: 'handling', details: { minutes: 5 } }),
        })
        const first = await send()
        const again = await send()
        return { first: first.status, again: again.status, replayed: again.headers.get('idempotent-replayed') }
      }, { api: env.baseUrl, token, animalId: seen.animalId })
      expect(replay).toEqual({ first: 201, again: 201, replayed: 'true' })

      const stranger = await browser.newPage()
      await stranger.goto(other.origin)
      const refused = await stranger.evaluate(async ({ api, token }) => {
        try { await fetch(`${api}/api/v1/animals`, { headers: { authorization: `Bearer ${token}` } }); return 'answered' } catch (error) { return String(error) }
      }, { api: env.baseUrl, token })
      expect(refused).toMatch(/TypeError/)
    } finally {
      await browser.close()
    }
  })
})
