// The planner's answer equals what raw readings give (property, fast-check): random readings with late and
// retried writes, random windows, intervals, aggregates, fills, filters and page sizes, walked page by page, give
// exactly the rows a direct computation over the raw readings gives. On the SQL store always; on QuestDB too when
// QUESTDB_ILP and QUESTDB_PG_URL are set.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import postgres from 'postgres'
import { bucketPage, INTERVALS, type IntervalName } from '../../ingest/planner.ts'
import { SeriesCatalogue } from '../../ingest/series.ts'
import { questdbStore } from '../../ingest/stores/questdb.ts'
import { sqlStore } from '../../ingest/stores/sql.ts'
import { AGGREGATES, NO_DEADLINE, type Aggregate, type BucketRow, type BucketSpec, type Fill, type Reading, type ReadingsFilter, type ReadingsStore, type SeriesPosition } from '../../ingest/stores/interface.ts'
import { loadConfig } from '../../src/config.ts'
import { dropQuestdbTable, createTestEnv, waitFor, type TestEnv } from '../helpers.ts'

const QUESTDB_ILP = process.env.QUESTDB_ILP || undefined
const QUESTDB_PG_URL = process.env.QUESTDB_PG_URL || undefined
if (!QUESTDB_ILP || !QUESTDB_PG_URL) console.log('readings-planner.test: QuestDB runs skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run them against a QuestDB server')

const BASE = Date.UTC(2026, 0, 5, 3, 0, 0)
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Buckets straight from the raw readings: the answer the planner must give. */
function reference(readings: readonly Reading[], filter: ReadingsFilter, spec: BucketSpec): BucketRow[] {
  const interval = spec.intervalMs
  const inWindow = readings.filter((r) => r.accountId === filter.accountId && r.ts >= filter.from && r.ts < filter.to
    && (filter.deviceId === undefined || r.deviceId === filter.deviceId) && (filter.channel === undefined || r.channel === filter.channel)
    && (filter.metric === undefined || r.metric === filter.metric) && (filter.environmentId === undefined || r.environmentId === filter.environmentId))
  const groups = new Map<string, Reading[]>()
  for (const r of inWindow) {
    const key = `${Math.floor(r.ts / interval) * interval}\u0000${r.deviceId}\u0000${r.channel}`
    groups.set(key, [...(groups.get(key) ?? []), r])
  }
  const held = new Map<string, BucketRow>()
  for (const [key, rs] of groups) {
    const [ts, device, channel] = key.split('\u0000')
    const newest = rs.reduce((a, b) => (b.ts > a.ts ? b : a))
    const row: BucketRow = { ts: Number(ts), device_id: device!, channel: channel!, metric: newest.metric, environment_id: newest.environmentId }
    for (const a of spec.aggregates) {
      row[a] = a === 'avg' ? rs.reduce((s, r) => s + r.value, 0) / rs.length : a === 'min' ? Math.min(...rs.map((r) => r.value))
        : a === 'max' ? Math.max(...rs.map((r) => r.value)) : a === 'count' ? rs.length : newest.value
    }
    held.set(key, row)
  }
  const order = (a: BucketRow, b: BucketRow) => a.ts - b.ts || byteOrder(a.device_id, b.device_id) || byteOrder(a.channel, b.channel)
  if (spec.fill === 'none') return [...held.values()].sort(order)
  const series = [...new Set(inWindow.map((r) => `${r.deviceId}\u0000${r.channel}`))].map((s) => s.split('\u0000') as [string, string])
    .sort((a, b) => byteOrder(a[0], b[0]) || byteOrder(a[1], b[1]))
  const out: BucketRow[] = []
  const carried = new Map<string, BucketRow>()
  for (let ts = Math.floor(filter.from / interval) * interval; ts < filter.to; ts += interval) {
    for (const [device, channel] of series) {
      const row = held.get(`${ts}\u0000${device}\u0000${channel}`)
      if (row) { carried.set(`${device}\u0000${channel}`, row); out.push(row); continue }
      const earlier = carried.get(`${device}\u0000${channel}`)
      const empty: BucketRow = { ts, device_id: device, channel, metric: earlier?.metric ?? null, environment_id: earlier?.environment_id ?? null }
      for (const a of spec.aggregates) empty[a] = a === 'count' ? 0 : spec.fill === 'previous' ? earlier?.[a] : undefined
      out.push(empty)
    }
  }
  return out
}

