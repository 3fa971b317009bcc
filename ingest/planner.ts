// The planner of readings queries: what a request to GET /environment/readings may cost is known from the request
// and the series catalogue before anything runs in the readings store, and a request over the limit is refused
// there and then, with a way to fit under it.
import { ApiError } from '../src/http/errors.ts'
import type { ReadingsQueryLimits, ReadingsRetention } from '../src/config.ts'
import { compareKeys, groupKey, type AggregationSpec, type BucketPosition, type BucketRow, type BucketSpec, type Fill, type GroupKey, type Grouping, type IntervalName, type RawRow, type ReadingsFilter, type ReadingsStore, type RetentionHorizons, type RollupLevel, type SeriesPosition } from './stores/interface.ts'

const DAY_MS = 86_400_000
const WEEK_MS = 7 * DAY_MS
/** Monday 1970-01-05 00:00 UTC: ISO weeks start on Mondays, and the epoch was a Thursday. */
const FIRST_MONDAY = 4 * DAY_MS

/**
 * Bucket widths, in ms. The fixed ones (1m to 1d) are aligned to the epoch; `1w` is the ISO week from Monday
 * 00:00 UTC and `1mo` the calendar month in UTC, whose length varies: its entry is the shortest month's, used only
 * to order intervals and size windows, never to place a bucket (bucketNumber and bucketStart do that).
 */
export const INTERVALS: Readonly<Record<IntervalName, number>> = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '30m': 1_800_000, '1h': 3_600_000, '6h': 21_600_000, '12h': 43_200_000, '1d': DAY_MS, '1w': WEEK_MS, '1mo': 28 * DAY_MS }

/** The number of the bucket of `interval` holding `ts`, counted from the one holding the epoch (weeks: from the Monday before it). */
export function bucketNumber(interval: IntervalName, ts: number): number {
  if (interval === '1mo') {
    const date = new Date(ts)
    return (date.getUTCFullYear() - 1970) * 12 + date.getUTCMonth()
  }
  if (interval === '1w') return Math.floor((ts - FIRST_MONDAY) / WEEK_MS)
  return Math.floor(ts / INTERVALS[interval])
}

/** Where bucket number `n` of `interval` starts. */
export function bucketStart(interval: IntervalName, n: number): number {
  if (interval === '1mo') return Date.UTC(1970, n, 1)
  if (interval === '1w') return FIRST_MONDAY + n * WEEK_MS
  return n * INTERVALS[interval]
}

/** The start of the bucket holding `ts`. */
export const bucketOf = (interval: IntervalName, ts: number) => bucketStart(interval, bucketNumber(interval, ts))
/** The start of the bucket `count` buckets after the one holding `ts`. */
export const bucketsAfter = (interval: IntervalName, ts: number, count: number) => bucketStart(interval, bucketNumber(interval, ts) + count)

/**
 * What every bucket boundary of `interval` is a whole multiple of: the interval itself, or a day for weeks and
 * months. A rollup level nests in the buckets (each of its buckets lies in one) when its width divides this.
 */
const grainOf = (interval: IntervalName) => (interval === '1w' || interval === '1mo' ? DAY_MS : INTERVALS[interval])

/** What a request asks of the store, as far as its cost goes. */
export type ReadingsShape =
  | { kind: 'raw'; limit: number }
  | { kind: 'latest'; limit: number }
  | { kind: 'buckets'; interval: IntervalName; fill: Fill }

export interface QueryCost {
  /** The most rows the store can answer with (and, for buckets, the most buckets it computes). */
  bound: number
  /** Whether the request takes one of the account's slots for heavy queries while it runs (readRows). */
  heavy: boolean
}

/**
 * The most rows one request has the store compute: a raw page or file its `limit`, a page of the latest readings too;
 * a page or file of buckets the stretch of the window it is read from (bucketPage), `limit` rows and a bucket's worth
 * on either side (a bucket has a row per series at most), never more than the whole question. What a request costs is
 * what it reads, not the size of the question it is a page of: a dashboard's 24 hours of 5-minute buckets for 160
 * series (46,240 rows) walked in pages of 10,000 reads about 10,000 a page, and was counted heavy whole at every page
 * (issue 57: 1,152 of 1,199 dashboards refused 429 at the dense site's load).
 */
