// Readings in the records database (Postgres, or PGlite embedded): one multi-row insert per batch through
// unnest() of column arrays. A retried batch must add nothing: readings are unique on (device, channel, ts).
import type { Database, ReaderOptions } from '../../db/client.ts'
import { INTERVALS, rollupPieces, ROLLUP_LEVELS, type IntervalName, type Piece } from '../planner.ts'
import { SeriesCatalogue, seriesWhere } from '../series.ts'
import { NO_DEADLINE, type Aggregate, type AggregationSpec, type BucketPosition, type BucketRow, type LatestPosition, type ReadingsFilter, type ReadingsStore, type SeriesPosition } from './interface.ts'

/**
 * The rollups of the readings a statement inserted (`ins`: series_id, ts, value), added to a level's table in that
 * same statement: only rows actually inserted count, so a retried batch or a redelivered message (skipped by the
 * unique key) never counts twice, and a late reading updates the old buckets it falls in. Rows are upserted in key
 * order, so concurrent writers lock shared buckets in one order (no deadlock).
 */
const rollupFrom = (level: string, table: string) => `insert into ${table} as r (series_id, bucket, count, sum, min, max, first_ts, first_value, last_ts, last_value)
  select series_id, date_bin('${level}', ts, timestamptz '1970-01-01 00:00:00+00'), count(*), sum(value), min(value), max(value),
    min(ts), (array_agg(value order by ts))[1], max(ts), (array_agg(value order by ts desc))[1]
  from ins group by 1, 2 order by 1, 2
  on conflict (series_id, bucket) do update set count = r.count + excluded.count, sum = r.sum + excluded.sum,
    min = least(r.min, excluded.min), max = greatest(r.max, excluded.max),
    first_ts = least(r.first_ts, excluded.first_ts), first_value = case when excluded.first_ts < r.first_ts then excluded.first_value else r.first_value end,
    last_ts = greatest(r.last_ts, excluded.last_ts), last_value = case when excluded.last_ts > r.last_ts then excluded.last_value else r.last_value end`

// Timestamps travel as epoch milliseconds (exact in a float8) rather than timestamptz[]: cheaper to build, and
// drizzle's postgres.js set-up passes timestamptz values through unserialised, which breaks arrays of them.
const insert = (onConflict: string) => `with ins as (
  insert into sensor_readings (account_id, device_id, channel, ts, value, metric, environment_id, series_id)
  select a, d, c, timestamptz 'epoch' + t * interval '1 millisecond', v, m, e, s
  from unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::float8[], $6::text[], $7::text[], $8::int4[]) as r(a, d, c, t, v, m, e, s)
  ${onConflict} returning series_id, ts, value
), minutes as (${rollupFrom('1 minute', 'reading_rollups_1m')}), hours as (${rollupFrom('1 hour', 'reading_rollups_1h')}), days as (${rollupFrom('1 day', 'reading_rollups_1d')})
select 1`
// Speculative insertion costs Postgres about 40% more per row than a plain insert (measured on this table with
// its indexes), and nearly every batch holds only new readings. So a batch is inserted plainly first; only when
// the unique key refuses it (a retry, or a reading already stored) is it inserted again skipping what exists.
const INSERT = insert('')
const INSERT_SKIPPING_STORED = insert('on conflict (device_id, channel, ts) do nothing')
const UNIQUE_VIOLATION = '23505'


/** The WHERE clause for a filter, appending its parameters to `params` (numbered in order). */
function where(filter: ReadingsFilter, params: unknown[]): string {
  const clauses = [
    'account_id = $' + params.push(filter.accountId),
    `ts >= $${params.push(iso(filter.from))}::timestamptz`,
    `ts < $${params.push(iso(filter.to))}::timestamptz`,
  ]
  if (filter.environmentId !== undefined) clauses.push('environment_id = $' + params.push(filter.environmentId))
  if (filter.deviceId !== undefined) clauses.push('device_id = $' + params.push(filter.deviceId))
  if (filter.channel !== undefined) clauses.push('channel = $' + params.push(filter.channel))
  if (filter.metric !== undefined) clauses.push('metric = $' + params.push(filter.metric))
  return clauses.join(' and ')
}

/** Instants bind as ISO text with a cast: the drivers disagree on how to send a Date. */
const iso = (ms: number) => new Date(ms).toISOString()
const toMs = (value: unknown) => (value instanceof Date ? value.getTime() : new Date(String(value)).getTime())
const num = (value: unknown) => (value === null || value === undefined ? undefined : Number(value))

/**
 * Device ids and channels order and compare bytewise (COLLATE "C") whatever the database's collation: the planner
 * merges rows in JavaScript's order, and QuestDB compares them the same way.
 */
const byte = (column: string) => `${column} collate "C"`

