// Expiry of readings in QuestDB (issue 30): whole partitions before each level's retention horizon go, never rows,
// and never the partition that holds the horizon.
//
// QuestDB 7.4 has no rollup views: the raw table drops its partitions with ALTER TABLE … DROP PARTITION WHERE ts <
// (start of the partition holding the horizon). QuestDB matches that WHERE against each partition's start (a
// boundary inside a day drops the whole day), hence the start of the horizon's partition, never the horizon itself.
//
// With rollups in materialized views (8.3.1 on), DROP PARTITION cannot be used: on the raw table it invalidates every
// view built on it ("drop partition operation", checked on 9.3.2), an invalid view neither refreshes again nor takes
// a range refresh, and only a full refresh revives it, rebuilding it from the raw readings that are left: the
// rollups of the dropped days would be lost. On a view QuestDB refuses it ("cannot modify materialized view").
// So the raw table and each view get a TTL instead (ALTER … SET TTL): QuestDB evicts partitions past their TTL in
// its writer when it applies a transaction, the ALTER itself included, and that invalidates no view (checked: the
// views keep every rollup of the evicted days and go on refreshing). A TTL of N days (months, for the day rollups'
// monthly partitions) evicts the partitions that end N or more periods before the table's newest timestamp, capped
// by the server's clock (cairo.ttl.use.wall.clock, on by default). N is the count of periods from the horizon's to
// now's: the cut falls exactly at the horizon when the newest reading is from today, and earlier (more is kept,
// never less) when the table has been quiet. The TTL stays on the table, so between runs the cut moves on with the
// clock, as the horizon does.
//
// A view refreshes by recomputing, from what its base holds, every bucket from the earliest to the latest timestamp
// of the base's new transactions, and replacing that whole range. A reading written for a day already evicted
// (late, or from a device with a wrong clock) would make the minute view replace every minute from it to the
// batch's last reading with what the raw table has left: the rollups of the evicted days would be lost. So the
// view built on the table (the first of the chain: the one-second step, or the minute view an earlier version made)
// gets a refresh limit of the raw table's N days (ALTER MATERIALIZED VIEW … SET REFRESH LIMIT): QuestDB leaves out
// of every refresh what is older than N days by its clock, which is always inside the raw readings kept (their first
// partition begins at midnight N days back, or earlier). Such a reading is written, evicted at once, and counted in
// no rollup (checked on 9.3.2); so is one from the horizon's own day older than N days by the clock. The one-second
// step keeps what the raw table keeps (the same TTL). Each later view refreshes from the one before it, over ranges
// that one has refreshed, so they need no limit. A full refresh (REFRESH MATERIALIZED VIEW … FULL) would rebuild a
// view from the raw readings left: never run one on a table with retention.
//
// Several processes may run this at once: a drop matching nothing is no error (7.4 applies it as a no-op) and two
// equal TTLs evict what one does. Each run reports the partitions it saw go, so two runs at once may both name one.
import type { Sql } from 'postgres'
import { ROLLUP_LEVELS } from '../planner.ts'
import type { MaintenanceReport, RetentionHorizons, RollupLevel } from './interface.ts'

/** The rollup levels, finest first (ROLLUP_LEVELS is coarsest first): expiry reports them in that order. */
const FINEST_FIRST = ROLLUP_LEVELS.map((l) => l.name).reverse()

export type PartitionUnit = 'day' | 'month'

const DAY_MS = 86_400_000
/** How long QuestDB may take to apply an ALTER from its WAL before a run gives up and says so. */
const APPLY_TIMEOUT_MS = 30_000
/** How long after an ALTER is applied queries may still list what it dropped. */
const VISIBILITY_GRACE_MS = 2_000

/** Periods since the epoch: days, or months. */
function periodAt(ms: number, unit: PartitionUnit): number {
  if (unit === 'day') return Math.floor(ms / DAY_MS)
  const date = new Date(ms)
  return date.getUTCFullYear() * 12 + date.getUTCMonth()
}

/** A partition's period from its name, '2026-11-20' or '2026-11' (a split partition's name goes on after that). */
function periodOf(name: string, unit: PartitionUnit): number {
  return periodAt(Date.UTC(Number(name.slice(0, 4)), Number(name.slice(5, 7)) - 1, unit === 'day' ? Number(name.slice(8, 10)) : 1), unit)
}

