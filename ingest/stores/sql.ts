// Readings in the records database (Postgres, or PGlite embedded): one multi-row insert per batch through
// unnest() of column arrays. A retried batch must add nothing: readings are unique on (device, channel, ts).
import type { Database } from '../../db/client.ts'
import { bucketWindow, firstBucket, type Aggregate, type BucketRow, type BucketSpec, type LatestPosition, type ReadingsFilter, type ReadingsStore, type SeriesPosition } from './interface.ts'

// Timestamps travel as epoch milliseconds (exact in a float8) rather than timestamptz[]: cheaper to build, and
// drizzle's postgres.js set-up passes timestamptz values through unserialised, which breaks arrays of them.
const INSERT = `insert into sensor_readings (account_id, device_id, channel, ts, value, metric, environment_id)
select a, d, c, timestamptz 'epoch' + t * interval '1 millisecond', v, m, e
from unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::float8[], $6::text[], $7::text[]) as r(a, d, c, t, v, m, e)`
// Speculative insertion costs Postgres about 40% more per row than a plain insert (measured on this table with
// its indexes), and nearly every batch holds only new readings. So a batch is inserted plainly first; only when
// the unique key refuses it (a retry, or a reading already stored) is it inserted again skipping what exists.
const INSERT_SKIPPING_STORED = `${INSERT}\non conflict (device_id, channel, ts) do nothing`
const UNIQUE_VIOLATION = '23505'

const AGGREGATE_SQL: Record<Aggregate, string> = {
  avg: 'avg(value)', min: 'min(value)', max: 'max(value)', count: 'count(*)::int',
  last: '(array_agg(value order by ts desc))[1]',
}

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

/** The buckets that hold readings: (bucket, device_id, channel, metric, environment_id, …aggregates). */
function bucketsSql(filter: ReadingsFilter, spec: BucketSpec, params: unknown[], after?: SeriesPosition): string {
  const bucket = `date_bin(($${params.push(`${spec.intervalMs} milliseconds`)})::interval, ts, timestamptz '1970-01-01 00:00:00+00')`
  const selected = spec.aggregates.map((a) => `${AGGREGATE_SQL[a]} as "${a}"`).join(', ')
  return `select ${bucket} as bucket, device_id, channel,
    (array_agg(metric order by ts desc))[1] as metric, (array_agg(environment_id order by ts desc))[1] as environment_id, ${selected}
    from sensor_readings where ${where(bucketWindow(filter, spec, after), params)} group by 1, 2, 3`
}

/**
 * Every bucket of the window for every series with a reading in it (generate_series × the series, joined to the
 * buckets that hold readings). For `previous`, `run` counts a series' non-empty buckets so far: an empty bucket
 * shares its run with the latest non-empty one, whose values first_value() carries forward.
 */
function filledBucketsSql(filter: ReadingsFilter, spec: BucketSpec, params: unknown[]): string {
  const held = bucketsSql(filter, spec, params)
  const grid = `generate_series($${params.push(iso(firstBucket(filter, spec.intervalMs)))}::timestamptz, $${params.push(iso(filter.to - 1))}::timestamptz, ($${params.push(`${spec.intervalMs} milliseconds`)})::interval)`
  const carried = (column: string) => `first_value(${column}) over run`
  const aggregate = (a: Aggregate) => (a === 'count' ? `coalesce("count", 0)` : spec.fill === 'previous' ? carried(`"${a}"`) : `"${a}"`)
  return `with held as (${held}),
    series as (select distinct device_id, channel from held),
    joined as (
      select g.bucket, s.device_id, s.channel, h.metric, h.environment_id, ${spec.aggregates.map((a) => `h."${a}"`).join(', ')},
        count(h.bucket) over (partition by s.device_id, s.channel order by g.bucket) as run_no
      from ${grid} as g(bucket) cross join series s
      left join held h on h.bucket = g.bucket and h.device_id = s.device_id and h.channel = s.channel
    )
    select bucket, device_id, channel, ${carried('metric')} as metric, ${carried('environment_id')} as environment_id,
      ${spec.aggregates.map((a) => `${aggregate(a)} as "${a}"`).join(', ')}
    from joined window run as (partition by device_id, channel, run_no order by bucket)`
}

