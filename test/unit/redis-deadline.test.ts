// Redis commands' deadline (src/kv/redis.ts armDeadline): a command Redis answered in time is not failed because
// this process stood still past its deadline (the reply unread in the socket); one Redis does not answer in time
// still fails, so the service turns to its in-process stand-in (kv/fallback.ts). Against a real Redis.
import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import Redis from 'ioredis'
import type { SharedStore } from '../../src/kv/interface.ts'
import { redisStore } from '../../src/kv/redis.ts'
import { REAL_REDIS_URL } from '../helpers.ts'

const DEADLINE_MS = 100
/** Keeps this process's one thread busy for `ms`: what a long garbage collection or a large page does to it. */
const standStill = (ms: number) => {
  const until = performance.now() + ms
  while (performance.now() < until) { /* busy */ }
}

describe.skipIf(!REAL_REDIS_URL)('Redis command deadlines', () => {
  const prefix = `test:${randomUUID()}:`
  const opened: SharedStore[] = []
  const open = async () => {
    const store = await redisStore(REAL_REDIS_URL!, prefix, { commandTimeoutMs: DEADLINE_MS, connectTimeoutMs: 2_000 })
    opened.push(store)
    return store
  }
  afterAll(async () => { await Promise.all(opened.map((store) => store.close())) })

  test('a command answered while this process stood still past its deadline is not failed (commands, scripts and batches)', async () => {
    const store = await open()
    await store.set('k', 'v', 60_000)
    // ioredis's own commandTimeout failed half of these (the reply was read after the deadline's timer ran).
    for (let i = 0; i < 10; i++) {
      const answers = Promise.all([store.get('k'), store.hit(`hits:${i}`, 60_000), store.getMany(['k', 'absent'])])
      standStill(3 * DEADLINE_MS)
      expect(await answers).toEqual(['v', { count: 1, resetMs: expect.any(Number) }, ['v', null]])
    }
  })

  test('a command Redis does not answer within its deadline fails', async () => {
    const store = await open()
    await store.get('k')
    const admin = new Redis(REAL_REDIS_URL!)
    try {
      // Redis holds every client's commands for 400 ms: ours is unanswered past its deadline, with this process idle.
      await admin.call('client', 'pause', '400', 'ALL')
      const started = performance.now()
      await expect(store.get('k')).rejects.toThrow('Command timed out')
      const waited = performance.now() - started
      expect(waited).toBeGreaterThanOrEqual(DEADLINE_MS - 5)
      expect(waited).toBeLessThan(400)
    } finally {
      await admin.call('client', 'unpause').catch(() => {})
      admin.disconnect()
    }
  })
})