interface Partition { name: string; period: number }

async function partitionsOf(sql: Sql, name: string, unit: PartitionUnit): Promise<Partition[]> {
  const rows = await sql.unsafe<{ name: string }[]>(`select name from table_partitions('${name}')`)
  return rows.map((r) => ({ name: String(r.name), period: periodOf(String(r.name), unit) }))
}

/** The partitions wholly before `horizon` (-Infinity: kept forever). */
function expired(partitions: Partition[], horizon: number, unit: PartitionUnit): Partition[] {
  if (horizon === -Infinity) return []
  const first = periodAt(horizon, unit)
  return partitions.filter((p) => p.period < first)
}

/**
 * Runs an ALTER on a WAL table or view and waits until QuestDB has applied it (and every transaction before it):
 * the statement returns once the change is in the WAL, and is applied a moment later.
 */
async function alter(sql: Sql, name: string, statement: string): Promise<void> {
  await sql.unsafe(statement)
  const progress = async () => {
    const [row] = await sql.unsafe<Record<string, unknown>[]>(`select suspended, writerTxn, sequencerTxn from wal_tables() where name = '${name}'`)
    if (!row) throw new Error(`QuestDB has no WAL table ${name}`)
    if (row.suspended === true) throw new Error(`QuestDB suspended ${name} (see wal_tables()): ${statement}`)
    return { applied: Number(row.writerTxn), sequenced: Number(row.sequencerTxn) }
  }
  const { sequenced } = await progress()
  const deadline = Date.now() + APPLY_TIMEOUT_MS
  while ((await progress()).applied < sequenced) {
    if (Date.now() > deadline) throw new Error(`QuestDB did not apply "${statement}" within ${APPLY_TIMEOUT_MS / 1000} s`)
    await Bun.sleep(50)
  }
}

/**
 * Those of `doomed` gone once the ALTER is applied, as `table/partition` for the report. Queries may see the
 * partitions a moment longer (7.4.2 lists them for some 50 ms after it counts the ALTER applied), so this looks
 * again for a while before reporting fewer than all (a TTL cuts short of the horizon on a quiet table).
 */
async function gone(sql: Sql, name: string, unit: PartitionUnit, doomed: Partition[]): Promise<string[]> {
  const deadline = Date.now() + VISIBILITY_GRACE_MS
  for (;;) {
    const left = new Set((await partitionsOf(sql, name, unit)).map((p) => p.name))
    const went = doomed.filter((p) => !left.has(p.name))
    if (went.length === doomed.length || Date.now() > deadline) return went.map((p) => `${name}/${p.name}`)
    await Bun.sleep(50)
  }
}

/** 7.4: drops a table's partitions before the horizon (the readings, and our rollup tables: questdb-rollups.ts). */
async function dropPartitions(sql: Sql, table: string, unit: PartitionUnit, horizon: number): Promise<string[]> {
  const doomed = expired(await partitionsOf(sql, table, unit), horizon, unit)
  if (!doomed.length) return []
  const period = periodAt(horizon, unit)
  const firstKept = new Date(unit === 'day' ? period * DAY_MS : Date.UTC(Math.floor(period / 12), period % 12, 1)).toISOString()
  await alter(sql, table, `alter table ${table} drop partition where ts < '${firstKept}'`)
  return gone(sql, table, unit, doomed)
}

/** A TTL or refresh limit as QuestDB keeps it internally: hours when positive, months when negative, 0 for none. */
const SPAN_UNITS: Record<string, number> = { HOUR: 1, DAY: 24, WEEK: 168, MONTH: -1, YEAR: -12 }
const span = (value: unknown, unit: unknown) => (Number(value) === 0 ? 0 : Number(value) * SPAN_UNITS[String(unit)]!)

async function ttlOf(sql: Sql, name: string): Promise<number> {
  const [row] = await sql.unsafe<{ ttlValue: number; ttlUnit: string }[]>(`select ttlValue, ttlUnit from tables() where table_name = '${name}'`)
  if (!row) throw new Error(`QuestDB has no table ${name}`)
  return span(row.ttlValue, row.ttlUnit)
}

