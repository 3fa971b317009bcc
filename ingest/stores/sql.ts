// Readings in the records database (Postgres, or PGlite embedded), compact (migration 0007): one multi-row insert
// per batch through unnest() of column arrays, which also keeps the rollups and each series' newest reading. A
// retried batch must add nothing: readings are unique on (channel, ts). Partitions: sql-layout.ts.
import type { Database, ReaderOptions } from '../../db/client.ts'
import { READINGS_QUERY_DEFAULTS } from '../../src/config.ts'
import { bucketsIn, INTERVALS, rollupPieces, ROLLUP_LEVELS, rowPerBucket, type Piece } from '../planner.ts'
import { SeriesCatalogue, seriesWhere } from '../series.ts'
import { dropExpired, ensurePartitions, finishLegacy, hasLegacy, moveLegacyBatch, type LegacyPosition } from './sql-layout.ts'
import { compareKeys, NO_DEADLINE, type Aggregate, type GroupKey, type AggregationSpec, type BucketPosition, type BucketRow, type IntervalName, type LatestPosition, type ReadingsFilter, type ReadingsStore, type SeriesPosition } from './interface.ts'

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

/** Each series' newest reading moves forward only: a late reading for an earlier time leaves it. */
const LATEST_FROM_INS = `insert into reading_latest as l (series_id, ts, value)
  select distinct on (series_id) series_id, ts, value from ins order by series_id, ts desc
  on conflict (series_id) do update set ts = excluded.ts, value = excluded.value where excluded.ts > l.ts`

/**
 * While readings from before the compact layout wait to be moved (sensor_readings_legacy), a reading stored there
 * is stored: a retried batch must not add it again. Checked through the legacy table's own unique key.
 */
const NOT_IN_LEGACY = `where not exists (select 1 from reading_channels c join sensor_readings_legacy l on l.device_id = c.device_id and l.channel = c.channel
    and l.ts = timestamptz 'epoch' + r.t * interval '1 millisecond' where c.id = r.ch)`

// Rows go in in key order (channel, ts), as the rollups do: a unique key makes an insert wait for another
// transaction's uncommitted row with that key, so two writers storing the same readings in different orders (a
// retried request whose first try is still being written, an ingest log redelivering a batch) each waited on the
// other, and Postgres failed one of them (test/unit/readings-write-lock-order.test.ts; at 20,000 readings a batch,
// the ingest log writer's, every run).
// Timestamps travel as epoch milliseconds (exact in a float8) rather than timestamptz[]: cheaper to build, and
// drizzle's postgres.js set-up passes timestamptz values through unserialised, which breaks arrays of them.
// Skipping what is stored, a reading sent twice in one batch (perhaps under the channel's new mapping, so another
// series) is stored as it came first: rows with one key go in in the batch's order (`n`), where the sort alone left
// which of them Postgres met first to chance, and the same batch could store either
// (test/unit/readings-stores.test.ts).
const insert = (onConflict: string, legacy: boolean) => `with ins as (
  insert into readings (channel_id, series_id, ts, value)
  select ch, s, timestamptz 'epoch' + t * interval '1 millisecond', v
  from unnest($1::int4[], $2::int4[], $3::float8[], $4::float8[]) with ordinality as r(ch, s, t, v, n) ${legacy ? NOT_IN_LEGACY : ''}
  order by ch, t, n
  ${onConflict} returning series_id, ts, value
), minutes as (${rollupFrom('1 minute', 'reading_rollups_1m')}), fives as (${rollupFrom('5 minutes', 'reading_rollups_5m')}), hours as (${rollupFrom('1 hour', 'reading_rollups_1h')}), days as (${rollupFrom('1 day', 'reading_rollups_1d')}),
latest as (${LATEST_FROM_INS})
select 1`
// Speculative insertion costs Postgres about 40% more per row than a plain insert (measured on this table with
// its indexes), and nearly every batch holds only new readings. So a batch is inserted plainly first; only when
// the unique key refuses it (a retry, or a reading already stored) is it inserted again skipping what exists.
const SKIP_STORED = 'on conflict (channel_id, ts) do nothing'
const INSERTS = {
  compact: { plain: insert('', false), skipping: insert(SKIP_STORED, false) },
  migrating: { plain: insert('', true), skipping: insert(SKIP_STORED, true) },
}
/** No partition holds a reading's time: the partitions are made, and the write tried again. */
const NO_PARTITION = '23514'
/** The legacy table is gone (another process finished moving it): writes stop checking it. */
const UNDEFINED_TABLE = '42P01'
const UNIQUE_VIOLATION = '23505'