export function sqlStore(database: Database): ReadingsStore {
  return {
    kind: 'sql',
    async write(readings) {
      if (!readings.length) return
      const n = readings.length
      const cols = { account: new Array<string>(n), device: new Array<string>(n), channel: new Array<string>(n), ts: new Array<number>(n), value: new Array<number>(n), metric: new Array<string | null>(n), env: new Array<string | null>(n) }
      for (let i = 0; i < n; i++) {
        const r = readings[i]!
        cols.account[i] = r.accountId; cols.device[i] = r.deviceId; cols.channel[i] = r.channel
        cols.ts[i] = r.ts; cols.value[i] = r.value; cols.metric[i] = r.metric; cols.env[i] = r.environmentId
      }
      const params = [cols.account, cols.device, cols.channel, cols.ts, cols.value, cols.metric, cols.env]
      try {
        await database.query(INSERT, params)
      } catch (error) {
        if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error
        await database.query(INSERT_SKIPPING_STORED, params)
      }
    },
    async raw(filter, limit, after?: SeriesPosition, skip = 0) {
      const params: unknown[] = []
      let text = `select ts, device_id, channel, metric, environment_id, value from sensor_readings where ${where(filter, params)}`
      if (after) text += ` and (ts, device_id, channel) > ($${params.push(iso(after[0]))}::timestamptz, $${params.push(after[1])}, $${params.push(after[2])})`
      text += ` order by ts, device_id, channel limit $${params.push(limit)} offset $${params.push(skip)}`
      const rows = await database.query<Record<string, unknown>>(text, params)
      return rows.map((r) => ({ ts: toMs(r.ts), device_id: String(r.device_id), channel: String(r.channel), metric: (r.metric as string | null) ?? null, environment_id: (r.environment_id as string | null) ?? null, value: Number(r.value) }))
    },
    async buckets(filter, spec, limit, after?: SeriesPosition, skip = 0) {
      const params: unknown[] = []
      let text = `select * from (${spec.fill === 'none' ? bucketsSql(filter, spec, params, after) : filledBucketsSql(filter, spec, params)}) b`
      if (after) text += ` where (bucket, device_id, channel) > ($${params.push(iso(after[0]))}::timestamptz, $${params.push(after[1])}, $${params.push(after[2])})`
      text += ` order by bucket, device_id, channel limit $${params.push(limit)} offset $${params.push(skip)}`
      const rows = await database.query<Record<string, unknown>>(text, params)
      return rows.map((r) => {
        const row: BucketRow = { ts: toMs(r.bucket), device_id: String(r.device_id), channel: String(r.channel), metric: (r.metric as string | null) ?? null, environment_id: (r.environment_id as string | null) ?? null }
        for (const a of spec.aggregates) row[a] = num(r[a])
        return row
      })
    },
    async latest(filter, limit, after?: LatestPosition) {
      const params: unknown[] = []
      let text = `select distinct on (device_id, channel) ts, device_id, channel, metric, environment_id, value
        from sensor_readings where ${where(filter, params)}`
      if (after) text += ` and (device_id, channel) > ($${params.push(after[0])}, $${params.push(after[1])})`
      text += ` order by device_id, channel, ts desc limit $${params.push(limit)}`
      const rows = await database.query<Record<string, unknown>>(text, params)
      return rows.map((r) => ({ ts: toMs(r.ts), device_id: String(r.device_id), channel: String(r.channel), metric: (r.metric as string | null) ?? null, environment_id: (r.environment_id as string | null) ?? null, value: Number(r.value) }))
    },
    ping: () => database.ping(),
    async close() { /* the records database is closed by its owner */ },
  }
}
