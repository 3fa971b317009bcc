import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestEnv, problem, waitFor, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv({ rateLimitPerMinute: 5, rateLimitWindowSeconds: 2 }) })
afterAll(async () => { await env.close() })

describe('rate limits per key', () => {
  test('headers count down, then 429 with Retry-After, then the window resets', async () => {
    const { token } = await env.account()
    const remaining: number[] = []
    for (let i = 0; i < 5; i++) {
      const res = await env.request('GET', '/api/v1/me', { token })
      expect(res.status).toBe(200)
      expect(res.headers.get('ratelimit-policy')).toBe('"default";q=5;w=2')
      expect(res.headers.get('x-ratelimit-limit')).toBe('5')
      const r = Number(res.headers.get('x-ratelimit-remaining'))
      expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"default";r=${r};t=[12]$`))
      expect(Number(res.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000))
      remaining.push(r)
      const me = await res.json()
      expect(me.rate_limits).toMatchObject({ limit: 5, remaining: r, window_seconds: 2 })
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0])
    const limited = await env.request('GET', '/api/v1/me', { token })
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0')
    await problem(limited, 429, 'rate_limited')

    // Asked again until the window has passed (Retry-After says when, at most 2 s), not after a fixed sleep.
    let after = limited
    await waitFor(async () => (after = await env.request('GET', '/api/v1/me', { token })).status === 200, 5_000, 100)
    expect(after.status).toBe(200)
    expect(after.headers.get('x-ratelimit-remaining')).toBe('4')
  })

  test('each key has its own budget, and the Professional plan doubles it', async () => {
    const a = await env.account()
    const b = await env.account()
    for (let i = 0; i < 6; i++) await env.request('GET', '/api/v1/me', { token: a.token })
    await problem(await env.request('GET', '/api/v1/me', { token: a.token }), 429, 'rate_limited')
    expect((await env.request('GET', '/api/v1/me', { token: b.token })).status).toBe(200)
    const pro = await env.account({ plan: 'professional' })
    const res = await env.request('GET', '/api/v1/me', { token: pro.token })
    expect(res.headers.get('x-ratelimit-limit')).toBe('10')
  })

  test('concurrent requests never over-admit: exactly the limit passes', async () => {
    const { token } = await env.account()
    const statuses = await Promise.all(Array.from({ length: 20 }, () => env.request('GET', '/api/v1/me', { token }).then((r) => r.status)))
    expect(statuses.filter((s) => s === 200).length).toBe(5)
    expect(statuses.filter((s) => s === 429).length).toBe(15)
  })

  test('public routes carry no rate-limit headers', async () => {
    const res = await env.request('GET', '/api/v1/status')
    expect(res.headers.get('ratelimit')).toBeNull()
  })
})
