// The rollup tables the store keeps itself where QuestDB has no materialized views (7.4): a minute is recomputed once
// its mark has settled (no write for a minute), never while it is still being written, when it is read raw
// anyway (ingest/stores/questdb-rollups.ts). Runs only when QUESTDB_ILP and QUESTDB_PG_URL point at a server without
// materialized views (before 8.3.1).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import type { BucketRow, Reading, ReadingsStore } from '../../ingest/stores/interface.ts'
import { questdbStore } from '../../ingest/stores/questdb.ts'
import { nextPieceMinutes, OwnRollups, RollupMarks } from '../../ingest/stores/questdb-rollups.ts'
import { loadConfig } from '../../src/config.ts'
import { createTestEnv, dropQuestdbTable, waitFor, type TestEnv } from '../helpers.ts'

const QUESTDB_ILP = process.env.QUESTDB_ILP || undefined
const QUESTDB_PG_URL = process.env.QUESTDB_PG_URL || undefined
const admin = QUESTDB_ILP && QUESTDB_PG_URL ? postgres(QUESTDB_PG_URL, { max: 1, prepare: false, onnotice: () => {} }) : undefined
const hasViews = admin ? await admin.unsafe('select count() from materialized_views()').then(() => true, () => false) : false
if (!admin) console.log('readings-own-rollups.test: skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run it against a QuestDB server')
else if (hasViews) console.log('readings-own-rollups.test: skipped: this QuestDB keeps materialized views (8.3.1 on), so the store keeps no rollup tables of its own')

afterAll(async () => { await admin?.end() })

const DAY = 86_400_000
const accountId = 'acct_own_rollups'
const DAY_ONE = Math.floor(Date.now() / DAY) * DAY - 10 * DAY
/** One series, a reading every 10 minutes over a day. */
const dayOf = (value: number): Reading[] => Array.from({ length: 144 }, (_, i) => ({ accountId, deviceId: 'dev_a', channel: 't1', ts: DAY_ONE + i * 600_000, value, metric: 'temperature', environmentId: 'env_1' }))

