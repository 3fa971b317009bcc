// Device keys are limited without a shared-store round trip per request: counted locally, reconciled in the
// background (src/http/rate-limit.ts). These tests hold the limit to its promise and bound the overshoot.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { RateLimiter } from '../../src/http/rate-limit.ts'
import { memoryStore } from '../../src/kv/memory.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv({ deviceRateLimitPerMinute: 5, rateLimitWindowSeconds: 60 }) })
afterAll(async () => { await env.close() })

describe('device key rate limit', () => {
  test('one process: exactly the limit is admitted, then 429 with Retry-After and the device policy', async () => {
    const owner = await env.account({ scopes: ['sensors:write'] })
    const device = await (await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub' } })).json()
    // A device key's windows are aligned to the clock (every process shares them): one ending between these requests
    // starts the count over (remaining 4 where 3 was due, once in CI). Begin clear of the boundary.
    const intoWindow = Date.now() % 60_000
    if (intoWindow > 55_000) await Bun.sleep(60_000 - intoWindow + 50)
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) {
      const res = await env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings: [{ channel: 't1', value: i, ts: Date.now() - 10_000 + i }] } })
      statuses.push(res.status)
      expect(res.headers.get('ratelimit-policy')).toBe('"default";q=5;w=60')
      expect(Number(res.headers.get('x-ratelimit-remaining'))).toBe(4 - i)
    }
    expect(statuses).toEqual([202, 202, 202, 202, 202])
    const limited = await env.request('GET', `/api/v1/sensors/ping?key=${device.key}&t1=1`)
    await problem(limited, 429, 'rate_limited')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  test('several processes sharing a store: each learns what the others admitted; overshoot is bounded', async () => {
    const shared = memoryStore()
    const processes = [new RateLimiter(shared), new RateLimiter(shared), new RateLimiter(shared)]
    const limit = 30
    let admitted = 0
    // Each round every process takes one request, then reconciliation runs (as its 250 ms timer would).
    for (let round = 0; round < 40; round++) {
      for (const limiter of processes) if (limiter.local('dev-key', 60_000).count <= limit) admitted++
      await Promise.all(processes.map((l) => l.reconcile(60_000)))
    }
    // Between two reconciliations each process can admit at most what it saw itself: one request per round here.
    expect(admitted).toBeGreaterThanOrEqual(limit)
    expect(admitted).toBeLessThanOrEqual(limit + processes.length - 1)
    processes.forEach((l) => l.stop())
  })

  test('a shared store that cannot be reached keeps counting locally, and catches up when it returns', async () => {
    const shared = memoryStore()
    let down = true
    const flaky: typeof shared = { ...shared, addAll: (counts, ttl) => (down ? Promise.reject(new Error('down')) : shared.addAll(counts, ttl)) }
    const a = new RateLimiter(flaky)
    const b = new RateLimiter(shared)
    for (let i = 0; i < 4; i++) a.local('k', 60_000)
    await a.reconcile(60_000)
    expect(a.local('k', 60_000).count).toBe(5)
    down = false
    await a.reconcile(60_000)
    b.local('k', 60_000)
    await b.reconcile(60_000)
    expect(b.local('k', 60_000).count).toBe(7)
    a.stop(); b.stop()
  })
})
