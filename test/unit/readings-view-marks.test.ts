// Rollup views that are behind (QuestDB 8.3.1 on): while writes keep coming, some view is nearly always behind its
// table, so the store reads the views on every day no write has marked since they last caught up, and the marked days
// raw (ingest/stores/questdb-rollups.ts, ViewWatch). A view held behind on purpose (refreshed by hand only) shows
// which source answered: a reading written without a mark (a store with no records database) is missing from a day
// the views answer, and present in a day read raw. Runs only when QUESTDB_ILP and QUESTDB_PG_URL point at a server
// with materialized views.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import type { BucketRow, Reading, ReadingsStore } from '../../ingest/stores/interface.ts'
import { questdbStore } from '../../ingest/stores/questdb.ts'
import { VIEW_CHAIN } from '../../ingest/stores/questdb-rollups.ts'
import { loadConfig } from '../../src/config.ts'
import { createTestEnv, dropQuestdbTable, waitFor, type TestEnv } from '../helpers.ts'

const QUESTDB_ILP = process.env.QUESTDB_ILP || undefined
const QUESTDB_PG_URL = process.env.QUESTDB_PG_URL || undefined
const admin = QUESTDB_ILP && QUESTDB_PG_URL ? postgres(QUESTDB_PG_URL, { max: 1, prepare: false, onnotice: () => {} }) : undefined
const hasViews = admin ? await admin.unsafe('select count() from materialized_views()').then(() => true, () => false) : false
if (!admin) console.log('readings-view-marks.test: skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run it against a QuestDB server')
else if (!hasViews) console.log('readings-view-marks.test: skipped: this QuestDB has no materialized views (before 8.3.1)')

afterAll(async () => { await admin?.end() })

const DAY = 86_400_000
const accountId = 'acct_view_marks'
const DAY_ONE = Math.floor(Date.now() / DAY) * DAY - 10 * DAY
const DAY_TWO = DAY_ONE + DAY
/** One series, a reading every 10 minutes over a day. */
const dayOf = (start: number, value: number): Reading[] => Array.from({ length: 144 }, (_, i) => ({ accountId, deviceId: 'dev_a', channel: 't1', ts: start + i * 600_000, value, metric: 'temperature', environmentId: 'env_1' }))

/** Readings of `table` on the day from `from`. */
const countIn = async (table: string, from: number) => Number((await admin!.unsafe(`select count() n from ${table} where ts >= '${new Date(from).toISOString()}' and ts < '${new Date(from + DAY).toISOString()}'`))[0]!.n)
const dailyOf = (store: ReadingsStore): Promise<BucketRow[]> => store.buckets({ accountId, from: DAY_ONE, to: DAY_TWO + DAY }, { interval: '1d', aggregates: ['count', 'avg'], groupBy: 'series' }, 10)

describe.skipIf(!hasViews)('views behind their table: marked days raw, the others from the views', () => {
  const table = `hrs_test_view_marks_${Date.now().toString(36)}`
  let env: TestEnv
  let store: ReadingsStore
  /** The same table without a records database: its writes are not marked. */
  let unmarked: ReadingsStore
  const config = loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table })

  beforeAll(async () => {
    env = await createTestEnv()
    store = await questdbStore(config, undefined, { records: env.deps.database, log: (message, error) => console.error(message, error) })
    unmarked = await questdbStore(config)
  })
  afterAll(async () => {
    await store?.close()
    await unmarked?.close()
    await dropQuestdbTable(admin!, table)
    await env?.close()
  })

  test('a day written without a mark while the views are held back is answered from the views; a marked day raw', async () => {
    await store.write(dayOf(DAY_ONE, 10))
    await waitFor(async () => (await countIn(table, DAY_ONE)) === 144, 30_000, 50)
    // The views take in day one, and the watch removes its marks (settling at once: no write is under way).
    await store.refreshRollups!(0)
    expect(Number((await env.deps.database.query<{ n: number }>(`select count(*)::int n from reading_rollup_marks where store = $1`, [table]))[0]!.n)).toBe(0)

    // Held back from here: the minute view refreshes only when told to, so every view stays behind the table.
    await admin!.unsafe(`alter materialized view ${table}_1m set refresh manual`)
    await unmarked.write([{ ...dayOf(DAY_ONE, 10)[0]!, ts: DAY_ONE + 30_000, value: 1000 }])
    await store.write(dayOf(DAY_TWO, 20))
    await waitFor(async () => (await countIn(table, DAY_ONE)) === 145 && (await countIn(table, DAY_TWO)) === 144, 30_000, 50)

    const [one, two] = await dailyOf(store)
    // Day one from the day view: the unmarked reading is in the table, not in the views.
    expect(one).toMatchObject({ ts: DAY_ONE, device_id: 'dev_a', channel: 't1', count: 144, avg: 10 })
    // Day two is marked: read raw, all of it, though no view holds any of it.
    expect(two).toMatchObject({ ts: DAY_TWO, device_id: 'dev_a', channel: 't1', count: 144, avg: 20 })
    expect(Number((await admin!.unsafe(`select count() n from ${table}_1d where ts >= '${new Date(DAY_TWO).toISOString()}'`))[0]!.n)).toBe(0)
  }, 120_000)
})

