// Redis is an accelerator, not a single point of failure: a private redis-server of the test's own is killed under
// the running service and started again. Meanwhile authenticated requests keep working (no 500, each answered
// within 2 s), idempotent writes still never write twice, /readyz and /status say what is down, and the service
// goes back to Redis by itself once it answers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import type { FallbackStore } from '../../src/kv/fallback.ts'
import { freePort } from '../../bench/lib/processes.ts'
import { createTestEnv, waitFor, type TestEnv } from '../helpers.ts'

const redisServer = Bun.which('redis-server')
if (!redisServer) console.warn('redis-outage.test: skipped: no redis-server binary on PATH to start a private Redis')


/** A redis-server of our own on `port`, in the foreground so the test can kill it. */
async function startRedis(port: number) {
  const proc = Bun.spawn([redisServer!, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdout: 'ignore', stderr: 'ignore' })
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  probe.on('error', () => {})
  await waitFor(async () => { try { await probe.connect(); await probe.ping(); return true } catch { return false } }, 10_000, 50)
  probe.disconnect()
  return proc
}

/** Sends a request and fails the test on a 5xx or an answer slower than 2 s. */
async function timed(env: TestEnv, method: string, path: string, options: Parameters<TestEnv['request']>[2] = {}) {
  const started = performance.now()
  const response = await env.request(method, path, options)
  const ms = performance.now() - started
  expect({ path, slow: ms > 2_000 }).toEqual({ path, slow: false })
  return response
}

describe.skipIf(!redisServer)('Redis down and back', () => {
  let env: TestEnv
  let port: number
  let redis: Awaited<ReturnType<typeof startRedis>>
  beforeAll(async () => {
    port = freePort()
    redis = await startRedis(port)
    env = await createTestEnv({ redisUrl: `redis://127.0.0.1:${port}`, redisCommandTimeoutMs: 300, redisConnectTimeoutMs: 500 })
  })
  afterAll(async () => {
    await env?.close()
    redis?.kill('SIGKILL')
  })

  test('authenticated requests keep working, writes stay idempotent, and Redis is used again once back', async () => {
    const key = await env.account({ scopes: ['animals:write', 'activities:write', 'activities:read'] })
    const shared = env.deps.shared as FallbackStore
    const animal = await (await timed(env, 'POST', '/api/v1/animals', { token: key.token, body: { name: 'Outage', species_id: 'python-regius' } })).json()
    const activity = (n: number) => ({ animal_id: animal.id, type: 'weight', occurred_at: `2026-11-0${n}T10:00:00.000Z`, details: { grams: 1500 + n } })
    expect((await timed(env, 'GET', '/api/v1/me', { token: key.token })).status).toBe(200)
    expect(shared.primaryUp).toBe(true)

    redis.kill('SIGKILL')
    await redis.exited

    const me = await timed(env, 'GET', '/api/v1/me', { token: key.token })
    expect(me.status).toBe(200)
    expect(me.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/)
    expect(shared.primaryUp).toBe(false)

    const first = await timed(env, 'POST', '/api/v1/activities', { token: key.token, body: activity(1), headers: { 'idempotency-key': 'outage-1' } })
    expect(first.status).toBe(201)
    const created = await first.json()
    const replay = await timed(env, 'POST', '/api/v1/activities', { token: key.token, body: activity(1), headers: { 'idempotency-key': 'outage-1' } })
    expect(replay.status).toBe(201)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect((await replay.json()).id).toBe(created.id)
    const listed = await (await timed(env, 'GET', `/api/v1/activities?animal_id=${animal.id}`, { token: key.token })).json()
    expect(listed.data.map((a: { id: string }) => a.id)).toEqual([created.id])

    // /readyz answers from the last background probe, which sees the outage within a probe or two.
    await waitFor(async () => (await (await timed(env, 'GET', '/readyz')).json()).checks.redis === 'down', 5_000, 50)
    const ready = await timed(env, 'GET', '/readyz')
    expect(ready.status).toBe(200)
    expect(await ready.json()).toMatchObject({ status: 'degraded', checks: { redis: 'down' } })
    expect((await (await timed(env, 'GET', '/api/v1/status')).json()).status).toBe('degraded')

    redis = await startRedis(port)
    const recoveredIn = await waitFor(async () => shared.primaryUp, 10_000, 50)
    console.log(`redis-outage.test: back on Redis ${Math.round(recoveredIn)} ms after it answered again`)
    expect((await timed(env, 'GET', '/api/v1/me', { token: key.token })).status).toBe(200)
    // The request above was counted in Redis again, not in the stand-in.
    const direct = new Redis({ port, host: '127.0.0.1' })
    try {
      expect(await direct.exists(`${env.config.redisPrefix}rl:${key.keyId}`)).toBe(1)
    } finally { direct.disconnect() }
    await waitFor(async () => (await (await timed(env, 'GET', '/readyz')).json()).status === 'ready', 5_000, 50)
    const readyAgain = await timed(env, 'GET', '/readyz')
    expect(await readyAgain.json()).toMatchObject({ status: 'ready', checks: { redis: 'ok' } })
  })
})