export function readRows(shape: ReadingsShape, bound: number, series: number, limit: number): number {
  return shape.kind === 'buckets' ? Math.min(bound, limit + 2 * Math.max(1, series)) : bound
}

/** Buckets of `interval` that [from, to) touches (from < to). */
export const bucketsIn = (from: number, to: number, interval: IntervalName) => bucketNumber(interval, to - 1) - bucketNumber(interval, from) + 1

/**
 * The most rows a query can give: raw pages and files hold at most `limit` rows, and so do pages of the latest readings
 * (a row per series, not counted: the catalogue is not read to plan them);
 * buckets one per series per bucket of the window, whatever the fill (a fill adds rows only up to that).
 */
export function boundRows(shape: ReadingsShape, series: number, from: number, to: number): number {
  switch (shape.kind) {
    case 'raw':
    case 'latest': return shape.limit
    case 'buckets': return series * bucketsIn(from, to, shape.interval)
  }
}

/**
 * Rollup levels, coarsest first: per series, count, sum, min, max, and the first and last value with their times.
 * Five minutes sit between minutes and hours because that is what dashboards ask for: a day in 5-minute buckets read
 * from minute rollups reads five rows a bucket (issue 57: 230,000 rows a room for a series reporting each minute).
 * They are kept as long as the minute rollups (READINGS_MINUTE_ROLLUP_RETENTION_DAYS).
 */
export const ROLLUP_LEVELS: readonly { name: RollupLevel; ms: number }[] = [{ name: '1d', ms: DAY_MS }, { name: '1h', ms: 3_600_000 }, { name: '5m', ms: 300_000 }, { name: '1m', ms: 60_000 }]

/** A stretch of a window and where it is read from: a rollup level (whole buckets of it), or the raw readings. */
export interface Piece { level: RollupLevel | 'raw'; from: number; to: number }

/**
 * Where each stretch of [from, to) is read from for buckets of `interval`: the coarsest level whose buckets nest in
 * the requested ones (its width divides the interval, or a day for weeks and months) covers the whole buckets of it
 * inside the window; the partial edges come from the next finer level, and what no level covers whole (under a
 * minute) from raw readings. Every answer is then exactly the raw one: counts, sums, minima and maxima add up, and
 * `last` is the value at the latest time. `available` leaves out levels a store cannot use now (QuestDB without
 * materialized views, or behind). `stale` ([from, to) ranges, ascending, apart) are times whose rollups may lag what
 * was written (QuestDB's marked minutes, questdb-rollups.ts): a level's bucket touching one is covered by the finer
 * levels instead, down to the raw readings of the stale minutes themselves. Cut at the day, as they once were, a
 * minute being written sent its whole day to the raw readings: a dashboard's first ask of today read every reading
 * since midnight (issue 57). Stale minutes scattered over the window (a series reporting every 10 minutes, each minute
 * marked) would cut it into hundreds of pieces, one branch of a query each: past MAX_PIECES, stale ranges closer
 * than a growing gap are read raw as one, until the pieces fit (at worst, one raw stretch from the first stale minute
 * to the last).
 */
export function rollupPieces(from: number, to: number, interval: IntervalName, available: readonly RollupLevel[] = ROLLUP_LEVELS.map((l) => l.name), stale: readonly (readonly [number, number])[] = []): Piece[] {
  for (let gap = 0; ; gap = gap ? gap * 4 : 300_000) {
    const pieces = piecesAround(from, to, interval, available, joined(stale, gap))
    if (pieces.length <= MAX_PIECES || gap > to - from) return pieces
  }
}

/** The most pieces a window is read in (rollupPieces); without stale minutes a window takes at most nine. */
export const MAX_PIECES = 32

/** Ranges (ascending, apart) with those less than `gap` apart joined into one. */
const joined = (ranges: readonly (readonly [number, number])[], gap: number): readonly (readonly [number, number])[] => {
  if (!gap) return ranges
  const out: [number, number][] = []
  for (const [from, to] of ranges) {
    const last = out[out.length - 1]
    if (last && from - last[1] < gap) last[1] = Math.max(last[1], to)
    else out.push([from, to])
  }
  return out
}

