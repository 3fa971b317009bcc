import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import type { SharedStore } from '../../src/kv/interface.ts'
import { memoryStore } from '../../src/kv/memory.ts'
import { redisStore } from '../../src/kv/redis.ts'
import { REAL_REDIS_URL, waitFor } from '../helpers.ts'

// The store this run uses (Redis when REDIS_URL is set), plus a second connection standing in for another process.
const prefix = `test:${randomUUID()}:`
const stores: SharedStore[] = []
async function open(): Promise<SharedStore> {
  const store = REAL_REDIS_URL ? await redisStore(REAL_REDIS_URL, prefix, { commandTimeoutMs: 500, connectTimeoutMs: 2_000 }) : memoryStore()
  stores.push(store)
  return store
}
afterAll(async () => { await Promise.all(stores.map((s) => s.close())) })

describe(`shared store pub/sub (${REAL_REDIS_URL ? 'redis' : 'memory'})`, () => {
  test('the publishing process has run its own handlers before publish returns (read-your-writes)', async () => {
    const store = await open()
    const seen: string[] = []
    await store.subscribe('channel', (message) => seen.push(message))
    const published = store.publish('channel', 'revoke:1')
    // Checked before any I/O could have happened: a caller that invalidates a cache must find it invalidated
    // on its very next request, whatever order the network delivers Redis's reply and its echo in.
    expect(seen).toEqual(['revoke:1'])
    await published
  })

  test.skipIf(!REAL_REDIS_URL)('another process receives the message too', async () => {
    const publisher = await open()
    const other = await open()
    const seen: string[] = []
    await other.subscribe('elsewhere', (message) => seen.push(message))
    await publisher.publish('elsewhere', 'revoke:2')
    await waitFor(async () => seen.includes('revoke:2'), 2_000)
  })
})

describe(`shared store counters (${REAL_REDIS_URL ? 'redis' : 'memory'})`, () => {
  test('addAll adds many counters in one call and returns each total; another connection adds to the same totals', async () => {
    const first = await open()
    expect(await first.addAll([{ key: 'a', amount: 3 }, { key: 'b', amount: 1 }], 60_000)).toEqual([3, 1])
    const second = REAL_REDIS_URL ? await open() : first
    expect(await second.addAll([{ key: 'b', amount: 4 }, { key: 'c', amount: 2 }, { key: 'a', amount: 1 }], 60_000)).toEqual([5, 2, 4])
    expect(await second.addAll([], 60_000)).toEqual([])
  })

  test('setMany sets many keys to one value; getMany reads them in order, null where absent or expired, from another connection too', async () => {
    const first = await open()
    await first.setMany(['m:a', 'm:b'], 'token-1', 60_000)
    await first.setMany(['m:short'], 'token-2', 30)
    const second = REAL_REDIS_URL ? await open() : first
    expect(await second.getMany(['m:b', 'm:none', 'm:a', 'm:short'])).toEqual(['token-1', null, 'token-1', 'token-2'])
    await Bun.sleep(60)
    expect(await second.getMany(['m:short', 'm:a'])).toEqual([null, 'token-1'])
    await second.setMany(['m:a'], 'token-3', 60_000)
    expect(await first.getMany(['m:a', 'm:b'])).toEqual(['token-3', 'token-1'])
    expect(await first.getMany([])).toEqual([])
    await first.setMany([], 'nothing', 60_000)
  })
})

describe(`shared store scripts (${REAL_REDIS_URL ? 'redis' : 'memory'})`, () => {
  // The scripts go to Redis by hash. Redis forgets them on a restart or a SCRIPT FLUSH; each must still run then.
  async function forgetScripts() {
    if (!REAL_REDIS_URL) return
    const { default: Redis } = await import('ioredis')
    const raw = new Redis(REAL_REDIS_URL)
    try { expect(await raw.script('FLUSH')).toBe('OK') } finally { raw.disconnect() }
  }

  test('a window counts hits and says when it ends, also after Redis forgot the script', async () => {
    const store = await open()
    expect(await store.hit('window', 60_000)).toEqual({ count: 1, resetMs: expect.any(Number) })
    await forgetScripts()
    const second = await store.hit('window', 60_000)
    expect(second.count).toBe(2)
    expect(second.resetMs).toBeGreaterThan(50_000)
    expect(second.resetMs).toBeLessThanOrEqual(60_000)
  })

  test('slots are taken up to the limit and given back; a lock is released only by its token', async () => {
    const store = await open()
    await forgetScripts()
    const first = await store.takeSlot('slots', 2, 60_000)
    const second = await store.takeSlot('slots', 2, 60_000)
    expect(first).toEqual(expect.any(String))
    expect(second).toEqual(expect.any(String))
    expect(await store.takeSlot('slots', 2, 60_000)).toBeNull()
    await store.giveSlot('slots', first!)
    expect(await store.takeSlot('slots', 2, 60_000)).toEqual(expect.any(String))

    const lock = await store.acquire('lock', 60_000)
    expect(lock).toEqual(expect.any(String))
    await forgetScripts()
    await store.release('lock', 'not-the-token')
    expect(await store.acquire('lock', 60_000)).toBeNull()
    await store.release('lock', lock!)
    expect(await store.acquire('lock', 60_000)).toEqual(expect.any(String))
  })

  test('keepNewest keeps the entry of greatest order per key, whoever writes last; equal orders replace; only where held if asked; it expires', async () => {
    const first = await open()
    const second = REAL_REDIS_URL ? await open() : first
    await first.keepNewest([['n:a', 200, 'e1 20.5'], ['n:b', 0, 'e1 none'], ['n:short', 5, 'x']], 60_000)
    // Older orders leave what is held; a newer one and an equal one replace it; keys absent are set.
    await second.keepNewest([['n:a', 150, 'e1 late'], ['n:b', 1_733_000_000_123, 'e1 -3.25'], ['n:c', 7, 'e2 1e-7']], 60_000)
    await second.keepNewest([['n:a', 200, 'e2 21']], 60_000)
    expect(await first.getMany(['n:a', 'n:b', 'n:c', 'n:none'])).toEqual(['200 e2 21', '1733000000123 e1 -3.25', '7 e2 1e-7', null])
    // In one call, a key given twice ends with its greatest order.
    await first.keepNewest([['n:d', 9, 'nine'], ['n:d', 3, 'three']], 60_000)
    expect(await second.getMany(['n:d'])).toEqual(['9 nine'])
    // Only where held: n:a is raised, n:e stays absent.
    await second.keepNewest([['n:a', 201, 'e2 22'], ['n:e', 1, 'x']], 60_000, true)
    expect(await first.getMany(['n:a', 'n:e'])).toEqual(['201 e2 22', null])
    await first.keepNewest([['n:short', 6, 'y']], 30)
    await Bun.sleep(60)
    expect(await second.getMany(['n:short'])).toEqual([null])
    await first.keepNewest([], 60_000)
  })
})
