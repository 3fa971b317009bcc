// Each series' newest reading kept in the shared store as it is written (ingest/kept-latest.ts, issue 57 item 4):
// every latest answer, kept or not, is the newest reading per (device, channel) that the raw readings give, for any
// filter, window and page; the entries start over when the shared store loses them or a writer wrote past them into
// its in-process fallback; one account's entries never answer another's question. The server wraps the QuestDB
// store; on the SQL store (which keeps reading_latest in the write's own transaction) the test wraps it itself, so the
// rules run in every suite.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { keepingLatest } from '../../ingest/kept-latest.ts'
import type { RawRow, Reading, ReadingsFilter, ReadingsStore } from '../../ingest/stores/interface.ts'
import type { SharedStore } from '../../src/kv/interface.ts'
import { SeriesCatalogue } from '../../ingest/series.ts'
import { memoryStore } from '../../src/kv/memory.ts'
import { createTestEnv, cutOffShared, readingsStores, waitFor, type TestEnv } from '../helpers.ts'

const stores = readingsStores('readings-kept-latest')
const MIN = 60_000
const BASE = Date.UTC(2025, 8, 1)
/** The default window of `latest=true` (ingest/query.ts): all time, to a year ahead. */
const ALL_TIME = () => ({ from: 0, to: Date.now() + 366 * 86_400_000 })
const DEVICES = ['a', 'b', 'c'] as const
const CHANNELS = ['t1', 'h1'] as const
const MAPPINGS = [['temperature', 'env_1'], ['temperature', 'env_2'], [null, null]] as const

/** The newest reading per (device, channel) among `readings` matching `filter`, ordered by device then channel: what the raw readings say. */
function newestOf(readings: readonly Reading[], filter: ReadingsFilter): RawRow[] {
  const newest = new Map<string, RawRow>()
  for (const r of readings) {
    if (r.accountId !== filter.accountId || r.ts < filter.from || r.ts >= filter.to) continue
    if ((filter.deviceId !== undefined && r.deviceId !== filter.deviceId) || (filter.channel !== undefined && r.channel !== filter.channel)
      || (filter.metric !== undefined && r.metric !== filter.metric) || (filter.environmentId !== undefined && r.environmentId !== filter.environmentId)) continue
    const key = `${r.deviceId}\u0000${r.channel}`
    if ((newest.get(key)?.ts ?? -Infinity) < r.ts) newest.set(key, { ts: r.ts, device_id: r.deviceId, channel: r.channel, metric: r.metric, environment_id: r.environmentId, value: r.value })
  }
  return [...newest.values()].sort((x, y) => (x.device_id < y.device_id ? -1 : x.device_id > y.device_id ? 1 : x.channel < y.channel ? -1 : x.channel > y.channel ? 1 : 0))
}

/** Every page of the latest readings at `limit`, walked by keyset as the API walks them. */
async function walk(store: ReadingsStore, filter: ReadingsFilter, limit: number): Promise<RawRow[]> {
  const rows: RawRow[] = []
  for (let after: [string, string] | undefined; ;) {
    const page = await store.latest(filter, limit + 1, after)
    rows.push(...page.slice(0, limit))
    if (page.length <= limit) return rows
    after = [page[limit - 1]!.device_id, page[limit - 1]!.channel]
  }
}