/** rollupPieces for given stale ranges. */
function piecesAround(from: number, to: number, interval: IntervalName, available: readonly RollupLevel[], stale: readonly (readonly [number, number])[]): Piece[] {
  const usable = ROLLUP_LEVELS.filter((l) => grainOf(interval) % l.ms === 0 && available.includes(l.name))
  const out: Piece[] = []
  const push = (piece: Piece) => {
    const last = out[out.length - 1]
    if (last && last.level === piece.level && last.to === piece.from) last.to = piece.to
    else out.push(piece)
  }
  const cover = (from: number, to: number, i: number): void => {
    if (from >= to) return
    const level = usable[i]
    if (!level) return push({ level: 'raw', from, to })
    const start = Math.ceil(from / level.ms) * level.ms
    const end = Math.floor(to / level.ms) * level.ms
    if (start >= end) return cover(from, to, i + 1)
    cover(from, start, i + 1)
    // The level's whole buckets, but those touching a stale range, which the finer levels cover.
    let at = start
    for (const [staleFrom, staleTo] of stale) {
      if (staleTo <= at) continue
      if (staleFrom >= end || at >= end) break
      const cutFrom = Math.max(at, Math.floor(staleFrom / level.ms) * level.ms)
      const cutTo = Math.min(end, Math.ceil(staleTo / level.ms) * level.ms)
      if (at < cutFrom) push({ level: level.name, from: at, to: cutFrom })
      cover(cutFrom, cutTo, i + 1)
      at = cutTo
    }
    if (at < end) push({ level: level.name, from: at, to: end })
    cover(end, to, i + 1)
  }
  cover(from, to, 0)
  return out
}

/**
 * The buckets `width` wide holding the sorted instants `points`, as [from, to) pairs, merged across gaps of up to
 * `gap`: one statement recomputes a stretch, and readings every 2 minutes (marks on every other minute) made one
 * statement a minute otherwise (a year loaded at once: 262,800 INSERTs into the minute table). With `width` a minute
 * and no gap, marked minutes as rollupPieces' `stale` ranges.
 */
export function stretches(points: readonly number[], width: number, gap = 0): [number, number][] {
  const out: [number, number][] = []
  for (const point of points) {
    const from = Math.floor(point / width) * width
    const last = out[out.length - 1]
    if (last && from <= last[1] + gap) last[1] = Math.max(last[1], from + width)
    else out.push([from, from + width])
  }
  return out
}

/**
 * Whether each row of a piece's rollup level is one whole bucket of `interval` (hourly from the hour rollups, daily
 * from the day rollups): a store can then read those rows as they are instead of aggregating them again.
 */
export const rowPerBucket = (piece: Piece, interval: IntervalName) =>
  piece.level !== 'raw' && ROLLUP_LEVELS.find((l) => l.name === piece.level)!.ms === INTERVALS[interval]

/** The earliest instant each level is sure to hold: midnight UTC, its retention's days before today (0 days: forever). */
export function retentionHorizons(retention: ReadingsRetention, now: number): RetentionHorizons {
  const today = Math.floor(now / DAY_MS) * DAY_MS
  const horizon = (days: number) => (days === 0 ? -Infinity : today - days * DAY_MS)
  return { raw: horizon(retention.rawDays), '1m': horizon(retention.minuteDays), '5m': horizon(retention.minuteDays), '1h': horizon(retention.hourDays), '1d': horizon(retention.dayDays) }
}

/**
 * The pieces of a window (rollupPieces) some of which lie before the horizon of the level they are read from: a
 * query needing them cannot be answered exactly, whatever the store still happens to hold (partitions are dropped a
 * while after their horizon passes), so it is refused rather than answered with rows missing.
 */
export function piecesBeyondRetention(pieces: readonly Piece[], horizons: RetentionHorizons): Piece[] {
  return pieces.filter((piece) => piece.from < horizons[piece.level])
}

const LEVEL_NAMES: Record<RollupLevel | 'raw', string> = { raw: 'raw readings', '1m': 'minute rollups', '5m': '5-minute rollups', '1h': 'hour rollups', '1d': 'day rollups' }

/** What the store keeps and the limits a query is held to: everything a plan is checked against besides the request. */
export interface PlanLimits {
  limits: Pick<ReadingsQueryLimits, 'maxBuckets' | 'heavyRows'>
  /** The rollup levels the store keeps (ReadingsStore.rollupLevels). */
  levels: readonly RollupLevel[]
  retention: ReadingsRetention
  now: number
}

