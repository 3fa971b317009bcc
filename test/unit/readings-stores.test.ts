// The two readings stores answer alike: the same generated readings written to the SQL store and to QuestDB
// give the same rows for every kind of query. Runs only when QUESTDB_ILP and QUESTDB_PG_URL point at a server.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { bucketPage } from '../../ingest/planner.ts'
import { groupKey, NO_DEADLINE, type Aggregate, type Fill, type Grouping, type IntervalName, type ReadingsFilter, type ReadingsStore, type Reading, type SeriesPosition } from '../../ingest/stores/interface.ts'
import { questdbStore, SPLIT_READ_ROWS } from '../../ingest/stores/questdb.ts'
import { sqlStore } from '../../ingest/stores/sql.ts'
import { loadConfig } from '../../src/config.ts'
import { dropQuestdbTable, createTestEnv, waitFor, type TestEnv } from '../helpers.ts'

const QUESTDB_ILP = process.env.QUESTDB_ILP || undefined
const QUESTDB_PG_URL = process.env.QUESTDB_PG_URL || undefined
const enabled = Boolean(QUESTDB_ILP && QUESTDB_PG_URL)
if (!enabled) console.log('readings-stores.test: QuestDB tests skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run them against a QuestDB server')

const table = `hrs_test_readings_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
let env: TestEnv
let sql: ReadingsStore
let quest: ReadingsStore

/**
 * A deterministic data set: 3 devices × 3 channels, one reading every 37 s over 6 hours, some unmapped; dev_a/t1 is
 * silent 08:00–09:30; dev_b/h1 moves to another environment at 09:07, within a bucket of most intervals (a channel
 * with two variants there: its bucket takes the metric and environment of the later).
 */
function generate(accountId: string, other: string): Reading[] {
  let seed = 42
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
  const base = Date.UTC(2026, 10, 20, 6, 0, 0)
  const out: Reading[] = []
  for (const device of ['dev_a', 'dev_b', 'dev_c']) {
    for (const channel of ['t1', 'h1', 'x9']) {
      for (let ts = base + Math.floor(random() * 37_000); ts < base + 6 * 3_600_000; ts += 37_000) {
        if (device === 'dev_a' && channel === 't1' && ts >= base + 2 * 3_600_000 && ts < base + 3.5 * 3_600_000) continue
        out.push({
          accountId: device === 'dev_c' ? other : accountId, deviceId: device, channel, ts, value: Math.round(random() * 10_000) / 100,
          metric: channel === 'x9' ? null : channel === 't1' ? 'temperature' : 'humidity',
          environmentId: channel === 'x9' ? null : device === 'dev_b' && channel === 'h1' && ts >= base + 3 * 3_600_000 + 7 * 60_000 ? 'env_moved' : `env_${device}`,
        })
      }
    }
  }
  return out
}

/** At least the series of the data set (9): the planner sizes its stretches and series lists by it. */
const SCOPE = { series: 20, metrics: ['humidity', 'temperature'] }

const round = (rows: object[]) => JSON.parse(JSON.stringify(rows, (_, v) => (typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(10)) : v)))

/** Every row of a query, page by page, each page resuming after the last row of the one before. */
async function pages(store: ReadingsStore, filter: ReadingsFilter, limit: number, interval?: IntervalName, aggregates: Aggregate[] = ['avg'], fill: Fill = 'none', groupBy: Grouping = 'series') {
  const all: object[] = []
  let after: SeriesPosition | undefined
  for (;;) {
    const rows = interval ? await bucketPage(store, filter, { interval, aggregates, fill, groupBy }, limit, after, NO_DEADLINE, SCOPE) : await store.raw(filter, limit, after)
    all.push(...rows)
    if (rows.length < limit) return all
    const last = rows[rows.length - 1]!
    after = [last.ts, ...groupKey(last, interval ? groupBy : 'series')]
  }
}

describe('paging buckets (SQL store, always run)', () => {
  test('pages of buckets, each resuming after the last, give exactly the rows of one big page', async () => {
    const own = await createTestEnv()
    try {
      const store = sqlStore(own.deps.database)
      const data = generate('acct_a', 'acct_b')
      for (let i = 0; i < data.length; i += 1000) await store.write(data.slice(i, i + 1000))
      const filter = { accountId: 'acct_a', from: Date.UTC(2026, 10, 20, 6, 7, 0), to: Date.UTC(2026, 10, 20, 13, 0, 0) }
      for (const interval of ['1m', '15m', '1h'] as const) {
        const whole = await bucketPage(store, filter, { interval, aggregates: ['avg', 'count'], fill: 'none', groupBy: 'series' }, 100_000, undefined, NO_DEADLINE, SCOPE)
        expect(whole.length).toBeGreaterThan(10)
        expect({ interval, rows: round(await pages(store, filter, 40, interval, ['avg', 'count'])) }).toEqual({ interval, rows: round(whole) })
      }
    } finally {
      await own.close()
    }
  })
})

describe('writing to the SQL store (always run)', () => {
  test('a reading sent twice in one batch, under two mappings, is stored as it came first, and so are its latest value and rollups', async () => {
    const own = await createTestEnv()
    try {
      const store = sqlStore(own.deps.database)
      const ts = Date.UTC(2026, 10, 20, 6, 0, 0)
      // Each channel's reading twice, the second under the channel's new mapping (another series): which one a sort
      // met first was chance, and the same batch stored some of each.
      const channels = Array.from({ length: 200 }, (_, i) => `c${i}`)
      const sent = (environmentId: string, value: number, channel: string): Reading => ({ accountId: 'acct_twice', deviceId: 'dev_twice', channel, ts, value, metric: 'temperature', environmentId })
      await store.write(channels.flatMap((channel) => [sent('env_first', 1, channel), sent('env_second', 2, channel)]))
      const filter = { accountId: 'acct_twice', from: ts, to: ts + 1 }
      const stored = await store.raw(filter, 1000)
      expect(stored.length).toBe(channels.length)
      expect(new Set(stored.map((r) => `${r.environment_id} ${r.value}`))).toEqual(new Set(['env_first 1']))
      const latest = await store.latest({ ...filter, to: Date.now() + 86_400_000 }, 1000)
      expect(new Set(latest.map((r) => `${r.environment_id} ${r.value}`))).toEqual(new Set(['env_first 1']))
      const second = await bucketPage(store, { ...filter, environmentId: 'env_second' }, { interval: '1h', aggregates: ['count'], fill: 'none', groupBy: 'series' }, 1000, undefined, NO_DEADLINE, { series: 400, metrics: ['temperature'] })
      expect(second).toEqual([])
    } finally {
      await own.close()
    }
  })

  test('values and times read back exactly as written (-0 as 0, as String() writes it): every digit, the extremes, and batches that need new partitions', async () => {
    const own = await createTestEnv()
    try {
      const store = sqlStore(own.deps.database)
      const values = [0.1 + 0.2, 1 / 3, -123.456e10, 1e-7, 5e-324, 1.7976931348623157e308, -0, 2 ** 53 + 2, 27.5, -40]
      // Two years apart: the second write's times fall where no partition is made yet.
      const times = [Date.UTC(2026, 10, 20, 6, 0, 0, 1), Date.UTC(2024, 1, 29, 23, 59, 59, 999)]
      for (const base of times) {
        await store.write(values.map((value, i) => ({ accountId: 'acct_exact', deviceId: 'dev_exact', channel: 'v', ts: base + i, value, metric: null, environmentId: null })))
        const rows = await store.raw({ accountId: 'acct_exact', from: base, to: base + values.length }, 100)
        expect(rows.map((r) => [r.ts, r.value])).toEqual(values.map((value, i) => [base + i, value === 0 ? 0 : value]))
      }
    } finally {
      await own.close()
    }
  })
})

describe.skipIf(!enabled)('SQL store and QuestDB answer alike', () => {
  const accountId = 'acct_a'
  const other = 'acct_b'
  const data = generate(accountId, other)
  const window = { from: Date.UTC(2026, 10, 20, 0, 0, 0), to: Date.UTC(2026, 10, 21, 0, 0, 0) }

  beforeAll(async () => {
    env = await createTestEnv()
    sql = sqlStore(env.deps.database)
    quest = await questdbStore(loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table }))
    for (let i = 0; i < data.length; i += 1000) {
      await sql.write(data.slice(i, i + 1000))
      await quest.write(data.slice(i, i + 1000))
    }
    // QuestDB applies WAL writes asynchronously: wait until every row is visible.
    const mine = data.filter((r) => r.accountId === accountId).length
    await waitFor(async () => (await quest.raw({ accountId, ...window }, mine + 1)).length === mine, 30_000, 100)
  })
  afterAll(async () => {
    await quest?.close()
    const admin = postgres(QUESTDB_PG_URL!, { max: 1, prepare: false, onnotice: () => {} })
    await dropQuestdbTable(admin, table)
    await admin.end()
    await env?.close()
  })

  const filters: [string, Partial<ReadingsFilter>][] = [
    ['everything', {}], ['one device', { deviceId: 'dev_a' }], ['one channel', { channel: 'h1' }], ['a metric', { metric: 'temperature' }],
    ['an environment', { environmentId: 'env_dev_b' }], ['a narrow window', { from: Date.UTC(2026, 10, 20, 7, 0, 0), to: Date.UTC(2026, 10, 20, 8, 30, 0) }],
    ["another account's device", { deviceId: 'dev_c' }],
  ]

  test('raw rows, paged', async () => {
    for (const [name, f] of filters) {
      const filter = { accountId, ...window, ...f }
      expect({ name, rows: round(await pages(quest, filter, 250)) }).toEqual({ name, rows: round(await pages(sql, filter, 250)) })
    }
  })

  test('buckets for every interval and aggregate, paged', async () => {
    for (const interval of ['1m', '15m', '1h', '1d', '1w', '1mo'] as const) {
      for (const [name, f] of filters.slice(0, 4)) {
        const filter = { accountId, ...window, ...f }
        const aggregates: Aggregate[] = ['avg', 'min', 'max', 'last', 'count']
        expect({ name, interval, rows: round(await pages(quest, filter, 97, interval, aggregates)) })
          .toEqual({ name, interval, rows: round(await pages(sql, filter, 97, interval, aggregates)) })
      }
    }
  })

  test('filled buckets (null and previous) for every interval, over gaps inside and around the data, paged', async () => {
    // The window is a whole day around six hours of data: leading and trailing gaps, and dev_a/t1's silence inside.
    for (const fill of ['null', 'previous'] as const) {
      for (const interval of ['1m', '15m', '1h'] as const) {
        for (const [name, f] of [...filters.slice(0, 3), filters[5]!]) {
          const filter = { accountId, ...window, ...f }
          const aggregates: Aggregate[] = ['count', 'avg', 'min', 'max', 'last']
          const ours = round(await pages(sql, filter, 997, interval, aggregates, fill))
          expect(ours.length).toBeGreaterThan(0)
          expect({ fill, name, interval, rows: round(await pages(quest, filter, 997, interval, aggregates, fill)) }).toEqual({ fill, name, interval, rows: ours })
        }
      }
    }
  })

  test('buckets grouped by metric, plain and filled, paged', async () => {
    for (const fill of ['none', 'previous'] as const) {
      for (const interval of ['1m', '1h', '1w', '1mo'] as const) {
        for (const [name, f] of filters.slice(0, 5)) {
          const filter = { accountId, ...window, ...f }
          const aggregates: Aggregate[] = ['count', 'avg', 'min', 'max', 'last']
          const ours = round(await pages(sql, filter, 37, interval, aggregates, fill, 'metric'))
          expect(ours.length).toBeGreaterThan(0)
          expect({ fill, name, interval, rows: round(await pages(quest, filter, 37, interval, aggregates, fill, 'metric')) }).toEqual({ fill, name, interval, rows: ours })
        }
      }
    }
  })

  test('skipping rows (where a CSV file ends) picks the same rows in both stores', async () => {
    const filter = { accountId, ...window }
    const after: SeriesPosition = [Date.UTC(2026, 10, 20, 7, 0, 0), 'dev_a', 'h1']
    for (const skip of [0, 1, 499, 5000]) {
      expect(round(await quest.raw(filter, 2, after, skip))).toEqual(round(await sql.raw(filter, 2, after, skip)))
      for (const fill of ['none', 'null', 'previous'] as const) {
        const spec = { interval: '1m' as const, aggregates: ['count', 'last'] as Aggregate[], fill, groupBy: 'series' as const }
        expect({ skip, fill, rows: round(await quest.buckets(filter, spec, 2, after, skip)) }).toEqual({ skip, fill, rows: round(await sql.buckets(filter, spec, 2, after, skip)) })
      }
    }
  })

  test('reads of SPLIT_READ_ROWS or more, split in two halves read at once, give the rows one read does', async () => {
    // Every bucket read here asks for at least SPLIT_READ_ROWS rows, so QuestDB reads each as two halves.
    const limit = SPLIT_READ_ROWS
    for (const groupBy of ['series', 'metric'] as const) {
      for (const [name, f] of [...filters.slice(0, 5), filters[5]!]) {
        const filter = { accountId, ...window, ...f }
        const aggregates: Aggregate[] = ['avg', 'min', 'max', 'last', 'count']
        const ours = round(await pages(sql, filter, limit, '1m', aggregates, 'none', groupBy))
        expect(ours.length).toBeGreaterThan(0)
        expect({ groupBy, name, rows: round(await pages(quest, filter, limit, '1m', aggregates, 'none', groupBy)) }).toEqual({ groupBy, name, rows: ours })
      }
    }
    // The data's six hours (06:00-12:00) split at 09:00: positions before, at and after the middle.
    const filter = { accountId, from: Date.UTC(2026, 10, 20, 6, 0, 0), to: Date.UTC(2026, 10, 20, 12, 0, 0) }
    const spec = { interval: '1m' as const, aggregates: ['count', 'avg', 'last'] as Aggregate[], fill: 'none' as const, groupBy: 'series' as const }
    for (const after of [undefined, [Date.UTC(2026, 10, 20, 7, 0, 0), 'dev_a', 'h1'], [Date.UTC(2026, 10, 20, 9, 0, 0), 'dev_a', 't1'], [Date.UTC(2026, 10, 20, 10, 0, 0), 'dev_b', 'h1']] as (SeriesPosition | undefined)[]) {
      // Rows skipped from either half (the data holds about 2,000 rows), and a read too small to split.
      for (const [count, skip] of [[limit, 0], [limit - 300, 300], [limit - 1500, 1500], [2, 10]] as const) {
        const ours = round(await sql.buckets(filter, spec, count, after, skip))
        if (skip < 1500) expect(ours.length).toBeGreaterThan(0)
        expect({ after, count, skip, rows: round(await quest.buckets(filter, spec, count, after, skip)) }).toEqual({ after, count, skip, rows: ours })
      }
    }
  })

  test('latest per series', async () => {
    for (const [name, f] of filters) {
      const filter = { accountId, ...window, ...f }
      expect({ name, rows: round(await quest.latest(filter, 100)) }).toEqual({ name, rows: round(await sql.latest(filter, 100)) })
    }
    const first = await quest.latest({ accountId, ...window }, 2)
    const rest = await quest.latest({ accountId, ...window }, 100, [first[1]!.device_id, first[1]!.channel])
    expect(round([...first, ...rest])).toEqual(round(await sql.latest({ accountId, ...window }, 100)))
  })

  test('a retried batch does not duplicate in QuestDB', async () => {
    const batch = data.slice(0, 500)
    expect(batch.every((r) => r.accountId === accountId)).toBe(true)
    await quest.write(batch)
    await quest.write(batch)
    // QuestDB applies a table's WAL transactions in order: once a row written after the retries is visible, the
    // retries have been applied too (deduplicated or not), so what is counted next is final.
    const marker: Reading = { accountId: 'acct_marker', deviceId: 'dev_marker', channel: 't1', ts: window.from + 1, value: 1, metric: null, environmentId: null }
    await quest.write([marker])
    await waitFor(async () => (await quest.raw({ accountId: marker.accountId, ...window }, 10)).length === 1, 30_000, 100)
    const mine = data.filter((r) => r.accountId === accountId)
    const rows = await quest.raw({ accountId, ...window }, mine.length * 3)
    const keys = rows.map((r) => `${r.device_id} ${r.channel} ${r.ts}`)
    expect(keys.length - new Set(keys).size).toBe(0)
    expect(rows.length).toBe(mine.length)
  })
})

describe.skipIf(!enabled)('the API on QuestDB', () => {
  test('readings posted through the API are stored in QuestDB and queried back', async () => {
    const apiTable = `${table}_api`
    const api = await createTestEnv({ questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: apiTable })
    try {
      expect(api.deps.readings.kind).toBe('questdb')
      const owner = await api.account({ scopes: ['sensors:write', 'environment:read'] })
      const device = await (await api.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
      const ts = Date.now() - 60_000
      const res = await api.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings: [{ channel: 't1', value: 22.5, ts }, { channel: 'zz', value: 1, ts }] } })
      expect(res.status).toBe(202)
      let rows: any[] = []
      await waitFor(async () => {
        rows = (await (await api.request('GET', `/api/v1/environment/readings?device_id=${device.id}`, { token: owner.token })).json()).data
        return rows.length === 2
      }, 30_000, 100)
      expect(rows.map((r) => [r.channel, r.metric, r.value, Date.parse(r.ts)])).toEqual([['t1', 'temperature', 22.5, ts], ['zz', null, 1, ts]])
    } finally {
      await api.close()
      const admin = postgres(QUESTDB_PG_URL!, { max: 1, prepare: false, onnotice: () => {} })
      await dropQuestdbTable(admin, apiTable)
      await admin.end()
    }
  })
})