async function refreshLimitOf(sql: Sql, view: string): Promise<number> {
  const [row] = await sql.unsafe<{ refresh_limit: number; refresh_limit_unit: string }[]>(`select refresh_limit, refresh_limit_unit from materialized_views() where view_name = '${view}'`)
  if (!row) throw new Error(`QuestDB has no materialized view ${view}`)
  return span(row.refresh_limit, row.refresh_limit_unit)
}

/**
 * The span from now back to the horizon's period, as ALTER … SET TTL and SET REFRESH LIMIT spell it and as they
 * read back. Forever is none, except as the TTL of a monthly table that has had one: QuestDB (9.3.2) refuses TTL 0
 * there, so it gets a thousand years.
 */
function spanTo(horizon: number, now: number, unit: PartitionUnit, current: number): { clause: string; value: number } {
  if (horizon === -Infinity) return current === 0 || unit === 'day' ? { clause: '0 days', value: 0 } : { clause: '1000 years', value: -12_000 }
  // At least one period: 0 would mean none. One period when the horizon is in the current one cuts before it.
  const periods = Math.max(1, periodAt(now, unit) - periodAt(horizon, unit))
  return unit === 'day' ? { clause: `${periods} days`, value: periods * 24 } : { clause: `${periods} months`, value: -periods }
}

/** 8.3.1 on: sets the TTL of a table or view that cuts at its horizon; reports the partitions that went. */
async function expireByTtl(sql: Sql, kind: 'table' | 'materialized view', name: string, unit: PartitionUnit, horizon: number, now: number): Promise<string[]> {
  const current = await ttlOf(sql, name)
  const wanted = spanTo(horizon, now, unit, current)
  if (wanted.value === current) return []
  const doomed = expired(await partitionsOf(sql, name, unit), horizon, unit)
  // The TTL and its evictions are applied together.
  await alter(sql, name, `alter ${kind} ${name} set ttl ${wanted.clause}`)
  return gone(sql, name, unit, doomed)
}

/** 8.3.1 on: the view on the table refreshes nothing older than the raw readings kept (see above). */
async function limitRefresh(sql: Sql, view: string, rawHorizon: number, now: number): Promise<void> {
  const current = await refreshLimitOf(sql, view)
  const wanted = spanTo(rawHorizon, now, 'day', current)
  if (wanted.value === current) return
  await alter(sql, view, `alter materialized view ${view} set refresh limit ${wanted.clause}`)
}

/**
 * Expires the readings table `table` and its rollups (`${table}_${level}`, partitioned by `rollups.partitions[level]`):
 * materialized views (8.3.1 on) by TTL, our own tables (7.4) by DROP PARTITION; without rollups, the table alone.
 */
export async function expireQuestdb(sql: Sql, table: string, rollups: { kind: 'views'; partitions: Record<RollupLevel, PartitionUnit>; chain: readonly ('1s' | RollupLevel)[] } | { kind: 'tables'; partitions: Record<RollupLevel, PartitionUnit> } | undefined, horizons: RetentionHorizons, now: number): Promise<MaintenanceReport> {
  if (rollups?.kind !== 'views') {
    const dropped = await dropPartitions(sql, table, 'day', horizons.raw)
    if (rollups) {
      for (const level of FINEST_FIRST) dropped.push(...(await dropPartitions(sql, `${table}_${level}`, rollups.partitions[level], horizons[level])))
    }
    return { dropped, created: [] }
  }
  const views = rollups.partitions
  // The limit first: from the moment raw partitions go, no refresh may reach them.
  await limitRefresh(sql, `${table}_${rollups.chain[0]}`, horizons.raw, now)
  const dropped = await expireByTtl(sql, 'table', table, 'day', horizons.raw, now)
  if (rollups.chain[0] === '1s') dropped.push(...(await expireByTtl(sql, 'materialized view', `${table}_1s`, 'day', horizons.raw, now)))
  for (const level of FINEST_FIRST) dropped.push(...(await expireByTtl(sql, 'materialized view', `${table}_${level}`, views[level], horizons[level], now)))
  return { dropped, created: [] }
}