/** The pieces of a query's window that lie beyond their level's retention (none: the store holds all it needs). */
function beyondRetention(shape: ReadingsShape, from: number, to: number, within: PlanLimits): Piece[] {
  if (shape.kind === 'latest') return []
  const horizons = retentionHorizons(within.retention, within.now)
  if (shape.kind === 'raw') return from < horizons.raw ? [{ level: 'raw', from, to }] : []
  return piecesBeyondRetention(rollupPieces(from, to, shape.interval, within.levels), horizons)
}

/** Whether a query is answered: within the cost bound and within what the store keeps. Refusals and suggestions use it alike. */
const answered = (shape: ReadingsShape, series: number, from: number, to: number, within: PlanLimits) =>
  !(shape.kind === 'buckets' && boundRows(shape, series, from, to) > within.limits.maxBuckets) && !beyondRetention(shape, from, to, within).length

/**
 * The finest of `intervals` a bucketed query of the window is answered at (checked by `answered`, as the query
 * following the suggestion will be): with `from` as asked where that is answered, else from its bucket's start (a
 * window reaching before the raw readings is answered from rollups from their grid on).
 */
function suggestion(intervals: readonly IntervalName[], fill: Fill, series: number, from: number, to: number, within: PlanLimits): { interval: IntervalName; from: number } | undefined {
  for (const interval of intervals) {
    for (const start of [from, bucketOf(interval, from)]) {
      if (answered({ kind: 'buckets', interval, fill }, series, start, to, within)) return { interval, from: start }
    }
  }
  return undefined
}

/**
 * Refuses a query part of whose window only levels past their retention could answer: raw pages and files before the
 * raw readings' horizon, buckets whose pieces (rollupPieces over the levels the store keeps) lie before their level's
 * horizon. Names the retention and the finest interval (with its `from`) that is answered: within what the store
 * keeps and within the cost bound.
 */
function checkRetention(shape: ReadingsShape, series: number, from: number, to: number, within: PlanLimits): void {
  const beyond = beyondRetention(shape, from, to, within)
  if (!beyond.length) return
  const { levels, retention } = within
  const horizons = retentionHorizons(retention, within.now)
  const kept = (['raw', ...ROLLUP_LEVELS.map((l) => l.name).reverse()] as const).filter((l) => l === 'raw' || levels.includes(l))
  const days: Record<string, number> = { raw: retention.rawDays, '1m': retention.minuteDays, '5m': retention.minuteDays, '1h': retention.hourDays, '1d': retention.dayDays }
  const retainedFrom = Object.fromEntries(kept.map((l) => [l, Number.isFinite(horizons[l]) ? new Date(horizons[l]).toISOString() : null]))
  const fits = suggestion(Object.keys(INTERVALS) as IntervalName[], shape.kind === 'buckets' ? shape.fill : 'none', series, from, to, within)
  const fitFrom = fits && new Date(fits.from).toISOString()
  const keeps = kept.map((l) => `${LEVEL_NAMES[l]} for ${days[l] ? `${days[l]} days (from ${retainedFrom[l]})` : 'ever'}`).join(', ')
  const way = fits
    ? `Ask for interval=${fits.interval} with from=${fitFrom}, or a window from ${new Date(horizons.raw).toISOString()} on.`
    : `Ask for a window from ${new Date(horizons.raw).toISOString()} on.`
  throw new ApiError('beyond_retention', `This window starts at ${new Date(from).toISOString()}, before what the service keeps for it: ${keeps}. ${way}`, {
    errors: [{ path: '/query/from', message: `before the retention of ${LEVEL_NAMES[beyond[0]!.level]}` }],
    fields: { retention_days: Object.fromEntries(kept.map((l) => [l, days[l]])), retained_from: retainedFrom, ...(fits ? { suggested_interval: fits.interval, suggested_from: fitFrom } : {}) },
  })
}

/** A window length for people: "3 days", "5 hours", "40 minutes". */
function span(ms: number): string {
  const [unit, size] = ms >= 2 * DAY_MS ? ['day', DAY_MS] : ms >= 2 * 3_600_000 ? ['hour', 3_600_000] : ['minute', 60_000]
  const n = Math.floor(ms / (size as number))
  return `${n} ${unit}${n === 1 ? '' : 's'}`
}