/** Every page of the planner's answer, each resuming after the last row of the one before. */
async function walk(store: ReadingsStore, filter: ReadingsFilter, spec: BucketSpec, limit: number, seriesBound: number): Promise<BucketRow[]> {
  const all: BucketRow[] = []
  let after: SeriesPosition | undefined
  for (let page = 0; page < 10_000; page++) {
    const rows = await bucketPage(store, filter, spec, limit, after, NO_DEADLINE, seriesBound)
    all.push(...rows)
    if (rows.length < limit) return all
    const last = rows[rows.length - 1]!
    after = [last.ts, last.device_id, last.channel]
  }
  throw new Error('walk did not end')
}

/** Floats compared to 9 significant digits (avg is a sum divided in another order); absent stays absent. */
const rounded = (rows: BucketRow[]) => rows.map((row) => Object.fromEntries(Object.entries(row)
  .map(([k, v]) => [k, typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(9)) : v ?? null])))

const dataArbitrary = fc.array(fc.record({
  device: fc.constantFrom('dev_A', 'dev_b', 'dev_b-2'),
  channel: fc.constantFrom('t1', 'T_2', 'h.1'),
  minute: fc.integer({ min: 0, max: 2 * 24 * 60 }),
  second: fc.integer({ min: 0, max: 59 }),
  value: fc.integer({ min: -10_000, max: 10_000 }).map((v) => v / 8),
  mapping: fc.constantFrom<[string | null, string | null]>(['temperature', 'env_1'], ['temperature', 'env_2'], ['humidity', 'env_1'], [null, null]),
  late: fc.boolean(),
}), { minLength: 1, maxLength: 200 })

const queryArbitrary = fc.record({
  fromMinute: fc.integer({ min: -90, max: 2 * 24 * 60 }),
  lengthMinutes: fc.integer({ min: 1, max: 3 * 24 * 60 }),
  interval: fc.constantFrom(...(Object.keys(INTERVALS) as IntervalName[])),
  aggregates: fc.subarray([...AGGREGATES], { minLength: 1 }),
  fill: fc.constantFrom<Fill>('none', 'null', 'previous'),
  narrow: fc.constantFrom<'all' | 'device' | 'channel' | 'metric' | 'environment'>('all', 'device', 'channel', 'metric', 'environment'),
  limit: fc.integer({ min: 1, max: 400 }),
})

type Datum = { device: string; channel: string; minute: number; second: number; value: number; mapping: [string | null, string | null]; late: boolean }