/**
 * A batch's columns bind as array literals made here (`{1,2,3}`; numbers only, so nothing to quote): postgres.js
 * quotes and escapes every element of an array it is given, two regular expressions each, which was a fifth of the
 * server's CPU on the MQTT ingest path into the SQL store (a profile of `bun run bench ingest-mqtt`). Our CPU per
 * reading through HTTP went from 3.1-3.2 to 2.4-2.7 µs (`bun run bench ingest-postgres`, alternating). The text is
 * the element's String(), as the driver's own serializer writes it, so Postgres reads the same numbers.
 */
const arrayText = (xs: readonly number[]) => `{${xs.join(',')}}`

/** Instants bind as ISO text with a cast: the drivers disagree on how to send a Date. */
const iso = (ms: number) => new Date(ms).toISOString()
const toMs = (value: unknown) => (value instanceof Date ? value.getTime() : new Date(String(value)).getTime())
const num = (value: unknown) => (value === null || value === undefined ? undefined : Number(value))
/** A series' bucket row before its aggregates, as one literal: spreads (this one and the presenter's) took 7 % of an hourly page's CPU in a profile. */
const seriesRow = (ts: number, key: GroupKey, s: ScopedSeries | undefined): BucketRow => ({ ts, device_id: key[0], channel: key[1], metric: s?.metric ?? null, environment_id: s?.environment_id ?? null })

/**
 * Device ids and channels order and compare bytewise (COLLATE "C") whatever the database's collation: the planner
 * merges rows in JavaScript's order, and QuestDB compares them the same way.
 */
const byte = (column: string) => `${column} collate "C"`

const EPOCH = `timestamptz '1970-01-01 00:00:00+00'`

/**
 * Per-bucket statistics of each series in a piece of the window, from its rollup level or from the raw readings.
 * `$1` and `$2` are the ids of the series in scope and of their channels (what the readings are keyed by). `o` is
 * where a row's statistics start (its rollup bucket, its first reading), which with the series orders the partial
 * sums of a bucket: floating-point sums depend on the order they are added in, and Postgres adds a group's rows in
 * whatever order its plan meets them, so the same bucket read in pages of another size (another plan) differed in its
 * last digits (`68.83090909090907` against `68.8309090909091`). Summed in this order, a bucket's value is the same
 * whatever the page, the format or the plan (test/http/readings-walks.test.ts).
 */
function pieceSql(piece: Piece, interval: string, params: unknown[]): string {
  const from = `$${params.push(iso(piece.from))}::timestamptz`
  const to = `$${params.push(iso(piece.to))}::timestamptz`
  if (piece.level !== 'raw') {
    return `select series_id, date_bin(${interval}, bucket, ${EPOCH}) as b, bucket as o, count, sum, min, max, last_ts, last_value
      from reading_rollups_${piece.level} where series_id = any($1::int4[]) and bucket >= ${from} and bucket < ${to}`
  }
  return `select series_id, date_bin(${interval}, ts, ${EPOCH}) as b, min(ts) as o, count(*)::int as count, sum(value order by ts) as sum, min(value) as min, max(value) as max,
      max(ts) as last_ts, (array_agg(value order by ts desc))[1] as last_value
    from reading_rows where channel_id = any($2::int4[]) and series_id = any($1::int4[]) and ts >= ${from} and ts < ${to} group by 1, 2`
}