/**
 * The plan of a query, before anything runs in the store: refused with 422 `query_too_expensive` over the cost bound,
 * or `beyond_retention` where the store no longer keeps what it needs, each with a way to fit; otherwise its bound and
 * whether a request for `limit` rows of it (a page, a file) is heavy (readRows). Every `suggested_*` offered is a query this same check answers (issue 56: `interval=6h`
 * suggested for a query too expensive at 1h was refused `beyond_retention`).
 */
export function planQuery(shape: ReadingsShape, series: number, from: number, to: number, within: PlanLimits, limit = Infinity): QueryCost {
  const { limits } = within
  const bound = boundRows(shape, series, from, to)
  if (shape.kind === 'buckets' && bound > limits.maxBuckets) {
    const buckets = bucketsIn(from, to, shape.interval)
    const coarser = suggestion((Object.keys(INTERVALS) as IntervalName[]).filter((name) => INTERVALS[name] > INTERVALS[shape.interval]), shape.fill, series, from, to, within)
    const longest = Math.floor(limits.maxBuckets / series) * INTERVALS[shape.interval]
    const ways = [
      coarser && `interval=${coarser.interval}${coarser.from === from ? '' : ` with from=${new Date(coarser.from).toISOString()}`} (${series * bucketsIn(coarser.from, to, coarser.interval)} rows)`,
      longest >= INTERVALS[shape.interval] ? `a window of at most ${span(longest)} at interval=${shape.interval}` : undefined,
      series > 1 ? 'fewer series (device_id, channel or metric)' : undefined,
    ].filter(Boolean)
    throw new ApiError('query_too_expensive',
      `This query covers up to ${bound} rows (${series} series × ${buckets} buckets of ${shape.interval}); a query may cover at most ${limits.maxBuckets}. To fit, ask for ${ways.join(', or ')}.`,
      {
        errors: [{ path: '/query/interval', message: `covers ${bound} rows, more than ${limits.maxBuckets}` }],
        fields: {
          max_rows: limits.maxBuckets, rows: bound, series, buckets,
          ...(coarser ? { suggested_interval: coarser.interval, ...(coarser.from === from ? {} : { suggested_from: new Date(coarser.from).toISOString() }) } : {}),
          max_window_seconds: Math.floor(longest / 1000),
        },
      })
  }
  checkRetention(shape, series, from, to, within)
  return { bound, heavy: readRows(shape, bound, series, limit) > limits.heavyRows }
}

/** What the series catalogue says of a filter: how many series it matches, and (grouping by metric) their metrics. */
export interface CatalogueScope {
  /** The series the filter matches (at least the series the store will meet). */
  series: number
  /** The metrics of those series, without null; needed only when grouping by metric. */
  metrics: readonly string[]
}

/** The most rows a bucket can have: one per series, or one per metric. */
export const rowsPerBucket = (scope: CatalogueScope, groupBy: Grouping) => Math.max(1, groupBy === 'metric' ? scope.metrics.length : scope.series)

/** A raw page's first stretch: as if each series had a reading a second, at least a minute. */
const rawStretchMs = (rows: number, series: number) => Math.max(60_000, Math.ceil(rows / Math.max(1, series)) * 1000)

/**
 * One page of raw readings, read stretch by stretch from where it starts, each stretch wider than the last: the store
 * orders only the readings of a stretch by time (a store keyed by series and time cannot hand them over in time order
 * across series without sorting them), so a page costs about its own rows wherever it lies in a window of years.
 * With `skip` (a CSV file finding where it ends), the stretch is first widened until it holds the skipped rows and
 * the page, probed by asking for its last row.
 *
 * `series` is the catalogue's count of series the filter matches.
 */
export async function rawPage(store: ReadingsStore, filter: ReadingsFilter, limit: number, after: SeriesPosition | undefined, skip: number, signal: AbortSignal, series: number): Promise<RawRow[]> {
  if (limit <= 0 || filter.from >= filter.to) return []
  const start = Math.max(filter.from, after ? after[0] : filter.from)
  let span = rawStretchMs(skip + limit, series)
  if (skip > 0) {
    let to = Math.min(filter.to, start + span)
    while (to < filter.to && !(await store.raw({ ...filter, from: start, to }, 1, after, skip + limit - 1, signal)).length) {
      span *= 2
      to = Math.min(filter.to, start + span)
    }
    return store.raw({ ...filter, from: start, to }, limit, after, skip, signal)
  }
  const rows: RawRow[] = []
  let from = start
  while (rows.length < limit && from < filter.to) {
    const to = Math.min(filter.to, from + span)
    // Only the first stretch holds readings at or before `after`.
    const got = await store.raw({ ...filter, from, to }, limit - rows.length, from === start ? after : undefined, 0, signal)
    rows.push(...got)
    from = to
    // Sparse readings widen the next stretch faster (an empty day of a year-long window costs a few round trips,
    // not twenty), dense ones by half again what they lacked.
    span *= Math.min(16, Math.max(2, got.length ? (limit - rows.length) / got.length : 16))
  }
  return rows
}