const EPOCH = `timestamptz '1970-01-01 00:00:00+00'`

/** Per-bucket statistics of each series in a piece of the window, from its rollup level or from the raw readings. */
function pieceSql(piece: Piece, interval: string, accountId: string, params: unknown[]): string {
  const from = `$${params.push(iso(piece.from))}::timestamptz`
  const to = `$${params.push(iso(piece.to))}::timestamptz`
  if (piece.level !== 'raw') {
    return `select series_id, date_bin(${interval}, bucket, ${EPOCH}) as b, count, sum, min, max, last_ts, last_value
      from reading_rollups_${piece.level} where series_id in (select id from s) and bucket >= ${from} and bucket < ${to}`
  }
  return `select series_id, date_bin(${interval}, ts, ${EPOCH}) as b, count(*)::int as count, sum(value) as sum, min(value) as min, max(value) as max,
      max(ts) as last_ts, (array_agg(value order by ts desc))[1] as last_value
    from sensor_readings where account_id = $${params.push(accountId)} and ts >= ${from} and ts < ${to} and series_id in (select id from s) group by 1, 2`
}

// `last` across series: the value at the latest time, the greatest of them when several series share that time.
const AGGREGATE_SQL: Record<Aggregate, string> = {
  avg: 'sum(p.sum) / sum(p.count)', min: 'min(p.min)', max: 'max(p.max)', count: 'sum(p.count)::int',
  last: '(array_agg(p.last_value order by p.last_ts desc, p.last_value desc))[1]',
}

/**
 * Pieces are binned from the epoch at a width every bucket boundary is a multiple of: the interval itself, or a day
 * for weeks (which start on Mondays, and the epoch was a Thursday) and months (whose length varies); the bins are
 * placed in their week or month where the pieces are combined.
 */
const PIECE_BIN: Partial<Record<IntervalName, string>> = { '1w': '1 day', '1mo': '1 day' }
const BUCKET_OF: Partial<Record<IntervalName, (bin: string) => string>> = {
  // ISO weeks start on Monday 00:00 UTC; 1970-01-05 was a Monday.
  '1w': (bin) => `date_bin('7 days', ${bin}, timestamptz '1970-01-05 00:00:00+00')`,
  '1mo': (bin) => `date_trunc('month', ${bin}, 'UTC')`,
}

/**
 * The buckets that hold readings, combined from the pieces the planner picks (rollups where they answer exactly, raw
 * readings at the edges): (bucket, device_id, channel, metric, environment_id, …aggregates), a bucket row being a
 * device's channel whose metric and environment are those of its latest reading in the bucket; or, grouped by
 * metric, (bucket, metric, …aggregates) over the series with a metric (each series counted under the metric it had).
 */
function bucketsSql(filter: ReadingsFilter, spec: AggregationSpec, params: unknown[]): string {
  const interval = `$${params.push(PIECE_BIN[spec.interval] ?? `${INTERVALS[spec.interval]} milliseconds`)}::interval`
  const byMetric = spec.groupBy === 'metric'
  const series = `select id, device_id, channel, metric, environment_id from reading_series where ${seriesWhere(filter, params)}${byMetric ? ' and metric is not null' : ''}`
  const pieces = rollupPieces(filter.from, filter.to, spec.interval).map((piece) => pieceSql(piece, interval, filter.accountId, params))
  const keys = byMetric ? 'null::text as device_id, null::text as channel, s.metric' : 's.device_id, s.channel'
  if (!pieces.length) return `select null::timestamptz as bucket, null::text as device_id, null::text as channel, null::text as metric, null::text as environment_id where false`
  const selected = spec.aggregates.map((a) => `${AGGREGATE_SQL[a]} as "${a}"`).join(', ')
  const identity = byMetric
    ? `${keys}, $${params.push(filter.environmentId ?? null)}::text as environment_id`
    : `${keys}, (array_agg(s.metric order by p.last_ts desc))[1] as metric, (array_agg(s.environment_id order by p.last_ts desc))[1] as environment_id`
  return `with s as (${series}), p as (${pieces.join('\n    union all ')})
    select ${BUCKET_OF[spec.interval]?.('p.b') ?? 'p.b'} as bucket, ${identity}, ${selected}
    from p join s on s.id = p.series_id group by ${byMetric ? '1, s.metric' : '1, s.device_id, s.channel'}`
}

const DEFAULT_READER: ReaderOptions = { connections: 4, statementTimeoutMs: 30_000 }

/**
 * Reads go through a pool of their own (`reader`), writes through the records database's; `catalogue` registers
 * each series before its first reading is written.
 */
