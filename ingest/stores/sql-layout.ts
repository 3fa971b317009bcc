// The SQL store's partitions (migrations 0007, 0010): readings, minute and 5-minute rollups in a partition per week (Monday 00:00
// UTC), hour and day rollups in a partition per year. Partitions are made ahead of the writes that need them and
// dropped whole once every instant they hold is past their level's retention; never a row deleted one by one.
// Readings stored before the compact layout are moved here from sensor_readings_legacy in batches.
// Every step is safe when several processes run it at once: DDL under one advisory lock, moves row-locked.
import type { Database } from '../../db/client.ts'
import { bucketOf, bucketsAfter } from '../planner.ts'
import type { RetentionHorizons, RollupLevel } from './interface.ts'

const WEEK_MS = 7 * 86_400_000

type Grid = 'week' | 'year'
interface Partitioned { table: string; level: RollupLevel | 'raw'; grid: Grid; fillfactor: number }

/**
 * Rollup rows are updated in place as readings arrive (fillfactor leaves room for HOT updates); readings never are.
 * The grids nest the levels' buckets: a reading and each of its rollup buckets fall in the same cell of each grid.
 */
export const PARTITIONED: readonly Partitioned[] = [
  { table: 'readings', level: 'raw', grid: 'week', fillfactor: 100 },
  { table: 'reading_rollups_1m', level: '1m', grid: 'week', fillfactor: 80 },
  { table: 'reading_rollups_5m', level: '5m', grid: 'week', fillfactor: 80 },
  { table: 'reading_rollups_1h', level: '1h', grid: 'year', fillfactor: 80 },
  { table: 'reading_rollups_1d', level: '1d', grid: 'year', fillfactor: 80 },
]

/** The start of the grid cell holding `ms`, and the start of the next. */
export function cellOf(grid: Grid, ms: number): [from: number, to: number] {
  // Weeks are the planner's ISO weeks (Monday 00:00 UTC), as date_trunc('week') in migration 0007.
  if (grid === 'week') return [bucketOf('1w', ms), bucketsAfter('1w', ms, 1)]
  const year = new Date(ms).getUTCFullYear()
  return [Date.UTC(year, 0, 1), Date.UTC(year + 1, 0, 1)]
}

const stamp = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')
const iso = (ms: number) => new Date(ms).toISOString()
/** One lock for all of this layout's DDL, across processes (an arbitrary constant, "readings layout"). */
const DDL_LOCK = 7_301_986_042

/**
 * Makes the partitions holding `instants` where absent, in one statement. A range another partition already covers
 * (the rollups kept from before the compact layout) is left to it.
 */