/** The series a filter matches, as the CTE `s` every read starts from: the account's own, and no other's. */
const seriesCte = (filter: ReadingsFilter, params: unknown[]) => `select id, channel_id, device_id, channel, metric, environment_id from reading_series where ${seriesWhere(filter, params)}`

interface ScopedSeries { id: number; channel_id: number; device_id: string; channel: string; metric: string | null; environment_id: string | null }

// Each aggregate's columns. `avg` comes back as its sum and count, divided where rows are read (buckets()): Postgres refuses a
// float8 quotient that underflows to zero (`value out of range: underflow`, a bucket of subnormal readings such as
// 5e-324 ÷ 2), which failed the whole read; JavaScript rounds it as raw readings and the QuestDB store do. `last`
// across series: the value at the latest time, the greatest of them when several series share that time.
const AGGREGATE_SQL: Record<Aggregate, string> = {
  avg: 'sum(p.sum order by p.series_id, p.o) as avg_sum, sum(p.count) as avg_count', min: 'min(p.min) as "min"', max: 'max(p.max) as "max"', count: 'sum(p.count)::int as "count"',
  last: '(array_agg(p.last_value order by p.last_ts desc, p.last_value desc))[1] as "last"',
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
 * The groups of a bucket listing, numbered in their order: a series' group is its device's channel (several series
 * when the channel's mapping changed), a metric's its metric (series without one are left out). Numbers rise with
 * the group key bytewise, so the database orders and groups by an integer and names are attached here.
 */
function numberGroups(series: readonly ScopedSeries[], groupBy: AggregationSpec['groupBy']) {
  const keyOf = (s: ScopedSeries): GroupKey => (groupBy === 'metric' ? [s.metric ?? '', ''] : [s.device_id, s.channel])
  const members = groupBy === 'metric' ? series.filter((s) => s.metric !== null) : [...series]
  members.sort((a, b) => compareKeys(keyOf(a), keyOf(b)))
  const keys: GroupKey[] = []
  /** Each group's first series: the one there is, for most groups. */
  const firstOf: ScopedSeries[] = []
  const groupOf: number[] = []
  for (const s of members) {
    const key = keyOf(s)
    const last = keys[keys.length - 1]
    if (!last || compareKeys(last, key) !== 0) { keys.push(key); firstOf.push(s) }
    groupOf.push(keys.length)
  }
  /** The number of the last group whose key is at or before `key` (0 when none is). */
  const numberAtOrBefore = (key: GroupKey) => {
    let n = 0
    while (n < keys.length && compareKeys(keys[n]!, key) <= 0) n++
    return n
  }
  return { members, groupOf, keys, firstOf, numberAtOrBefore }
}

/** The order of bucket rows: by bucket (`t`), then group number (`g`, the groups' order). */
const byBucketAndGroup = (a: Record<string, unknown>, b: Record<string, unknown>) => (a.t as number) - (b.t as number) || (a.g as number) - (b.g as number)

/** Each aggregate of one rollup row standing for its bucket as it is: a level as wide as the interval, one series per group. */
const ROW_AGGREGATE_SQL: Record<Aggregate, string> = { avg: 'r.sum as avg_sum, r.count as avg_count', min: 'r.min as "min"', max: 'r.max as "max"', count: 'r.count as "count"', last: 'r.last_value as "last"' }

/**
 * How the groups of a listing relate to its series: `one` when each group is one series (a device channel whose
 * mapping never changed), `several` when a device channel has several (the row's metric and environment are then
 * those of the series read latest in the bucket), `metric` when grouped by metric.
 */
type GroupShape = 'one' | 'several' | 'metric'

/**
 * The buckets that hold readings, combined from the pieces the planner picks (rollups where they answer exactly, raw
 * readings at the edges), one row per (bucket, group): the bucket as epoch ms, the group's number (numberGroups) and
 * the aggregates; with `several` series in a group, also the series whose reading is latest in it. Everything the
 * database sorts and groups by is a number, and nothing but numbers comes back. Rows group by the bucket's instant,
 * turned into epoch ms only on the way out and by date_part (float8): extract() computes in numeric (a page of 10,000
 * hours took 22.9 ms with it, 17.5 without).
 *
 * Where each group is one series and a rollup level is exactly as wide as the interval (hourly from the hour rollups,
 * daily from the day rollups), each of its rows is one bucket of the answer: those are read as they are, and only the
 * window's partial edge buckets are aggregated (a page of 10,000 hours: 6.6 ms in Postgres against 10–12 ms).
 */
function bucketsSql(filter: ReadingsFilter, spec: AggregationSpec, groups: GroupShape, params: unknown[]): string {
  const pieces = rollupPieces(filter.from, filter.to, spec.interval)
  if (!pieces.length) return `select null::float8 as t, null::int as g, null::int as latest where false`
  const asIs = (piece: Piece) => groups === 'one' && rowPerBucket(piece, spec.interval)
  const parts: string[] = []
  for (const piece of pieces.filter(asIs)) {
    parts.push(`select date_part('epoch', r.bucket) * 1000 as t, s.g, ${spec.aggregates.map((a) => ROW_AGGREGATE_SQL[a]).join(', ')}
      from reading_rollups_${piece.level} r join s on s.id = r.series_id
      where r.series_id = any($1::int4[]) and r.bucket >= $${params.push(iso(piece.from))}::timestamptz and r.bucket < $${params.push(iso(piece.to))}::timestamptz`)
  }
  const rest = pieces.filter((piece) => !asIs(piece))
  if (rest.length) {
    const interval = `$${params.push(PIECE_BIN[spec.interval] ?? `${INTERVALS[spec.interval]} milliseconds`)}::interval`
    const combined = rest.map((piece) => pieceSql(piece, interval, params))
    const bucket = BUCKET_OF[spec.interval]?.('p.b') ?? 'p.b'
    const selected = [
      ...spec.aggregates.map((a) => AGGREGATE_SQL[a]),
      // An ordered aggregate sorts within each group: a third of the statement's time on a page of 10,000 rows.
      ...(groups === 'several' ? ['(array_agg(p.series_id order by p.last_ts desc))[1] as latest'] : []),
    ].join(', ')
    parts.push(`select date_part('epoch', ${bucket}) * 1000 as t, s.g, ${selected}
      from (${combined.join('\n    union all ')}) p join s on s.id = p.series_id group by ${bucket}, s.g`)
  }
  return `with s as (select * from unnest($1::int4[], $2::int4[], $3::int4[]) as s(id, channel_id, g))
    ${parts.join('\n    union all ')}`
}

/** Legacy readings move in batches of this many, for up to this long per maintenance run. */
const LEGACY_BATCH = 20_000
const LEGACY_MOVE_SECONDS = 5

const DEFAULT_READER: ReaderOptions = { connections: READINGS_QUERY_DEFAULTS.connections, statementTimeoutMs: 30_000 }

/**
 * Reads go through a pool of their own (`reader`), writes through the records database's; `catalogue` registers
 * each series before its first reading is written.
 */
export function sqlStore(database: Database, reader: ReaderOptions = DEFAULT_READER, catalogue = new SeriesCatalogue(database)): ReadingsStore {
  const reads = database.openReader(reader)
  // Latest values (index lookups in reading_latest, a few milliseconds) have a connection of their own: in the
  // readers' queue they waited behind bucket reads of hundreds of milliseconds each. At the dense site (issue 57,
  // 7 days, 4 reader connections) a room's latest values took 23 ms at the median and 1.9 s at p99 that way.
  const latestReads = database.openReader({ ...reader, connections: 1 })
  /** Whether legacy readings may still wait to be moved: known after the first write or maintenance. */
  let legacy: boolean | undefined
  let legacyPosition: LegacyPosition
  /**
   * Inserts plainly; on a unique violation again skipping what is stored; where no partition holds a reading's time
   * (23514) after making the partitions, once; when the legacy table went away meanwhile, without checking it.
   */
  const insertBatch = async (params: string[], times: readonly number[], skipping = false, partitionsMade = false): Promise<void> => {
    legacy ??= await hasLegacy(database)
    const statements = legacy ? INSERTS.migrating : INSERTS.compact
    try {
      await database.query(skipping ? statements.skipping : statements.plain, params)
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code === UNDEFINED_TABLE && statements === INSERTS.migrating) { legacy = false; return insertBatch(params, times, skipping, partitionsMade) }
      if (code === NO_PARTITION && !partitionsMade) {
        await ensurePartitions(database, times)
        return insertBatch(params, times, skipping, true)
      }
      if (code === UNIQUE_VIOLATION && !skipping) return insertBatch(params, times, true, partitionsMade)
      throw error
    }
  }
  return {
    kind: 'sql',
    rollupLevels: ROLLUP_LEVELS.map((l) => l.name),
    async maintain(horizons, now) {
      // This week's and next week's (and so this year's and, in its last week, next year's) before writes need them.
      const created = await ensurePartitions(database, [now, now + 7 * 86_400_000])
      const dropped = await dropExpired(database, horizons)
      // Readings from before the compact layout, a few seconds' worth of batches per run: the caller runs again
      // at once while `more` says so.
      let moved = 0
      let more = false
      legacy ??= await hasLegacy(database)
      if (legacy) {
        const until = Date.now() + LEGACY_MOVE_SECONDS * 1000
        while (Date.now() < until) {
          const step = await moveLegacyBatch(database, legacyPosition, LEGACY_BATCH, horizons.raw)
          moved += step.moved
          legacyPosition = step.position
          if (step.done) { legacy = !(await finishLegacy(database)); break }
        }
        more = legacy
      }
      return { dropped, created, moved, more }
    },
    async write(readings) {
      if (!readings.length) return
      const ids = await catalogue.idsOf(readings)
      const n = readings.length
      const ts = new Array<number>(n)
      const values = new Array<number>(n)
      for (let i = 0; i < n; i++) {
        const r = readings[i]!
        ts[i] = r.ts; values[i] = r.value
      }
      await insertBatch([arrayText(ids.channels), arrayText(ids.series), arrayText(ts), arrayText(values)], ts)
    },
    async raw(filter, limit, after?: SeriesPosition, skip = 0, signal = NO_DEADLINE) {
      const params: unknown[] = []
      let text = `with s as (${seriesCte(filter, params)})
        select r.ts, s.device_id, s.channel, s.metric, s.environment_id, r.value from reading_rows r join s on s.id = r.series_id
        where r.channel_id in (select channel_id from s) and r.ts >= $${params.push(iso(Math.max(filter.from, after?.[0] ?? filter.from)))}::timestamptz and r.ts < $${params.push(iso(filter.to))}::timestamptz`
      if (after) text += ` and (r.ts, ${byte('s.device_id')}, ${byte('s.channel')}) > ($${params.push(iso(after[0]))}::timestamptz, $${params.push(after[1])}, $${params.push(after[2])})`
      text += ` order by r.ts, ${byte('s.device_id')}, ${byte('s.channel')} limit $${params.push(limit)} offset $${params.push(skip)}`
      const rows = await reads.query<Record<string, unknown>>(text, params, signal)
      return rows.map((r) => ({ ts: toMs(r.ts), device_id: String(r.device_id), channel: String(r.channel), metric: (r.metric as string | null) ?? null, environment_id: (r.environment_id as string | null) ?? null, value: Number(r.value) }))
    },
    async buckets(filter, spec, limit, after?: BucketPosition, skip = 0, signal = NO_DEADLINE) {
      const seriesParams: unknown[] = []
      const series = await reads.query<ScopedSeries>(seriesCte(filter, seriesParams), seriesParams, signal)
      const groups = numberGroups(series, spec.groupBy)
      if (!groups.members.length) return []
      const params: unknown[] = [groups.members.map((s) => s.id), groups.members.map((s) => s.channel_id), groups.groupOf]
      // Which series a row's metric and environment come from needs asking only where a group has several.
      const shape: GroupShape = spec.groupBy === 'metric' ? 'metric' : groups.keys.length < groups.members.length ? 'several' : 'one'
      let text = `select * from (${bucketsSql(filter, spec, shape, params)}) b`
      if (after) text += ` where (t, g) > ($${params.push(after[0])}::float8, $${params.push(groups.numberAtOrBefore([after[1], after[2]]))}::int)`
      // A window that holds at most twice the rows asked for (one per group and bucket; the planner cuts each page's
      // window so) is sorted here: ordered in Postgres, its rows wait for the sort before the first is sent, and
      // Postgres's work and ours follow each other instead of overlapping. An hourly page of 10,000 rows took 27.5 ms
      // to read and decode sorted there, 12–17 ms unsorted (postgres.js from Bun, median of 15). Rows skipped (a CSV
      // file finding its last row) are skipped in Postgres, never sent.
      const sortHere = skip === 0 && groups.keys.length * bucketsIn(filter.from, filter.to, spec.interval) <= 2 * limit
      if (!sortHere) text += ` order by t, g limit $${params.push(limit)} offset $${params.push(skip)}`
      let rows = await reads.query<Record<string, unknown>>(text, params, signal)
      if (sortHere) rows = rows.sort(byBucketAndGroup).slice(skip, skip + limit)
      const byId = new Map(groups.members.map((s) => [Number(s.id), s]))
      return rows.map((r) => {
        const key = groups.keys[Number(r.g) - 1]!
        const row: BucketRow = spec.groupBy === 'metric'
          ? { ts: Number(r.t), metric: key[0], environment_id: filter.environmentId ?? null }
          : seriesRow(Number(r.t), key, shape === 'several' ? byId.get(Number(r.latest)) : groups.firstOf[Number(r.g) - 1])
        for (const a of spec.aggregates) row[a] = a === 'avg' ? Number(r.avg_sum) / Number(r.avg_count) : num(r[a])
        return row
      })
    },
    // A write's readings and rollups are one transaction: read as they are once it is acknowledged.
    async caughtUp() { return true },
    async settling() { return [] },
    async latest(filter, limit, after?: LatestPosition, signal = NO_DEADLINE) {
      // Each series' newest reading from reading_latest; a series whose newest is after the window (a window that
      // ends in the past) probes the (channel, ts) index backwards from the window's end instead. A channel whose
      // mapping changed has several series: its newest reading is the newest of theirs.
      const params: unknown[] = []
      const from = `$${params.push(iso(filter.from))}::timestamptz`
      const to = `$${params.push(iso(filter.to))}::timestamptz`
      let text = `with s as (${seriesCte(filter, params)}), candidates as (
          select s.device_id, s.channel, s.metric, s.environment_id, l.ts, l.value from s join reading_latest l on l.series_id = s.id
          where l.ts >= ${from} and l.ts < ${to}
          union all
          select s.device_id, s.channel, s.metric, s.environment_id, r.ts, r.value from s join reading_latest l on l.series_id = s.id
          cross join lateral (select ts, value from reading_rows where channel_id = s.channel_id and series_id = s.id and ts >= ${from} and ts < ${to} order by ts desc limit 1) r
          where l.ts >= ${to}
        )
        select distinct on (${byte('device_id')}, ${byte('channel')}) ts, device_id, channel, metric, environment_id, value from candidates`
      if (after) text += ` where (${byte('device_id')}, ${byte('channel')}) > ($${params.push(after[0])}, $${params.push(after[1])})`
      text += ` order by ${byte('device_id')}, ${byte('channel')}, ts desc limit $${params.push(limit)}`
      const rows = await latestReads.query<Record<string, unknown>>(text, params, signal)
      return rows.map((r) => ({ ts: toMs(r.ts), device_id: String(r.device_id), channel: String(r.channel), metric: (r.metric as string | null) ?? null, environment_id: (r.environment_id as string | null) ?? null, value: Number(r.value) }))
    },
    ping: () => database.ping(),
    // The records database is closed by its owner; the readers' pools are ours.
    close: async () => { await Promise.all([reads.close(), latestReads.close()]) },
  }
}