export function sqlStore(database: Database, reader: ReaderOptions = DEFAULT_READER, catalogue = new SeriesCatalogue(database)): ReadingsStore {
  const reads = database.openReader(reader)
  return {
    kind: 'sql',
    rollupLevels: ROLLUP_LEVELS.map((l) => l.name),
    // Not yet: partitions and expiry come with the compact layout (issue 30).
    async maintain() { return { dropped: [], created: [] } },
    async write(readings) {
      if (!readings.length) return
      const series = await catalogue.idsOf(readings)
      const n = readings.length
      const cols = { account: new Array<string>(n), device: new Array<string>(n), channel: new Array<string>(n), ts: new Array<number>(n), value: new Array<number>(n), metric: new Array<string | null>(n), env: new Array<string | null>(n) }
      for (let i = 0; i < n; i++) {
        const r = readings[i]!
        cols.account[i] = r.accountId; cols.device[i] = r.deviceId; cols.channel[i] = r.channel
        cols.ts[i] = r.ts; cols.value[i] = r.value; cols.metric[i] = r.metric; cols.env[i] = r.environmentId
      }
      const params = [cols.account, cols.device, cols.channel, cols.ts, cols.value, cols.metric, cols.env, Array.from(series)]
      try {
        await database.query(INSERT, params)
      } catch (error) {
        if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error
        await database.query(INSERT_SKIPPING_STORED, params)
      }
    },
    async raw(filter, limit, after?: SeriesPosition, skip = 0, signal = NO_DEADLINE) {
      const params: unknown[] = []
      let text = `select ts, device_id, channel, metric, environment_id, value from sensor_readings where ${where(filter, params)}`
      if (after) text += ` and (ts, ${byte('device_id')}, ${byte('channel')}) > ($${params.push(iso(after[0]))}::timestamptz, $${params.push(after[1])}, $${params.push(after[2])})`
      text += ` order by ts, ${byte('device_id')}, ${byte('channel')} limit $${params.push(limit)} offset $${params.push(skip)}`
      const rows = await reads.query<Record<string, unknown>>(text, params, signal)
      return rows.map((r) => ({ ts: toMs(r.ts), device_id: String(r.device_id), channel: String(r.channel), metric: (r.metric as string | null) ?? null, environment_id: (r.environment_id as string | null) ?? null, value: Number(r.value) }))
    },
    async buckets(filter, spec, limit, after?: BucketPosition, skip = 0, signal = NO_DEADLINE) {
      const params: unknown[] = []
      const keys = spec.groupBy === 'metric' ? [byte('metric')] : [byte('device_id'), byte('channel')]
      let text = `select * from (${bucketsSql(filter, spec, params)}) b`
      if (after) text += ` where (bucket, ${keys.join(', ')}) > ($${params.push(iso(after[0]))}::timestamptz, ${keys.map((_, i) => `$${params.push(after[i + 1])}`).join(', ')})`
      text += ` order by bucket, ${keys.join(', ')} limit $${params.push(limit)} offset $${params.push(skip)}`
      const rows = await reads.query<Record<string, unknown>>(text, params, signal)
      return rows.map((r) => {
        const identity = spec.groupBy === 'metric' ? {} : { device_id: String(r.device_id), channel: String(r.channel) }
        const row: BucketRow = { ts: toMs(r.bucket), ...identity, metric: (r.metric as string | null) ?? null, environment_id: (r.environment_id as string | null) ?? null }
        for (const a of spec.aggregates) row[a] = num(r[a])
        return row
      })
    },
    async latest(filter, limit, after?: LatestPosition, signal = NO_DEADLINE) {
      // One backward probe of the (device, channel, ts) index per series the catalogue knows for the filter,
      // rather than a scan of every reading in the window.
      const params: unknown[] = []
      const series = `select distinct device_id, channel from reading_series where ${seriesWhere(filter, params)}`
      let text = `select r.ts, s.device_id, s.channel, r.metric, r.environment_id, r.value from (${series}) s
        cross join lateral (select ts, metric, environment_id, value from sensor_readings
          where device_id = s.device_id and channel = s.channel and ${where(filter, params)} order by ts desc limit 1) r`
      if (after) text += ` where (${byte('s.device_id')}, ${byte('s.channel')}) > ($${params.push(after[0])}, $${params.push(after[1])})`
      text += ` order by ${byte('s.device_id')}, ${byte('s.channel')} limit $${params.push(limit)}`
      const rows = await reads.query<Record<string, unknown>>(text, params, signal)
      return rows.map((r) => ({ ts: toMs(r.ts), device_id: String(r.device_id), channel: String(r.channel), metric: (r.metric as string | null) ?? null, environment_id: (r.environment_id as string | null) ?? null, value: Number(r.value) }))
    },
    ping: () => database.ping(),
    // The records database is closed by its owner; the readers' pool is ours.
    close: () => reads.close(),
  }
}
