// Expiry on the QuestDB readings store (issue 30): maintain() drops the raw table's partitions wholly before the raw
// horizon and nothing else; where QuestDB has rollup views (8.3.1 on) they keep answering the dropped days exactly,
// late readings for a dropped day change nothing there, and two runs at once do no more than one. Runs only when
// QUESTDB_ILP and QUESTDB_PG_URL point at a server (7.4 drops partitions, 9.x sets TTLs: ingest/stores/questdb-expiry.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { retentionHorizons } from '../../ingest/planner.ts'
import type { Aggregate, BucketRow, IntervalName, Reading, ReadingsStore } from '../../ingest/stores/interface.ts'
import { questdbStore } from '../../ingest/stores/questdb.ts'
import { VIEW_CHAIN } from '../../ingest/stores/questdb-rollups.ts'
import { loadConfig } from '../../src/config.ts'
import { createTestEnv, dropQuestdbTable, questdbApplied, waitFor, type TestEnv } from '../helpers.ts'

const QUESTDB_ILP = process.env.QUESTDB_ILP || undefined
const QUESTDB_PG_URL = process.env.QUESTDB_PG_URL || undefined
const enabled = Boolean(QUESTDB_ILP && QUESTDB_PG_URL)
if (!enabled) console.log('readings-retention-questdb.test: skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run it against a QuestDB server')

const DAY = 86_400_000
const NOW = Date.now()
const TODAY = Math.floor(NOW / DAY) * DAY
/** Raw readings for 4 days, minute rollups for 6, hour rollups five years (the default), day rollups forever. */
const config = (table: string) => loadConfig({ READINGS_RETENTION_DAYS: '4', READINGS_MINUTE_ROLLUP_RETENTION_DAYS: '6' }, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table })
const horizons = retentionHorizons(config('unused').readingsRetention, NOW)
const dayName = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const days = (from: number, to: number) => Array.from({ length: (to - from) / DAY }, (_, i) => dayName(from + i * DAY))

const accountId = 'acct_retention'
/**
 * 4 series, a reading every 10 minutes from midnight 7 days ago to midnight today, both included: the newest reading
 * is from today, as with live ingest (QuestDB's TTL counts back from a table's newest timestamp).
 */
const FIRST = TODAY - 7 * DAY
const data: Reading[] = []
for (let ts = FIRST, i = 0; ts <= TODAY; ts += 600_000, i++) {
  for (const deviceId of ['dev_a', 'dev_b']) {
    for (const channel of ['t1', 'h1']) data.push({ accountId, deviceId, channel, ts, value: (i * 7 + deviceId.length + channel.charCodeAt(0)) % 101 / 4, metric: channel === 't1' ? 'temperature' : 'humidity', environmentId: 'env_1' })
  }
}
const kept = data.filter((r) => r.ts >= horizons.raw).length

const admin = enabled ? postgres(QUESTDB_PG_URL!, { max: 1, prepare: false, onnotice: () => {} }) : undefined
/** Whether the server has materialized views (8.3.1 on): the rollup checks run only there. */
const hasViews = enabled && (await admin!.unsafe('select count() from materialized_views()').then(() => true, () => false))
if (enabled && !hasViews) console.log('readings-retention-questdb.test: rollup checks skipped: this QuestDB has no materialized views (before 8.3.1)')