export async function ensurePartitions(database: Pick<Database, 'query'>, instants: Iterable<number>): Promise<string[]> {
  const wanted = new Map<string, string>()
  for (const ms of instants) {
    for (const p of PARTITIONED) {
      const [from, to] = cellOf(p.grid, ms)
      const name = `${p.table}_p${stamp(from)}`
      if (!wanted.has(name)) wanted.set(name, `create table if not exists ${name} partition of ${p.table} for values from ('${iso(from)}') to ('${iso(to)}') with (fillfactor = ${p.fillfactor})`)
    }
  }
  if (!wanted.size) return []
  const existing = new Set((await database.query<{ name: string }>(`select relname as name from pg_class where relname = any($1::text[])`, [[...wanted.keys()]])).map((r) => r.name))
  const missing = [...wanted].filter(([name]) => !existing.has(name))
  if (!missing.length) return []
  // 42P17: the range overlaps a partition that already holds it (the legacy rollups' partition).
  await database.query(`do $$ begin
    perform pg_advisory_xact_lock(${DDL_LOCK});
    ${missing.map(([, ddl]) => `begin execute '${ddl.replaceAll("'", "''")}'; exception when invalid_object_definition then null; end;`).join('\n    ')}
  end $$`)
  return missing.map(([name]) => name)
}

/** The partitions every instant of which is before their level's horizon: what expiry drops. */
export async function expiredPartitions(database: Pick<Database, 'query'>, horizons: RetentionHorizons): Promise<string[]> {
  const rows = await database.query<{ name: string; parent: string; upper_ms: number | null }>(`select c.relname as name, p.relname as parent,
      extract(epoch from (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz) * 1000 as upper_ms
    from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname = any($1::text[])`, [PARTITIONED.map((p) => p.table)])
  const levelOf = new Map(PARTITIONED.map((p) => [p.table, p.level]))
  return rows.filter((r) => r.upper_ms !== null && Number(r.upper_ms) <= horizons[levelOf.get(r.parent)!]).map((r) => r.name).sort()
}

/**
 * Drops the expired partitions. A drop waits at most two seconds for the table's lock (ingest holds it for a
 * moment per batch); one that cannot have it is left for the next run rather than queueing writes behind it.
 */
export async function dropExpired(database: Pick<Database, 'query'>, horizons: RetentionHorizons): Promise<string[]> {
  const expired = await expiredPartitions(database, horizons)
  if (!expired.length) return []
  const rows = await database.query<{ dropped: string[] | null }>(`select readings_drop_partitions($1::text[]) as dropped`, [expired]).catch(async (error) => {
    if ((error as { code?: string }).code !== '42883') throw error
    await database.query(DROP_FUNCTION)
    return database.query<{ dropped: string[] | null }>(`select readings_drop_partitions($1::text[]) as dropped`, [expired])
  })
  return rows[0]?.dropped ?? []
}

/** Made on first use (not in a migration: the function is this module's, and changes with it). */
const DROP_FUNCTION = `create or replace function readings_drop_partitions(names text[]) returns text[] language plpgsql as $$
declare
  name text;
  dropped text[] := '{}';
begin
  perform pg_advisory_xact_lock(${DDL_LOCK});
  set local lock_timeout = '2s';
  foreach name in array names loop
    begin
      if to_regclass(name) is not null then
        execute format('drop table %I', name);
        dropped := dropped || name;
      end if;
    exception when lock_not_available then null;
    end;
  end loop;
  return dropped;
end $$`

/** Where a move of legacy readings stands: the last key moved (device, channel, ts in ms) in the legacy table's order. */
export type LegacyPosition = [deviceId: string, channel: string, ts: number] | undefined

export interface LegacyMove { moved: number; expired: number; position: LegacyPosition; done: boolean }

/** Whether readings from before the compact layout are still waiting to be moved. */
export async function hasLegacy(database: Pick<Database, 'query'>): Promise<boolean> {
  const [row] = await database.query<{ present: boolean }>(`select to_regclass('sensor_readings_legacy') is not null as present`)
  return Boolean(row?.present)
}

/**
 * Moves one batch of legacy readings (the next `limit` after `position` in the legacy key order) into the compact
 * table, in one statement: each reading is in exactly one of the tables at any moment, and a killed move leaves
 * nothing half done. Readings before the raw horizon are dropped instead (their rollups stay). Their partitions are
 * made first, from the batch's own weeks. The move does not touch rollups or reading_latest: the readings were
 * counted when first written. It inserts in the key order the store's writers use (channel, ts), so a writer
 * storing a reading being moved at that moment waits for the move rather than deadlocking with it.
 */
export async function moveLegacyBatch(database: Pick<Database, 'query'>, position: LegacyPosition, limit: number, rawHorizon: number): Promise<LegacyMove> {
  const params = position ? [position[0], position[1], iso(position[2]), limit] : ['', '', '-infinity', limit]
  const weeks = await database.query<{ week_ms: number }>(`select distinct extract(epoch from date_trunc('week', ts at time zone 'UTC') at time zone 'UTC') * 1000 as week_ms
    from (select ts from sensor_readings_legacy where (device_id, channel, ts) > ($1, $2, $3::timestamptz) order by device_id, channel, ts limit $4) b`, params)
  await ensurePartitions(database, weeks.map((w) => Number(w.week_ms)).filter((ms) => ms + WEEK_MS > rawHorizon))
  const [row] = await database.query<{ moved: number; expired: number; device_id: string | null; channel: string | null; ts_ms: number | null }>(`with batch as (
      select device_id, channel, ts from sensor_readings_legacy where (device_id, channel, ts) > ($1, $2, $3::timestamptz)
      order by device_id, channel, ts limit $4 for update skip locked
    ), moved as (
      delete from sensor_readings_legacy l using batch b where l.device_id = b.device_id and l.channel = b.channel and l.ts = b.ts
      returning l.series_id, l.ts, l.value
    ), kept as (
      insert into readings (channel_id, series_id, ts, value)
      select s.channel_id, m.series_id, m.ts, m.value from moved m join reading_series s on s.id = m.series_id where m.ts >= $5::timestamptz
      order by s.channel_id, m.ts
      on conflict do nothing returning 1
    ), last as (
      select device_id, channel, ts from batch order by device_id desc, channel desc, ts desc limit 1
    )
    select (select count(*) from kept)::int as moved, (select count(*) from moved)::int - (select count(*) from kept)::int as expired,
      last.device_id, last.channel, extract(epoch from last.ts) * 1000 as ts_ms from (select 1) one left join last on true`, [...params, Number.isFinite(rawHorizon) ? iso(rawHorizon) : '-infinity'])
  const moved = Number(row?.moved ?? 0)
  const expired = Number(row?.expired ?? 0)
  // At the end of the key order: rows a concurrent move had locked may remain behind it, so the next batch starts over.
  if (row?.device_id == null) return { moved, expired, position: undefined, done: !(await anyLegacyLeft(database)) }
  return { moved, expired, position: [row.device_id, row.channel!, Number(row.ts_ms)], done: false }
}

/** Nothing left after the last position may still leave rows a concurrent move skipped (locked): look again from the start. */
async function anyLegacyLeft(database: Pick<Database, 'query'>): Promise<boolean> {
  const [row] = await database.query<{ left: boolean }>(`select exists (select 1 from sensor_readings_legacy) as left`)
  return Boolean(row?.left)
}

/**
 * Once the legacy table is empty: reading_rows shows the compact table alone and the legacy table is dropped, in one
 * transaction (a writer that still checks the legacy table gets 42P01 and stops checking).
 */
export async function finishLegacy(database: Pick<Database, 'query'>): Promise<boolean> {
  const [row] = await database.query<{ finished: boolean }>(`select readings_finish_legacy() as finished`).catch(async (error) => {
    if ((error as { code?: string }).code !== '42883') throw error
    await database.query(FINISH_FUNCTION)
    return database.query<{ finished: boolean }>(`select readings_finish_legacy() as finished`)
  })
  return Boolean(row?.finished)
}

const FINISH_FUNCTION = `create or replace function readings_finish_legacy() returns boolean language plpgsql as $$
begin
  perform pg_advisory_xact_lock(${DDL_LOCK});
  if to_regclass('sensor_readings_legacy') is null then return true; end if;
  if exists (select 1 from sensor_readings_legacy) then return false; end if;
  create or replace view reading_rows as select channel_id, series_id, ts, value from readings;
  drop table sensor_readings_legacy;
  return true;
end $$`