describe.skipIf(!admin || hasViews)('own rollups (QuestDB 7.4)', () => {
  const table = `hrs_test_own_rollups_${Date.now().toString(36)}`
  let env: TestEnv
  let store: ReadingsStore
  const config = loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table })
  const rolledUp = async () => Number((await admin!.unsafe(`select coalesce(sum(cnt), 0) n from ${table}_1m`))[0]!.n)
  const marks = async () => (await env.deps.database.query<{ n: number }>('select count(*)::int n from reading_rollup_marks where store = $1', [table]))[0]!.n
  const daily = (): Promise<BucketRow[]> => store.buckets({ accountId, from: DAY_ONE, to: DAY_ONE + DAY }, { interval: '1d', aggregates: ['count', 'avg'], groupBy: 'series' }, 10)

  beforeAll(async () => {
    env = await createTestEnv()
    store = await questdbStore(config, undefined, { records: env.deps.database, log: (message, error) => console.error(message, error) })
  })
  afterAll(async () => {
    await store?.close()
    await dropQuestdbTable(admin!, table)
    await env?.close()
  })

  test('a minute just written is not recomputed (it is read raw); once settled it is, and its mark goes', async () => {
    await store.write(dayOf(10))
    await waitFor(async () => Number((await admin!.unsafe(`select count() n from ${table}`))[0]!.n) === 144, 30_000, 50)
    expect(await marks()).toBe(144)

    // A refresh with the store's own settling time: every mark was written a moment ago, so nothing is recomputed.
    await store.refreshRollups!()
    expect(await rolledUp()).toBe(0)
    expect(await marks()).toBe(144)
    // Every reading's minute is marked, so they are read raw.
    expect(await daily()).toMatchObject([{ ts: DAY_ONE, count: 144, avg: 10 }])

    // Settling at once (no write is under way): every minute is recomputed and its mark removed.
    await store.refreshRollups!(0)
    expect(await rolledUp()).toBe(144)
    expect(await marks()).toBe(0)
    expect(await daily()).toMatchObject([{ ts: DAY_ONE, count: 144, avg: 10 }])
  }, 120_000)

  // Rollups an earlier version kept have no five-minute table. Its first day's raw readings have expired since, so
  // only the minutes can give that day's five minutes; the second day's are still marked, and rolled up from raw.
  test('rollups of an earlier version (no five-minute table) gain one: rolled up from the minutes, the raw days marked again', async () => {
    const dayTwo = dayOf(20).map((r) => ({ ...r, ts: r.ts + DAY }))
    await store.write(dayTwo)
    await waitFor(async () => Number((await admin!.unsafe(`select count() n from ${table}`))[0]!.n) === 288, 30_000, 50)
    await store.refreshRollups!(0)
    await admin!.unsafe(`drop table ${table}_5m`)
    await admin!.unsafe(`alter table ${table} drop partition list '${new Date(DAY_ONE).toISOString().slice(0, 10)}'`)
    await waitFor(async () => Number((await admin!.unsafe(`select count() n from ${table}`))[0]!.n) === 144, 30_000, 50)
    expect(await marks()).toBe(0)

    await new OwnRollups(admin!, new RollupMarks(env.deps.database, table), { '1m': 'day', '5m': 'day', '1h': 'day', '1d': 'month' }).create()
    // Every minute of the raw readings left is marked again (day two: its first reading to its last).
    expect(await marks()).toBe(143 * 10 + 1)
    const fives = async (from: number) => {
      const [row] = await admin!.unsafe<{ n: string; s: number; rows: string }[]>(`select sum(cnt) n, sum(sum_v) s, count() rows from ${table}_5m
        where ts >= '${new Date(from).toISOString()}' and ts < '${new Date(from + DAY).toISOString()}'`)
      return { n: Number(row!.n), s: Number(row!.s), rows: Number(row!.rows) }
    }
    expect(await fives(DAY_ONE)).toEqual({ n: 144, s: 1440, rows: 144 })
    expect(await fives(DAY_ONE + DAY)).toEqual({ n: 144, s: 2880, rows: 144 })

    await store.refreshRollups!(0)
    expect(await marks()).toBe(0)
    // Both days through the planner, in five-minute buckets (the first day's raw readings are gone) and in hours.
    const buckets = (interval: '5m' | '1h') => store.buckets({ accountId, from: DAY_ONE, to: DAY_ONE + 2 * DAY }, { interval, aggregates: ['count', 'avg'], groupBy: 'series' }, 1_000)
    const expected = (width: number) => [10, 20].flatMap((avg, day) => Array.from({ length: DAY / width }, (_, i) => i * width).filter((t) => t % 600_000 === 0 || width > 600_000)
      .map((t) => ({ ts: DAY_ONE + day * DAY + t, count: width > 600_000 ? width / 600_000 : 1, avg })))
    expect((await buckets('5m')).map(({ ts, count, avg }) => ({ ts, count, avg }))).toEqual(expected(300_000))
    expect((await buckets('1h')).map(({ ts, count, avg }) => ({ ts, count, avg }))).toEqual(expected(3_600_000))
  }, 120_000)
})

describe('the size of a refresh piece follows what pieces cost', () => {
  test('doubles while full pieces are quick, scales down to the target when long, a quarter after giving up', () => {
    expect(nextPieceMinutes(60, 1_000, true, true, 5_000)).toBe(120)
    // Not full: all that waited was taken, nothing says a bigger piece is needed.
    expect(nextPieceMinutes(60, 1_000, false, true, 5_000)).toBe(60)
    expect(nextPieceMinutes(60, 3_000, true, true, 5_000)).toBe(60)
    expect(nextPieceMinutes(600, 15_000, true, true, 5_000)).toBe(200)
    expect(nextPieceMinutes(600, 25_000, true, false, 5_000)).toBe(150)
    expect(nextPieceMinutes(2, 25_000, true, false, 5_000)).toBe(1)
    expect(nextPieceMinutes(1, 60_000, true, false, 5_000)).toBe(1)
    expect(nextPieceMinutes(40_000, 10, true, true, 5_000)).toBe(43_200)
  })
})