function readingsOf(accountId: string, data: readonly Datum[]): Reading[] {
  // Timestamps are unique per series: a store keeps one reading per (device, channel, ts).
  const seen = new Set<string>()
  const out: Reading[] = []
  for (const d of data) {
    const ts = BASE + d.minute * 60_000 + d.second * 1000
    const key = `${d.device}\u0000${d.channel}\u0000${ts}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push({ accountId, deviceId: `${accountId}_${d.device}`, channel: d.channel, ts, value: d.value, metric: d.mapping[0], environmentId: d.mapping[1] })
  }
  return out
}

async function writeWithRetriesAndLateArrivals(store: ReadingsStore, readings: Reading[], late: boolean[]) {
  const onTime = readings.filter((_, i) => !late[i])
  const lateOnes = readings.filter((_, i) => late[i])
  await store.write(onTime)
  await store.write(onTime.slice(0, Math.ceil(onTime.length / 2))) // a retried batch
  await store.write(lateOnes) // readings arriving late for old buckets
  await store.write(lateOnes) // and redelivered
}

function property(store: () => ReadingsStore, settle: (accountId: string, count: number) => Promise<void> = async () => {}) {
  let run = 0
  return fc.asyncProperty(dataArbitrary, queryArbitrary, async (data, q) => {
    const accountId = `acct_pl_${Date.now().toString(36)}_${run++}`
    const readings = readingsOf(accountId, data)
    const late = readings.map((r) => data.find((d) => `${accountId}_${d.device}` === r.deviceId && d.channel === r.channel)?.late ?? false)
    await writeWithRetriesAndLateArrivals(store(), readings, late)
    await settle(accountId, readings.length)
    const from = BASE + q.fromMinute * 60_000
    const filter: ReadingsFilter = {
      accountId, from, to: from + q.lengthMinutes * 60_000,
      ...(q.narrow === 'device' ? { deviceId: `${accountId}_dev_b` } : q.narrow === 'channel' ? { channel: 'T_2' } : q.narrow === 'metric' ? { metric: 'temperature' } : q.narrow === 'environment' ? { environmentId: 'env_1' } : {}),
    }
    const spec: BucketSpec = { intervalMs: INTERVALS[q.interval], aggregates: q.aggregates as Aggregate[], fill: q.fill }
    const expected = reference(readings, filter, spec)
    expect(rounded(await walk(store(), filter, spec, q.limit, 9 * 4))).toEqual(rounded(expected))
  })
}

describe('the planner equals the raw answer (SQL store)', () => {
  let env: TestEnv
  let store: ReadingsStore
  beforeAll(async () => { env = await createTestEnv(); store = sqlStore(env.deps.database) })
  afterAll(async () => { await store.close(); await env.close() })

  test('random data, late and retried writes, windows, intervals, aggregates, fills, filters and page sizes', async () => {
    await fc.assert(property(() => store), { numRuns: 40 })
  })
})

describe.skipIf(!QUESTDB_ILP || !QUESTDB_PG_URL)('the planner equals the raw answer (QuestDB)', () => {
  const table = `hrs_test_planner_${Date.now().toString(36)}`
  let env: TestEnv
  let store: ReadingsStore
  beforeAll(async () => {
    env = await createTestEnv()
    store = await questdbStore(loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table }), new SeriesCatalogue(env.deps.database))
  })
  afterAll(async () => {
    await store?.close()
    const admin = postgres(QUESTDB_PG_URL!, { max: 1, prepare: false, onnotice: () => {} })
    await dropQuestdbTable(admin, table)
    await admin.end()
    await env?.close()
  })

  test('random data, late and retried writes, windows, intervals, aggregates, fills, filters and page sizes', async () => {
    // QuestDB applies WAL writes a moment after acknowledging them: wait until every reading is visible, and (where
    // the server has materialized views) until the rollup views have caught up, so the planner reads them.
    const admin = postgres(QUESTDB_PG_URL!, { max: 1, prepare: false, onnotice: () => {} })
    const viewsExist = (await admin.unsafe(`select view_name from materialized_views() where view_name = '${table}_1m'`).catch(() => [])).length > 0
    console.log(`readings-planner.test: QuestDB ${viewsExist ? 'has materialized views: the rollup views are read' : 'has no materialized views (before 8.3.1): raw readings are read'}`)
    const viewsCaughtUp = async () => (await admin.unsafe(`select refresh_base_table_txn, base_table_txn, view_status from materialized_views() where view_name like '${table}_%'`))
      .every((r) => r.view_status === 'valid' && Number(r.refresh_base_table_txn) === Number(r.base_table_txn))
    const settle = async (accountId: string, count: number) => {
      await waitFor(async () => (await store.raw({ accountId, from: 0, to: BASE + 10 * 86_400_000 }, count + 1)).length === count, 30_000, 50)
      if (viewsExist) await waitFor(viewsCaughtUp, 30_000, 50)
    }
    try {
      await fc.assert(property(() => store, settle), { numRuns: 25 })
    } finally {
      await admin.end()
    }
  }, 600_000)
})