/**
 * One page of buckets, computed from its own stretch of the window: a page costs about as much as its rows, wherever
 * in the window it lies, instead of aggregating everything from its first bucket to the window's end. The store
 * aggregates the buckets that hold readings (`store.buckets`); fills are made here, the same for every store.
 * `skip` passes over that many rows first (a CSV file finding its last row), without reading them where it can.
 */
export async function bucketPage(store: ReadingsStore, filter: ReadingsFilter, spec: BucketSpec, limit: number, after: BucketPosition | undefined, signal: AbortSignal, scope: CatalogueScope, skip = 0): Promise<BucketRow[]> {
  if (limit <= 0 || filter.from >= filter.to) return []
  const { interval, groupBy } = spec
  const start = after ? after[0] : bucketOf(interval, filter.from)
  const aggregation: AggregationSpec = { interval, aggregates: spec.aggregates, groupBy }
  const perBucket = rowsPerBucket(scope, groupBy)
  if (skip > 0 && spec.fill === 'none') {
    // A CSV file finding its last row: a stretch widened until it holds the skipped rows and the page (probed by
    // asking for its last row), whose rows the store skips without sending them, as rawPage does.
    let buckets = Math.ceil((skip + limit) / perBucket) + 1
    let to = Math.min(filter.to, bucketsAfter(interval, start, buckets))
    const stretch = () => ({ ...filter, from: Math.max(filter.from, start), to })
    while (to < filter.to && !(await store.buckets(stretch(), aggregation, 1, after, skip + limit - 1, signal)).length) {
      buckets *= 2
      to = Math.min(filter.to, bucketsAfter(interval, start, buckets))
    }
    return store.buckets(stretch(), aggregation, limit, after, skip, signal)
  }
  if (skip > 0) {
    // Filled, every group has a row in every bucket: the row before the page is counted out, not read.
    const groups = (await newestPerGroup(store, filter, groupBy, scope, signal)).map((g) => g.key).sort(compareKeys)
    if (!groups.length) return []
    const before = after ? groups.filter((key) => compareKeys(key, [after[1], after[2]]) <= 0).length : 0
    const index = before + skip - 1
    const bucket = bucketsAfter(interval, start, Math.floor(index / groups.length))
    if (bucket >= filter.to) return []
    return bucketPage(store, filter, spec, limit, [bucket, ...groups[index % groups.length]!], signal, scope)
  }
  if (spec.fill === 'none') {
    // A stretch of buckets that would give the page if every group had a reading in each, doubled until the
    // page is full or the window ends (sparse data costs a few more rounds, each bounded by its stretch).
    // The store is asked for a bucket's rows more than the page (where a page holds a bucket or more: within what
    // readRows counts a page to read), so the bucket the page ends in is read whole and can be kept
    // (ingest/kept-buckets.ts keeps whole buckets only). Cut at the page's last row, that bucket was read from the
    // store again for this page and for the next at every ask: at the dense site (issue 57, the SQL store, 7 days),
    // a 5-minute bucket at a page's edge was read 638 times in 90 s, 251 ms each, and dashboards timed out behind them.
    const extra = perBucket <= limit ? perBucket : 0
    const rows: BucketRow[] = []
    let from = start
    let buckets = Math.ceil(limit / perBucket) + 1
    while (rows.length < limit && from < filter.to) {
      const to = Math.min(filter.to, bucketsAfter(interval, from, buckets))
      rows.push(...await store.buckets({ ...filter, from: Math.max(filter.from, from), to }, aggregation, limit + extra - rows.length, after, 0, signal))
      from = to
      buckets *= 2
    }
    return rows.length > limit ? rows.slice(0, limit) : rows
  }

  // Filled: every group with a reading anywhere in the window has a row in every bucket. Which groups those are,
  // and what each carries into the page (its latest non-empty bucket before it), come from the newest reading per
  // group: in the window, and before the page.
  const groups = (await newestPerGroup(store, filter, groupBy, scope, signal)).map((g) => g.key).sort(compareKeys)
  if (!groups.length) return []
  const end = Math.min(filter.to, bucketsAfter(interval, start, Math.ceil(limit / groups.length) + 1))
  const held = new Map<string, BucketRow>()
  const name = (key: GroupKey) => `${key[0]}\u0000${key[1]}`
  for (const row of await store.buckets({ ...filter, from: Math.max(filter.from, start), to: end }, aggregation, groups.length * bucketsIn(start, end, interval), undefined, 0, signal)) {
    held.set(`${row.ts}\u0000${name(groupKey(row, groupBy))}`, row)
  }
  const carried = new Map<string, BucketRow>()
  if (start > filter.from) {
    // Groups whose latest earlier reading falls in the same bucket share one aggregation of it.
    const byBucket = new Map<number, Set<string>>()
    for (const g of await newestPerGroup(store, { ...filter, to: start }, groupBy, scope, signal)) {
      const bucket = bucketOf(interval, g.ts)
      let names = byBucket.get(bucket)
      if (!names) byBucket.set(bucket, (names = new Set()))
      names.add(name(g.key))
    }
    for (const [bucket, names] of byBucket) {
      const rows = await store.buckets({ ...filter, from: Math.max(filter.from, bucket), to: Math.min(start, bucketsAfter(interval, bucket, 1)) }, aggregation, perBucket + 1, undefined, 0, signal)
      for (const row of rows) {
        const key = name(groupKey(row, groupBy))
        if (names.has(key)) carried.set(key, row)
      }
    }
  }
  // The stretch holds the page: its buckets have room for limit + groups.length rows, and at most groups.length - 1
  // are skipped (those at or before `after` in its first bucket).
  const out: BucketRow[] = []
  for (let ts = start; ts < end && out.length < limit; ts = bucketsAfter(interval, ts, 1)) {
    for (const key of groups) {
      const row = held.get(`${ts}\u0000${name(key)}`)
      if (row) carried.set(name(key), row)
      if (after && ts === after[0] && compareKeys(key, [after[1], after[2]]) <= 0) continue
      out.push(row ?? emptyBucket(ts, key, carried.get(name(key)), spec, filter))
      if (out.length === limit) break
    }
  }
  return out
}