// Issue 57: at 4,000 series a month of marks never fitted one refresh, and the backlog stood. Here 2,000 series over
// two days are stored before the rollup tables exist (a 7.4 deployment upgraded), so every minute of the two days is
// marked (2,871 marks), and refreshing must drain them, piece by piece, within a bound, to rollups equal to the raw rows.
describe.skipIf(!admin || hasViews)('a backlog of days at thousands of series drains (QuestDB 7.4)', () => {
  const table = `hrs_test_own_backlog_${Date.now().toString(36)}`
  const SERIES_DEVICES = 500
  const CHANNELS = ['t1', 't2', 'h1', 'h2']
  const FIRST = Math.floor(Date.now() / DAY) * DAY - 3 * DAY
  const STEP = 600_000
  const readings: Reading[] = []
  for (let ts = FIRST; ts < FIRST + 2 * DAY; ts += STEP) {
    for (let d = 0; d < SERIES_DEVICES; d++) {
      for (const channel of CHANNELS) readings.push({ accountId, deviceId: `dev_${d}`, channel, ts, value: ((ts / STEP + d * 7) % 97) / 4, metric: 'temperature', environmentId: `env_${d % 25}` })
    }
  }
  let env: TestEnv
  let sql: ReturnType<typeof postgres>

  beforeAll(async () => {
    env = await createTestEnv()
    // Written without a records database: the table alone, no marks, as before an upgrade.
    const writer = await questdbStore(loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table }))
    for (let i = 0; i < readings.length; i += 20_000) await writer.write(readings.slice(i, i + 20_000))
    await writer.close()
    await waitFor(async () => Number((await admin!.unsafe(`select count() n from ${table}`))[0]!.n) === readings.length, 120_000, 200)
    sql = postgres(QUESTDB_PG_URL!, { max: 2, prepare: false, onnotice: () => {}, connection: { options: '-c statement_timeout=31000' } })
  }, 240_000)
  afterAll(async () => {
    await sql?.end()
    await dropQuestdbTable(admin!, table)
    await env?.close()
  })

  test('every refresh that finishes records its piece, the marks only go down, and the rollups equal the raw rows', async () => {
    const marks = new RollupMarks(env.deps.database, table)
    const rollups = new OwnRollups(sql, marks, { '1m': 'day', '5m': 'day', '1h': 'day', '1d': 'month' })
    await rollups.create()
    const pending = async () => (await env.deps.database.query<{ n: number }>('select count(*)::int n from reading_rollup_marks where store = $1', [table]))[0]!.n
    let left = await pending()
    // Every minute from the first reading to the last.
    expect(left).toBe((2 * DAY - STEP) / 60_000 + 1)
    const began = Date.now()
    const pieces: number[] = []
    let gaveUp = 0
    while (left > 0) {
      expect(Date.now() - began).toBeLessThan(180_000)
      const { minutes } = await rollups.refresh(0)
      const now = await pending()
      expect(now).toBeLessThanOrEqual(left)
      if (minutes) {
        pieces.push(minutes)
        expect(now).toBeLessThan(left)
      } else gaveUp++
      left = now
    }
    console.log(`readings-own-rollups.test: 2,871 marks over 2,000 series drained in ${Date.now() - began} ms, ${pieces.length} pieces (${pieces.join(', ')}), ${gaveUp} given up`)
    // The rollups hold every reading once, per series and day, as the raw table does.
    const perDay = (source: string, count: string, sum: string) => admin!.unsafe<{ ts: Date; device_id: string; channel: string; n: number; s: number }[]>(
      `select ts, device_id, channel, ${count} n, ${sum} s from ${source} sample by 1d align to calendar order by ts, device_id, channel`)
    const raw = await perDay(table, 'count()', 'sum(value)')
    const days = await perDay(`${table}_1d`, 'sum(cnt)', 'sum(sum_v)')
    expect(raw).toHaveLength(2 * SERIES_DEVICES * CHANNELS.length)
    expect(days.map((r) => [r.ts, r.device_id, r.channel, Number(r.n)])).toEqual(raw.map((r) => [r.ts, r.device_id, r.channel, Number(r.n)]))
    for (let i = 0; i < raw.length; i++) expect(Math.abs(Number(days[i]!.s) - Number(raw[i]!.s))).toBeLessThan(1e-6)
  }, 300_000)
})