const tables: string[] = []
const newTable = () => {
  const table = `hrs_test_retention_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
  tables.push(table)
  return table
}

async function partitions(name: string): Promise<string[]> {
  return (await admin!.unsafe<{ name: string }[]>(`select name from table_partitions('${name}')`)).map((r) => String(r.name)).sort()
}
async function count(table: string, where = ''): Promise<number> {
  const [row] = await admin!.unsafe<{ n: number }[]>(`select count() n from ${table}${where ? ` where ${where}` : ''}`)
  return Number(row!.n)
}
/**
 * Every view valid and refreshed up to its base's last transaction (each level on the one below it), once QuestDB
 * counts the table's commits applied (questdbApplied says why: before that, the views look caught up).
 */
async function viewsCaughtUp(table: string): Promise<boolean> {
  if (!(await questdbApplied(admin!, table))) return false
  const rows = await admin!.unsafe<Record<string, unknown>[]>(`select view_name, view_status, refresh_base_table_txn, base_table_txn from materialized_views() where view_name like '${table}_%'`)
  return rows.length === VIEW_CHAIN.length && rows.every((r) => r.view_status === 'valid' && Number(r.refresh_base_table_txn) === Number(r.base_table_txn))
}

/** Writes the data set and waits until QuestDB shows all of it (and, where there are views, has rolled it up). */
async function load(store: ReadingsStore, table: string): Promise<void> {
  for (let i = 0; i < data.length; i += 2000) await store.write(data.slice(i, i + 2000))
  await waitFor(async () => (await count(table)) === data.length, 30_000, 100)
  if (hasViews) await waitFor(() => viewsCaughtUp(table), 30_000, 100)
}

/** What the rollups say of the days whose raw readings go: hours and days of them all, minutes of those the minute rollups keep. */
async function rollupAnswers(store: ReadingsStore): Promise<Record<string, BucketRow[]>> {
  const aggregates: Aggregate[] = ['count', 'avg', 'min', 'max', 'last']
  const window = (from: number, interval: IntervalName) => store.buckets({ accountId, from, to: horizons.raw }, { interval, aggregates, groupBy: 'series' }, 100_000)
  return { hours: await window(FIRST, '1h'), days: await window(FIRST, '1d'), minutes: await window(horizons['1m'], '1m') }
}
const counted = (rows: BucketRow[]) => rows.reduce((sum, r) => sum + r.count!, 0)
const readingsIn = (from: number, to: number) => data.filter((r) => r.ts >= from && r.ts < to).length

afterAll(async () => {
  if (!admin) return
  for (const table of tables) await dropQuestdbTable(admin, table)
  await admin.end()
})

describe.skipIf(!enabled)('expiry on QuestDB', () => {
  const table = newTable()
  let store: ReadingsStore
  let before: Record<string, BucketRow[]>

  beforeAll(async () => {
    store = await questdbStore(config(table))
    expect(store.rollupLevels.length > 0).toBe(hasViews)
    await load(store, table)
    if (hasViews) before = await rollupAnswers(store)
  })
  afterAll(async () => { await store?.close() })

  test('drops the raw partitions wholly before the horizon; every reading from it on stays', async () => {
    expect(await partitions(table)).toEqual(days(FIRST, TODAY + DAY))
    const report = await store.maintain(horizons, NOW)
    const gone = days(FIRST, horizons.raw)
    expect(gone).toHaveLength(3)
    // Where there are views, the one-second step keeps what the raw table keeps, and the minute and 5-minute rollups
    // go back 6 days: their first day goes with them.
    const goneViews = hasViews ? [...gone.map((d) => `${table}_1s/${d}`), `${table}_1m/${dayName(FIRST)}`, `${table}_5m/${dayName(FIRST)}`] : []
    expect(report).toEqual({ dropped: [...gone.map((d) => `${table}/${d}`), ...goneViews], created: [] })
    expect(await partitions(table)).toEqual(days(horizons.raw, TODAY + DAY))
    if (hasViews) expect(await partitions(`${table}_1s`)).toEqual(days(horizons.raw, TODAY + DAY))
    expect(await count(table)).toBe(kept)
    expect(await count(table, `ts >= '${new Date(horizons.raw).toISOString()}'`)).toBe(kept)
    if (hasViews) expect(await partitions(`${table}_1m`)).toEqual(days(horizons['1m'], TODAY + DAY))
    // Nothing more to do until the horizon moves.
    expect(await store.maintain(horizons, NOW)).toEqual({ dropped: [], created: [] })
    expect(await count(table)).toBe(kept)
  })

  test.skipIf(!hasViews)('the rollups still answer the dropped days exactly', async () => {
    expect(counted(before.hours!)).toBe(readingsIn(FIRST, horizons.raw))
    expect(counted(before.days!)).toBe(readingsIn(FIRST, horizons.raw))
    expect(counted(before.minutes!)).toBe(readingsIn(horizons['1m'], horizons.raw))
    await waitFor(() => viewsCaughtUp(table), 30_000, 100)
    expect(await rollupAnswers(store)).toEqual(before)
  })

  test('a late reading for a dropped day goes again: at once and counted in no rollup with views, at the next run on 7.4', async () => {
    const late: Reading = { ...data[0]!, ts: FIRST + DAY + 12 * 3_600_000, value: 1000 }
    const current: Reading = { ...data[0]!, channel: 'late_marker', ts: Math.max(TODAY, NOW - 60_000), value: 1 }
    // In one batch, so QuestDB's refresh of the rollups spans from the late reading to today.
    await store.write([late, current])
    await waitFor(async () => (await count(table, "channel = 'late_marker'")) === 1, 30_000, 100)
    if (hasViews) {
      // QuestDB wrote it and its TTL evicted it at once; the one-second step's refresh limit kept it out of every rollup.
      await waitFor(() => viewsCaughtUp(table), 30_000, 100)
      expect(await partitions(table)).toEqual(days(horizons.raw, TODAY + DAY))
      expect(await rollupAnswers(store)).toEqual(before)
    } else {
      // 7.4 keeps it until the next run drops its partition again.
      expect(await partitions(table)).toEqual([dayName(late.ts), ...days(horizons.raw, TODAY + DAY)])
      expect(await store.maintain(horizons, NOW)).toEqual({ dropped: [`${table}/${dayName(late.ts)}`], created: [] })
      expect(await partitions(table)).toEqual(days(horizons.raw, TODAY + DAY))
    }
    expect(await count(table)).toBe(kept + 1)
  })
})

describe.skipIf(!enabled)('two processes expiring QuestDB at once', () => {
  const table = newTable()
  let one: ReadingsStore
  let two: ReadingsStore

  beforeAll(async () => {
    one = await questdbStore(config(table))
    two = await questdbStore(config(table))
    await load(one, table)
  })
  afterAll(async () => {
    await one?.close()
    await two?.close()
  })

  test('both runs succeed and together drop exactly what one would', async () => {
    const before = hasViews ? await rollupAnswers(one) : undefined
    const reports = await Promise.all([one.maintain(horizons, NOW), two.maintain(horizons, NOW)])
    const dropped = new Set(reports.flatMap((r) => r.dropped))
    const gone = days(FIRST, horizons.raw)
    const expected = [...gone.map((d) => `${table}/${d}`), ...(hasViews ? [...gone.map((d) => `${table}_1s/${d}`), `${table}_1m/${dayName(FIRST)}`, `${table}_5m/${dayName(FIRST)}`] : [])]
    expect([...dropped].sort()).toEqual(expected.sort())
    expect(await partitions(table)).toEqual(days(horizons.raw, TODAY + DAY))
    expect(await count(table)).toBe(kept)
    if (hasViews) {
      expect(await partitions(`${table}_1m`)).toEqual(days(horizons['1m'], TODAY + DAY))
      await waitFor(() => viewsCaughtUp(table), 30_000, 100)
      expect(await rollupAnswers(two)).toEqual(before!)
    }
  })
})

describe.skipIf(!enabled)('each level expires to its own horizon', () => {
  const table = newTable()
  let store: ReadingsStore
  /** Raw readings 10 days, minutes 20, hours 30, days 40: the day rollups' partitions are months. */
  const levels = loadConfig({ READINGS_RETENTION_DAYS: '10', READINGS_MINUTE_ROLLUP_RETENTION_DAYS: '20', READINGS_HOUR_ROLLUP_RETENTION_DAYS: '30', READINGS_DAY_ROLLUP_RETENTION_DAYS: '40' },
    { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table })
  const cut = retentionHorizons(levels.readingsRetention, NOW)
  /** One reading an hour over the 100 days up to midnight today. */
  const START = TODAY - 100 * DAY
  const hourly: Reading[] = []
  for (let ts = START; ts <= TODAY; ts += 3_600_000) hourly.push({ ...data[0]!, ts, value: (ts / 3_600_000) % 13 })
  const months = (from: number, to: number) => [...new Set(days(from, to).map((d) => d.slice(0, 7)))]

  // Without views (7.4) the store keeps rollup tables of its own, from marks in a records database.
  let env: TestEnv | undefined
  // A limit of its own: on 7.4 the refresh rolls up 100 days of marks, which took 32 s on a 2-core box with QuestDB's
  // default workers, and over the suite's 60 s with one worker (CI, 2026-11-27).
  beforeAll(async () => {
    if (!hasViews) env = await createTestEnv()
    store = await questdbStore(levels, undefined, env && { records: env.deps.database, log: (message, error) => console.error(message, error) })
    await store.write(hourly)
    await waitFor(async () => (await count(table)) === hourly.length, 30_000, 100)
    if (hasViews) await waitFor(() => viewsCaughtUp(table), 30_000, 100)
    else await store.refreshRollups!(0)
  }, 180_000)
  afterAll(async () => {
    await store?.close()
    await env?.close()
  })

  test('raw, minute, 5-minute and hour partitions by day and day partitions by month go exactly up to their horizons', async () => {
    const report = await store.maintain(cut, NOW)
    const expected = [
      ...days(START, cut.raw).map((d) => `${table}/${d}`),
      // Views only: the one-second step goes with the raw readings.
      ...(hasViews ? days(START, cut.raw).map((d) => `${table}_1s/${d}`) : []),
      ...(store.rollupLevels.length ? [
        ...days(START, cut['1m']).map((d) => `${table}_1m/${d}`),
        ...days(START, cut['5m']).map((d) => `${table}_5m/${d}`),
        ...days(START, cut['1h']).map((d) => `${table}_1h/${d}`),
        // Months wholly before the horizon: the horizon's own month stays.
        ...months(START, cut['1d']).filter((m) => m < dayName(cut['1d']).slice(0, 7)).map((m) => `${table}_1d/${m}`),
      ] : []),
    ]
    expect(report.dropped).toEqual(expected)
    expect(await partitions(table)).toEqual(days(cut.raw, TODAY + DAY))
    expect(await count(table)).toBe(hourly.filter((r) => r.ts >= cut.raw).length)
    expect(store.rollupLevels.length).toBe(4)
    {
      expect(await partitions(`${table}_1m`)).toEqual(days(cut['1m'], TODAY + DAY))
      expect(await partitions(`${table}_5m`)).toEqual(days(cut['5m'], TODAY + DAY))
      expect(await partitions(`${table}_1h`)).toEqual(days(cut['1h'], TODAY + DAY))
      expect(await partitions(`${table}_1d`)).toEqual(months(cut['1d'], TODAY + DAY).filter((m) => m >= dayName(cut['1d']).slice(0, 7)))
      // The hour rollups still count every reading from their horizon to the raw one.
      if (hasViews) await waitFor(() => viewsCaughtUp(table), 30_000, 100)
      const hours = await store.buckets({ accountId, from: cut['1h'], to: cut.raw }, { interval: '1h', aggregates: ['count'], groupBy: 'series' }, 100_000)
      expect(counted(hours)).toBe(hourly.filter((r) => r.ts >= cut['1h'] && r.ts < cut.raw).length)
    }
  })
})