/**
 * The groups with a reading in the filter, each with the time of its newest one there: a series' from the store's
 * latest readings; a metric's from the latest readings of its series under that metric (a channel whose mapping
 * changed has readings under several metrics, and its newest reading names only one).
 */
async function newestPerGroup(store: ReadingsStore, filter: ReadingsFilter, groupBy: Grouping, scope: CatalogueScope, signal: AbortSignal): Promise<{ key: GroupKey; ts: number }[]> {
  if (groupBy === 'series') return (await store.latest(filter, scope.series + 1, undefined, signal)).map((r) => ({ key: [r.device_id, r.channel], ts: r.ts }))
  const metrics = scope.metrics.filter((metric) => filter.metric === undefined || metric === filter.metric)
  const newest = await Promise.all(metrics.map(async (metric) => {
    const rows = await store.latest({ ...filter, metric }, scope.series + 1, undefined, signal)
    return rows.length ? { key: [metric, ''] as GroupKey, ts: Math.max(...rows.map((r) => r.ts)) } : undefined
  }))
  return newest.filter((g) => g !== undefined)
}

/**
 * A bucket without readings: count 0, other aggregates absent or (with `previous`) those of the group's latest earlier
 * bucket. A series' metric and environment are those of that earlier bucket; a metric's environment is the filter's.
 */
function emptyBucket(ts: number, key: GroupKey, earlier: BucketRow | undefined, spec: BucketSpec, filter: ReadingsFilter): BucketRow {
  const row: BucketRow = spec.groupBy === 'metric'
    ? { ts, metric: key[0], environment_id: filter.environmentId ?? null }
    : { ts, device_id: key[0], channel: key[1], metric: earlier?.metric ?? null, environment_id: earlier?.environment_id ?? null }
  for (const a of spec.aggregates) row[a] = a === 'count' ? 0 : spec.fill === 'previous' ? earlier?.[a] : undefined
  return row
}