/** The views as the store made them before the one-second step: the minute view on the table. */
async function tableMinuteViews(table: string): Promise<void> {
  const keys = 'ts, account_id, device_id, channel, metric, environment_id'
  await admin!.unsafe(`create materialized view ${table}_1m as (select ${keys}, count() cnt, sum(value) sum_v, min(value) min_v, max(value) max_v, last(value) last_v, last(ts) last_ts from ${table} sample by 1m) partition by day`)
  for (const [level, base] of [['1h', '1m'], ['1d', '1h']]) {
    await admin!.unsafe(`create materialized view ${table}_${level} as (select ${keys}, sum(cnt) cnt, sum(sum_v) sum_v, min(min_v) min_v, max(max_v) max_v, last(last_v) last_v, max(last_ts) last_ts from ${table}_${base} sample by ${level}) partition by ${level === '1d' ? 'month' : 'day'}`)
  }
}
const basesOf = async (table: string) => Object.fromEntries((await admin!.unsafe<{ view_name: string; base_table_name: string }[]>(`select view_name, base_table_name from materialized_views() where view_name like '${table}_%'`)).map((r) => [r.view_name, r.base_table_name]))

describe.skipIf(!hasViews)('views an earlier version made (the minute view on the table)', () => {
  let env: TestEnv
  const tables: string[] = []
  const stores: ReadingsStore[] = []

  beforeAll(async () => { env = await createTestEnv() })
  afterAll(async () => {
    for (const store of stores) await store.close()
    for (const table of tables) await dropQuestdbTable(admin!, table)
    await env?.close()
  })

  /** A table as an earlier version left it: the minute view on the table, and days one and two (and `extra`) read. */
  async function earlierLayout(name: string, extra: Reading[] = []) {
    const table = `hrs_test_view_${name}_${Date.now().toString(36)}`
    tables.push(table)
    const config = loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table })
    const older = await questdbStore(config)
    for (const level of [...VIEW_CHAIN].reverse()) await admin!.unsafe(`drop materialized view ${table}_${level}`)
    await tableMinuteViews(table)
    await older.write([...dayOf(DAY_ONE, 10), ...dayOf(DAY_TWO, 20), ...extra])
    await older.close()
    await waitFor(async () => (await countIn(table, DAY_ONE)) === 144 && (await countIn(table, DAY_TWO)) === 144, 30_000, 50)
    return { table, config }
  }
  /** The store as this version starts it, with a records database (its watch settles the views). */
  async function start(config: ReturnType<typeof loadConfig>): Promise<ReadingsStore> {
    const store = await questdbStore(config, undefined, { records: env.deps.database, log: (message, error) => console.error(message, error) })
    stores.push(store)
    return store
  }

  test('are made again on the chain: the minute view from the one-second view, five minutes from it, and the days from the views equal the raw readings', async () => {
    const { table, config } = await earlierLayout('chain')
    const store = await start(config)
    expect(await basesOf(table)).toEqual({ [`${table}_1s`]: table, [`${table}_1m`]: `${table}_1s`, [`${table}_5m`]: `${table}_1m`, [`${table}_1h`]: `${table}_5m`, [`${table}_1d`]: `${table}_1h` })
    // Once the watch has seen every view catch up, the days come from the day view, whole.
    await store.refreshRollups!(0)
    expect(await dailyOf(store)).toMatchObject([{ ts: DAY_ONE, count: 144, avg: 10 }, { ts: DAY_TWO, count: 144, avg: 20 }])
    expect(Number((await admin!.unsafe(`select sum(cnt) n from ${table}_1d`))[0]!.n)).toBe(288)
  }, 120_000)

  test('are kept where raw readings have expired since (rebuilding would lose those days), and still answer them', async () => {
    const today = Math.floor(Date.now() / DAY) * DAY
    const { table, config } = await earlierLayout('kept', [dayOf(today, 30)[0]!])
    await waitFor(async () => Number((await admin!.unsafe(`select sum(cnt) n from ${table}_1d`))[0]!.n) === 289, 30_000, 100)
    // The raw days expire (a TTL, as expiry sets it); the views keep their rollups.
    await admin!.unsafe(`alter table ${table} set ttl 3 days`)
    await waitFor(async () => (await countIn(table, DAY_ONE)) === 0 && (await countIn(table, DAY_TWO)) === 0, 30_000, 100)

    const store = await start(config)
    // A five-minute view is added on the minutes; the hours stay on them.
    expect(await basesOf(table)).toEqual({ [`${table}_1m`]: table, [`${table}_5m`]: `${table}_1m`, [`${table}_1h`]: `${table}_1m`, [`${table}_1d`]: `${table}_1h` })
    await store.refreshRollups!(0)
    expect(await dailyOf(store)).toMatchObject([{ ts: DAY_ONE, count: 144, avg: 10 }, { ts: DAY_TWO, count: 144, avg: 20 }])
    // The expired days in five minutes: from the new view, made from the minutes those views kept.
    const fives = await store.buckets({ accountId, from: DAY_ONE, to: DAY_TWO + DAY }, { interval: '5m', aggregates: ['count', 'avg'], groupBy: 'series' }, 1_000)
    expect(fives.map(({ ts, count, avg }) => ({ ts, count, avg }))).toEqual([...dayOf(DAY_ONE, 10), ...dayOf(DAY_TWO, 20)].map((r) => ({ ts: r.ts, count: 1, avg: r.value })))
  }, 120_000)
})