for (const { name, overrides, drop } of stores) {
  describe(`latest readings kept as they are written (${name})`, () => {
    let env: TestEnv
    let store: ReadingsStore
    /** Where the answers of `store` came from (the server's metric). */
    const answers = () => ({ kept: env.deps.metrics.readingsLatest.get(['kept']), store: env.deps.metrics.readingsLatest.get(['store']) })
    /** Answers of the wrappings the tests make, counted apart: on QuestDB they wrap the server's, which counts its own. */
    const counted = { kept: 0, store: 0 }
    /** Wrapped as the server wraps the QuestDB store (src/deps.ts), over `shared`. */
    const wrap = (shared: SharedStore, count = (source: 'kept' | 'store') => { counted[source]++ }) => keepingLatest(env.deps.readings, shared, env.deps.series, { rawHorizon: () => -Infinity, onAnswer: count })
    beforeAll(async () => {
      env = await createTestEnv(overrides)
      store = name === 'QuestDB' ? env.deps.readings : wrap(env.deps.shared, (source) => env.deps.metrics.readingsLatest.inc([source]))
    })
    afterAll(async () => { await env?.close(); await drop() })
    /** Written as ingest writes; asked once QuestDB has applied what it acknowledged (the model is what is stored). */
    const write = async (target: ReadingsStore, readings: Reading[]) => {
      await target.write(readings)
      await waitFor(() => env.deps.readings.caughtUp(), 10_000)
    }

    test('random writes (late ones, remapped channels, readings sent again, some past a shared store that then lost its keys), filters, windows and pages: every answer is the raw readings\' newest', async () => {
      const before = { ...counted }
      await fc.assert(fc.asyncProperty(
        fc.array(fc.record({
          // Minutes from a few (so readings are often sent again) or from ten hours.
          readings: fc.array(fc.record({ device: fc.constantFrom(...DEVICES), channel: fc.constantFrom(...CHANNELS), minute: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 600 })), mapping: fc.integer({ min: 0, max: 2 }), value: fc.integer({ min: -5000, max: 5000 }).map((n) => n / 8 + 0.1) }), { minLength: 1, maxLength: 12 }),
          // Written straight to the store, and the shared store then empty (a Redis restarted): entries start over.
          lost: fc.boolean(),
        }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.record({
          filter: fc.constantFrom('none', 'device', 'channel', 'metric', 'environment'),
          // A window of minutes, one from a minute on to the default's end (asked after a write: it proves entries), or all time.
          window: fc.option(fc.tuple(fc.integer({ min: 0, max: 600 }), fc.option(fc.integer({ min: 1, max: 700 }), { nil: undefined })), { nil: undefined }),
          limit: fc.integer({ min: 1, max: 7 }),
        }), { minLength: 1, maxLength: 4 }),
        async (batches, questions) => {
          const owner = await env.account({ scopes: ['environment:read'] })
          // Over a shared store of its own, so it can lose its keys (on QuestDB, over the server's own wrapping).
          let kept = wrap(memoryStore())
          /** What the store holds per (device, channel, time): a reading sent again under another mapping is skipped by the SQL store and replaces the first on QuestDB (dedup upsert). */
          const stored = new Map<string, Reading>()
          for (const batch of batches) {
            /** Readings sent in this batch: a reading sent twice in one batch is sent again too. */
            const sent = new Map<string, Reading>()
            const readings = batch.readings.map((r): Reading => {
              const ts = BASE + r.minute * MIN
              // Sent again: the same value (a device resending), under the channel's new mapping on QuestDB. Kept
              // entries take the later of two readings at one time, as QuestDB does, the store they are kept for;
              // the SQL store keeps the first, so over it a reading sent again keeps its first mapping.
              const id = `${r.device}/${r.channel}/${ts}`
              const first = stored.get(id) ?? sent.get(id)
              const [metric, environmentId] = first && name !== 'QuestDB' ? [first.metric, first.environmentId] : MAPPINGS[r.mapping]!
              const reading = { accountId: owner.accountId, deviceId: `${r.device}_${owner.accountId}`, channel: r.channel, ts, value: first?.value ?? r.value, metric, environmentId }
              sent.set(id, reading)
              return reading
            })
            if (batch.lost) {
              await write(env.deps.readings, readings)
              kept = wrap(memoryStore())
            } else await write(kept, readings)
            for (const r of readings) {
              const id = `${r.deviceId.split('_')[0]}/${r.channel}/${r.ts}`
              if (name === 'QuestDB' || !stored.has(id)) stored.set(id, r)
            }
            for (const q of questions) {
              const filter: ReadingsFilter = { accountId: owner.accountId, ...ALL_TIME(), ...(q.window && { from: BASE + q.window[0] * MIN }), ...(q.window?.[1] && { to: BASE + (q.window[0] + q.window[1]) * MIN }) }
              if (q.filter === 'device') filter.deviceId = `b_${owner.accountId}`
              if (q.filter === 'channel') filter.channel = 't1'
              if (q.filter === 'metric') filter.metric = 'temperature'
              if (q.filter === 'environment') filter.environmentId = 'env_1'
              const question = JSON.stringify({ ...q, stored: stored.size })
              // Asked twice: the first answer may come from the store (and seed what the second reads).
              for (const round of ['first', 'again']) {
                expect({ question, round, rows: await walk(kept, filter, q.limit) }).toEqual({ question, round, rows: newestOf([...stored.values()], filter) })
              }
            }
          }
        },
      ), { numRuns: Number(process.env.KEPT_RUNS ?? 100) })
      // The property went through kept entries, and through the store.
      const after = { ...counted }
      expect(after.kept).toBeGreaterThan(before.kept)
      expect(after.store).toBeGreaterThan(before.store)
    }, 180_000)

    test('a room whose series all reported is answered from what is kept; a series with no reading is kept as none once the store says so', async () => {
      const [a, b] = [await env.account({ scopes: ['environment:read'] }), await env.account({ scopes: ['environment:read'] })]
      const room = (accountId: string, value: number): Reading[] => DEVICES.flatMap((d, i) => CHANNELS.map((channel) => ({ accountId, deviceId: `${d}_${accountId}`, channel, ts: BASE + i * MIN, value: value + i, metric: 'temperature', environmentId: 'env_1' })))
      await write(store, [...room(a.accountId, 10), ...room(b.accountId, 20)])
      // A series registered with no reading (a write that failed after registering it).
      await env.deps.series.idsOf([{ accountId: a.accountId, deviceId: `quiet_${a.accountId}`, channel: 't1', ts: BASE, value: 0, metric: 'temperature', environmentId: 'env_1' }])
      const filter = (accountId: string): ReadingsFilter => ({ accountId, environmentId: 'env_1', ...ALL_TIME() })
      const asked = async (accountId: string) => {
        const before = answers()
        const rows = await store.latest(filter(accountId), 100)
        const after = answers()
        return { rows, kept: after.kept - before.kept, store: after.store - before.store }
      }
      // The quiet series has no entry: the store answers, and says it has no reading.
      expect(await asked(a.accountId)).toEqual({ rows: newestOf(room(a.accountId, 10), filter(a.accountId)), kept: 0, store: 1 })
      expect(await asked(a.accountId)).toEqual({ rows: newestOf(room(a.accountId, 10), filter(a.accountId)), kept: 1, store: 0 })
      // Account b's identical room (same device names, same channels) is its own.
      const other = await asked(b.accountId)
      expect(other.rows).toEqual(newestOf(room(b.accountId, 20), filter(b.accountId)))
      expect(other.rows.every((r) => r.device_id.endsWith(b.accountId))).toBe(true)
      // A newer reading, a late one and the quiet series' first: in the next answer, still from what is kept.
      const more: Reading[] = [
        { accountId: a.accountId, deviceId: `a_${a.accountId}`, channel: 't1', ts: BASE + 10 * MIN, value: 99.5, metric: 'temperature', environmentId: 'env_1' },
        { accountId: a.accountId, deviceId: `b_${a.accountId}`, channel: 'h1', ts: BASE - MIN, value: -1, metric: 'temperature', environmentId: 'env_1' },
        { accountId: a.accountId, deviceId: `quiet_${a.accountId}`, channel: 't1', ts: BASE + 2 * MIN, value: 3.25, metric: 'temperature', environmentId: 'env_1' },
      ]
      await write(store, more)
      const expected = newestOf([...room(a.accountId, 10), ...more], filter(a.accountId))
      expect(expected.find((r) => r.device_id === `a_${a.accountId}` && r.channel === 't1')?.value).toBe(99.5)
      expect(await asked(a.accountId)).toEqual({ rows: expected, kept: 1, store: 0 })
    }, 60_000)

    test('a room\'s first ask seeds its account\'s other rooms with one read of the store, and no other account\'s', async () => {
      const [a, b] = [await env.account({ scopes: ['environment:read'] }), await env.account({ scopes: ['environment:read'] })]
      const site = (accountId: string, value: number): Reading[] => DEVICES.flatMap((d, i) => CHANNELS.map((channel) => ({ accountId, deviceId: `${d}_${accountId}`, channel, ts: BASE + i * MIN, value: value + i, metric: 'temperature', environmentId: `env_${i}` })))
      // Stored with no entries kept (a process just started); each account's three devices in three rooms.
      await write(env.deps.readings, [...site(a.accountId, 10), ...site(b.accountId, 20)])
      const reads: ReadingsFilter[] = []
      const counting = Object.assign(Object.create(env.deps.readings) as ReadingsStore, {
        latest: (filter: ReadingsFilter, ...rest: [number, ...unknown[]]) => {
          reads.push(filter)
          return (env.deps.readings.latest as (...args: unknown[]) => Promise<RawRow[]>)(filter, ...rest)
        },
      })
      const kept = keepingLatest(counting, memoryStore(), env.deps.series, { rawHorizon: () => -Infinity })
      // One window for every ask, as the API's default is one for asks within a minute.
      const window = ALL_TIME()
      const room = (accountId: string, i: number): ReadingsFilter => ({ accountId, environmentId: `env_${i}`, ...window })
      // Three rooms of account a asked at once: one read, of the whole account, answers all three.
      const answers = await Promise.all([0, 1, 2].map((i) => kept.latest(room(a.accountId, i), 100)))
      expect(answers).toEqual([0, 1, 2].map((i) => newestOf(site(a.accountId, 10), room(a.accountId, i))))
      expect(reads).toEqual([{ accountId: a.accountId, ...window }])
      // A newer reading in one room: answered from what is kept, no read.
      const newer: Reading = { accountId: a.accountId, deviceId: `b_${a.accountId}`, channel: 'h1', ts: BASE + 9 * MIN, value: 7.25, metric: 'temperature', environmentId: 'env_1' }
      await write(kept, [newer])
      expect(await kept.latest(room(a.accountId, 1), 100)).toEqual(newestOf([...site(a.accountId, 10), newer], room(a.accountId, 1)))
      expect(reads.length).toBe(1)
      // Account b's rooms (same device names, channels and rooms) were not seeded by a's read: its own read, its own rows.
      expect(await kept.latest(room(b.accountId, 2), 100)).toEqual(newestOf(site(b.accountId, 20), room(b.accountId, 2)))
      expect(reads.map((r) => r.accountId)).toEqual([a.accountId, b.accountId])
      expect(reads[1]!.environmentId).toBeUndefined()
    })

    test('a read proves entries only over a window no reading lies after, and series absent from it only on a complete first page', async () => {
      const owner = await env.account({ scopes: ['environment:read'] })
      const readings: Reading[] = ['c1', 'c2', 'c3'].flatMap((channel, i) => [1, 5].map((minute) => ({ accountId: owner.accountId, deviceId: `hub_${owner.accountId}`, channel, ts: BASE + minute * MIN, value: minute * 10 + i, metric: null, environmentId: null })))
      // Stored with no entries kept (a shared store that lost them).
      await write(env.deps.readings, readings)
      const kept = wrap(memoryStore())
      const ask = async (filter: ReadingsFilter, limit: number) => {
        const before = counted.kept
        const rows = await kept.latest(filter, limit)
        expect(rows).toEqual(newestOf(readings, filter).slice(0, limit))
        return counted.kept > before ? 'kept' : 'store'
      }
      const allTime: ReadingsFilter = { accountId: owner.accountId, ...ALL_TIME() }
      // Minute 1 is each channel's newest before minute 3, not its newest.
      expect(await ask({ ...allTime, to: BASE + 3 * MIN }, 10)).toBe('store')
      // A first page of one: c2 and c3 are beyond it, not without readings.
      expect(await ask(allTime, 1)).toBe('store')
      expect(await ask(allTime, 10)).toBe('store')
      expect(await ask(allTime, 10)).toBe('kept')
      expect(await ask(allTime, 1)).toBe('kept')
      expect(await ask({ ...allTime, to: BASE + 3 * MIN }, 10)).toBe('store')
    })

    test('a reading sent again under the channel\'s new mapping: the answer is the mapping the store holds', async () => {
      const owner = await env.account({ scopes: ['environment:read'] })
      const reading = (environmentId: string): Reading => ({ accountId: owner.accountId, deviceId: `hub_${owner.accountId}`, channel: 't1', ts: BASE, value: 21.5, metric: 'temperature', environmentId })
      const filter: ReadingsFilter = { accountId: owner.accountId, ...ALL_TIME() }
      await write(store, [reading('env_1')])
      await store.latest(filter, 10)
      expect((await store.latest(filter, 10)).map((r) => r.environment_id)).toEqual(['env_1'])
      await write(store, [reading('env_2')])
      // The SQL store skips a reading it holds; QuestDB's dedup upsert replaces it.
      const held = name === 'QuestDB' ? 'env_2' : 'env_1'
      for (let i = 0; i < 3; i++) expect((await store.latest(filter, 10)).map((r) => r.environment_id)).toEqual([held])
    })

    test('entries of another epoch (the shared store lost its keys) are not used; the store answers and they are kept anew', async () => {
      const owner = await env.account({ scopes: ['environment:read'] })
      const readings: Reading[] = CHANNELS.map((channel, i) => ({ accountId: owner.accountId, deviceId: `hub_${owner.accountId}`, channel, ts: BASE + i * MIN, value: i + 0.5, metric: null, environmentId: null }))
      await write(store, readings)
      const filter: ReadingsFilter = { accountId: owner.accountId, ...ALL_TIME() }
      const asked = async () => {
        const before = answers()
        expect(await store.latest(filter, 10)).toEqual(newestOf(readings, filter))
        const after = answers()
        return after.kept > before.kept ? 'kept' : 'store'
      }
      // The series' entries were made as they were registered, and raised by the write.
      expect([await asked(), await asked()]).toEqual(['kept', 'kept'])
      await env.deps.shared.set('readings-latest:epoch', 'another', 60_000)
      expect([await asked(), await asked()]).toEqual(['store', 'kept'])
    })

    test('a writer that wrote into its in-process fallback while the shared store was unreachable makes every entry start over once it answers again', async () => {
      // Two processes over one shared store ("Redis"): the writer reaches it through a fallback that can be cut off.
      const redis = memoryStore()
      const cut = cutOffShared(redis)
      const writerShared = cut.store
      const writer = wrap(writerShared)
      const reader = wrap(redis)
      const owner = await env.account({ scopes: ['environment:read'] })
      const reading = (channel: string, minute: number, value: number): Reading => ({ accountId: owner.accountId, deviceId: `hub_${owner.accountId}`, channel, ts: BASE + minute * MIN, value, metric: null, environmentId: null })
      const filter: ReadingsFilter = { accountId: owner.accountId, ...ALL_TIME() }
      const values = async (target: ReadingsStore) => (await target.latest(filter, 10)).map((r) => `${r.channel}=${r.value}`)
      await write(writer, [reading('h1', 1, 1), reading('t1', 1, 1)])
      expect(await values(reader)).toEqual(['h1=1', 't1=1'])
      expect(await values(reader)).toEqual(['h1=1', 't1=1'])
      cut.reachable = false
      // Stored, acknowledged, and raised in the writer's own memory only.
      await write(writer, [reading('h1', 2, 2)])
      expect(writerShared.primaryUp).toBe(false)
      // While this process sees the shared store unreachable it answers from the store.
      expect(await values(writer)).toEqual(['h1=2', 't1=1'])
      cut.reachable = true
      await waitFor(async () => writerShared.primaryUp, 2_000)
      await write(writer, [reading('t1', 3, 3)])
      // The reader's entry for h1 still holds minute 1; the epoch the writer started once it reached the store again
      // makes the reader ask the store, and keep what it says.
      const before = { ...counted }
      expect(await values(reader)).toEqual(['h1=2', 't1=3'])
      expect(await values(reader)).toEqual(['h1=2', 't1=3'])
      const after = { ...counted }
      expect({ kept: after.kept - before.kept, store: after.store - before.store }).toEqual({ kept: 1, store: 1 })
      await writerShared.close()
    })

    /** `store` with its latest reads counted. */
    const countingReads = (reads: ReadingsFilter[]) => Object.assign(Object.create(env.deps.readings) as ReadingsStore, {
      latest: (filter: ReadingsFilter, ...rest: [number, ...unknown[]]) => {
        reads.push(filter)
        return (env.deps.readings.latest as (...args: unknown[]) => Promise<RawRow[]>)(filter, ...rest)
      },
    })

    test('a site written from its first reading on is answered from what is kept, with no read of the store', async () => {
      const owner = await env.account({ scopes: ['environment:read'] })
      const reads: ReadingsFilter[] = []
      const kept = keepingLatest(countingReads(reads), memoryStore(), env.deps.series, { rawHorizon: () => -Infinity })
      const site: Reading[] = DEVICES.flatMap((d, i) => CHANNELS.map((channel, j) => ({ accountId: owner.accountId, deviceId: `${d}_${owner.accountId}`, channel, ts: BASE + (i + j) * MIN, value: i * 10 + j + 0.5, metric: 'temperature', environmentId: `env_${i % 2}` })))
      await write(kept, site)
      const window = ALL_TIME()
      const room = (i: number): ReadingsFilter => ({ accountId: owner.accountId, environmentId: `env_${i}`, ...window })
      expect(await Promise.all([0, 1].map((i) => kept.latest(room(i), 100)))).toEqual([0, 1].map((i) => newestOf(site, room(i))))
      // A late reading and a newer one: still answered from what is kept.
      const more: Reading[] = [{ ...site[0]!, ts: BASE - MIN, value: -7 }, { ...site[1]!, ts: BASE + 30 * MIN, value: 42.25 }]
      await write(kept, more)
      expect(await kept.latest({ accountId: owner.accountId, ...window }, 100)).toEqual(newestOf([...site, ...more], { accountId: owner.accountId, ...window }))
      expect(reads).toEqual([])
    })

    test('two processes registering one new series at once: whichever registers it, its entry holds the newest reading', async () => {
      const owner = await env.account({ scopes: ['environment:read'] })
      const redis = memoryStore()
      // Process A stops as it is about to make its entries for the new series, until let go: were the series visible
      // in the catalogue by then, B's write would raise no entry, and A's would then be made as none.
      let letGo!: () => void
      const held = new Promise<void>((resolve) => { letGo = resolve })
      let stopped!: () => void
      const reachedStop = new Promise<void>((resolve) => { stopped = resolve })
      const sharedA = Object.assign(Object.create(redis) as SharedStore, {
        claimEntries: async (...args: Parameters<SharedStore['claimEntries']>) => {
          stopped()
          await held
          return redis.claimEntries(...args)
        },
      })
      const processA = keepingLatest(env.deps.readings, sharedA, new SeriesCatalogue(env.deps.database), { rawHorizon: () => -Infinity })
      const processB = keepingLatest(env.deps.readings, redis, new SeriesCatalogue(env.deps.database), { rawHorizon: () => -Infinity })
      const reading = (minute: number, value: number): Reading => ({ accountId: owner.accountId, deviceId: `hub_${owner.accountId}`, channel: 't1', ts: BASE + minute * MIN, value, metric: null, environmentId: null })
      const writingA = write(processA, [reading(1, 1.5)])
      await reachedStop
      // B registers the series meanwhile (A's id is not in the catalogue yet), and stores a newer reading.
      await write(processB, [reading(2, 2.5)])
      letGo()
      await writingA
      const filter: ReadingsFilter = { accountId: owner.accountId, ...ALL_TIME() }
      const before = { ...counted }
      const reader = wrap(redis)
      expect([await reader.latest(filter, 10), await processA.latest(filter, 10)]).toEqual([newestOf([reading(1, 1.5), reading(2, 2.5)], filter), newestOf([reading(1, 1.5), reading(2, 2.5)], filter)])
      expect(counted.kept - before.kept).toBe(1)
      expect((await reader.latest(filter, 10))[0]!.value).toBe(2.5)
    })

    test('a write that fails, though it stored its readings: the answer is what the store holds, not what was kept', async () => {
      const owner = await env.account({ scopes: ['environment:read'] })
      const redis = memoryStore()
      // Stores the readings, then fails (an answer lost on the way back).
      const failing = Object.assign(Object.create(env.deps.readings) as ReadingsStore, {
        write: async (readings: Reading[]) => {
          await env.deps.readings.write(readings)
          throw new Error('the answer was lost')
        },
      })
      const good = wrap(redis)
      const failingWriter = keepingLatest(failing, redis, env.deps.series, { rawHorizon: () => -Infinity })
      const reading = (channel: string, minute: number, value: number): Reading => ({ accountId: owner.accountId, deviceId: `hub_${owner.accountId}`, channel, ts: BASE + minute * MIN, value, metric: null, environmentId: null })
      const filter: ReadingsFilter = { accountId: owner.accountId, ...ALL_TIME() }
      // h1 is kept at minute 1; t1 is new, so its entry is made (as none) before the write that fails.
      await write(good, [reading('h1', 1, 1)])
      expect(await good.latest(filter, 10)).toEqual(newestOf([reading('h1', 1, 1)], filter))
      await expect(failingWriter.write([reading('h1', 2, 2), reading('t1', 2, 3)])).rejects.toThrow('the answer was lost')
      await waitFor(() => env.deps.readings.caughtUp(), 10_000)
      const stored = [reading('h1', 2, 2), reading('t1', 2, 3)]
      const before = { ...counted }
      expect(await good.latest(filter, 10)).toEqual(newestOf(stored, filter))
      expect(await good.latest(filter, 10)).toEqual(newestOf(stored, filter))
      expect({ kept: counted.kept - before.kept, store: counted.store - before.store }).toEqual({ kept: 1, store: 1 })
    })

    test('a filter\'s series are listed once and kept, and listed again once any process registers a series of the account', async () => {
      const owner = await env.account({ scopes: ['environment:read'] })
      const redis = memoryStore()
      // The reading process: its listings counted, and one held back after reading the catalogue when asked to.
      const listings: ReadingsFilter[] = []
      let hold: Promise<void> | undefined
      const readerCatalogue = new SeriesCatalogue(env.deps.database)
      const listingCatalogue = Object.assign(Object.create(readerCatalogue) as SeriesCatalogue, {
        list: async (filter: ReadingsFilter) => {
          listings.push(filter)
          const rows = await readerCatalogue.list(filter)
          await hold
          return rows
        },
      })
      const reader = keepingLatest(env.deps.readings, redis, listingCatalogue, { rawHorizon: () => -Infinity })
      const writer = keepingLatest(env.deps.readings, redis, new SeriesCatalogue(env.deps.database), { rawHorizon: () => -Infinity })
      const reading = (deviceId: string, channel: string, minute: number, value: number): Reading => ({ accountId: owner.accountId, deviceId: `${deviceId}_${owner.accountId}`, channel, ts: BASE + minute * MIN, value, metric: 'temperature', environmentId: 'env_1' })
      const room: ReadingsFilter = { accountId: owner.accountId, environmentId: 'env_1', ...ALL_TIME() }
      const written = [reading('a', 't1', 1, 1.5)]
      await write(writer, written)
      expect(await reader.latest(room, 10)).toEqual(newestOf(written, room))
      expect(await reader.latest(room, 10)).toEqual(newestOf(written, room))
      expect(listings.length).toBe(1)
      // A newer reading of a series listed: no listing.
      written.push(reading('a', 't1', 2, 2.5))
      await write(writer, written.slice(-1))
      expect(await reader.latest(room, 10)).toEqual(newestOf(written, room))
      expect(listings.length).toBe(1)
      // A series registered by the other process: listed again.
      written.push(reading('b', 'h1', 3, 3.5))
      await write(writer, written.slice(-1))
      expect(await reader.latest(room, 10)).toEqual(newestOf(written, room))
      expect(listings.length).toBe(2)
      // A series registered after a listing read the catalogue, before it was kept: the next ask lists again.
      const device: ReadingsFilter = { ...room, deviceId: `b_${owner.accountId}` }
      let release!: () => void
      hold = new Promise((resolve) => { release = resolve })
      const asked = reader.latest(device, 10)
      await waitFor(async () => listings.length === 3, 2_000)
      const late = reading('b', 'x1', 4, 4.5)
      await write(writer, [late])
      release()
      hold = undefined
      // Asked before that write was acknowledged, the answer may hold it or not.
      expect([newestOf(written, device), newestOf([...written, late], device)]).toContainEqual(await asked)
      written.push(late)
      expect(await reader.latest(device, 10)).toEqual(newestOf(written, device))
      expect(await reader.latest(room, 10)).toEqual(newestOf(written, room))
      expect(listings.length).toBe(5)
    })
  })
}
