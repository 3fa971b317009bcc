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

  test('entries: a claim takes every key not of the kept tag; raises move held keys forward, keeping their tag; a settle tags only its own claims, at the greater order', async () => {
    const first = await open()
    const second = REAL_REDIS_URL ? await open() : first
    // e:a is held for the generation e1; e:b of an older one, e:c not at all.
    await first.claimEntries([['e:a', 'g:a'], ['e:b', 'g:b'], ['e:c', 'g:c']], '?r0', 'e0', 60_000)
    await first.settleEntries([['e:a', 1_733_000_000_123, '-3.25']], '?r0', 'e1', 60_000)
    await first.settleEntries([['e:b', 7, '1e-7']], '?r0', 'e0', 60_000)
    // Settled, a key is no longer under the claim: settling it again leaves it.
    await first.settleEntries([['e:b', 9, 'x']], '?r0', 'e0', 60_000)
    expect(await second.getMany(['e:a', 'e:b', 'e:c'])).toEqual(['1733000000123 e1 -3.25', '7 e0 1e-7', '-1 ?r0 -'])
    // A reader claims what is not of e1: e:a stays, e:b and e:c are claimed (e:c taken over from ?r0).
    await second.claimEntries([['e:a', 'g:a'], ['e:b', 'g:b'], ['e:c', 'g:c']], '?r1', 'e1', 60_000)
    expect(await first.getMany(['e:a', 'e:b', 'e:c'])).toEqual(['1733000000123 e1 -3.25', '-1 ?r1 -', '-1 ?r1 -'])
    // Writes meanwhile: an older order leaves a key, a newer or equal one raises it, keeping its tag; e:d is not held.
    await first.raiseEntries([['e:a', 1_733_000_000_000, 'late', 'g:a', 1_733_000_000_000], ['e:b', 50, 'fifty', 'g:b', 50], ['e:d', 3, 'x', 'g:d', 3]], 60_000)
    await second.raiseEntries([['e:a', 1_733_000_000_123, 'again', 'g:a', 1_733_000_000_123]], 60_000)
    expect(await first.getMany(['e:a', 'e:b', 'e:d'])).toEqual(['1733000000123 e1 again', '50 ?r1 fifty', null])
    // The older reader's settle finds its claims taken over and leaves them; the newer one settles each at the
    // greater of what it found and what was raised meanwhile, and removes what it could not tell.
    await first.settleEntries([['e:b', 10, 'ten'], ['e:c', 10, 'ten']], '?r0', 'e1', 60_000)
    await second.settleEntries([['e:b', 40, 'forty'], ['e:c', undefined, '']], '?r1', 'e1', 60_000)
    expect(await first.getMany(['e:b', 'e:c'])).toEqual(['50 e1 fifty', null])
    await first.claimEntries([['e:c', 'g:c']], '?r2', 'e1', 60_000)
    await first.settleEntries([['e:c', 0, 'none']], '?r2', 'e1', 60_000)
    await first.raiseEntries([['e:c', 20, '2', 'g:c', 20]], 30)
    await Bun.sleep(60)
    expect(await second.getMany(['e:c'])).toEqual([null])
    await first.claimEntries([], '?r3', 'e1', 60_000)
    await first.raiseEntries([], 60_000)
    await first.settleEntries([], '?r3', 'e1', 60_000)
  })

  test('entries of one group: a raise taking over orders removes the others holding one of them or under a claim, and no other', async () => {
    const first = await open()
    const second = REAL_REDIS_URL ? await open() : first
    // A channel's three series (group g:1), another channel's (g:2) and one held before it joined any group.
    await first.claimEntries([['s:a', 'g:1'], ['s:b', 'g:1'], ['s:c', 'g:1'], ['s:d', 'g:2'], ['s:x', 'g:x']], '?r', 'e1', 60_000)
    await first.settleEntries([['s:a', 100, 'a'], ['s:b', 150, 'b'], ['s:d', 150, 'd'], ['s:x', 150, 'x']], '?r', 'e1', 60_000)
    // s:a takes over 140..160 (its readings stored again): s:b (at 150) and s:c (claimed) go; s:a is raised; s:d
    // (another group) and s:x stay.
    await second.raiseEntries([['s:a', 160, 'a2', 'g:1', 140]], 60_000)
    expect(await first.getMany(['s:a', 's:b', 's:c', 's:d', 's:x'])).toEqual(['160 e1 a2', null, null, '150 e1 d', '150 e1 x'])
    // Removed keys left the group: claimed and settled again, a takeover outside their order leaves them.
    await first.claimEntries([['s:b', 'g:1']], '?q', 'e1', 60_000)
    await first.settleEntries([['s:b', 90, 'b2']], '?q', 'e1', 60_000)
    await second.raiseEntries([['s:a', 170, 'a3', 'g:1', 161]], 60_000)
    expect(await first.getMany(['s:a', 's:b'])).toEqual(['170 e1 a3', '90 e1 b2'])
    // A raise of a key not held removes the others all the same, and sets nothing.
    await second.raiseEntries([['s:e', 95, 'e', 'g:1', 85]], 60_000)
    expect(await first.getMany(['s:a', 's:b', 's:e'])).toEqual(['170 e1 a3', null, null])
  })
})
