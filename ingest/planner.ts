// The planner of readings queries: what a request to GET /environment/readings may cost is known from the request
// and the series catalogue before anything runs in the readings store, and a request over the limit is refused
// there and then, with a way to fit under it.
import { ApiError } from '../src/http/errors.ts'
import type { ReadingsQueryLimits, ReadingsRetention } from '../src/config.ts'
import type { BucketRow, BucketSpec, Fill, ReadingsFilter, ReadingsStore, RetentionHorizons, RollupLevel, SeriesPosition } from './stores/interface.ts'

export const INTERVALS = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '30m': 1_800_000, '1h': 3_600_000, '6h': 21_600_000, '12h': 43_200_000, '1d': 86_400_000 } as const
export type IntervalName = keyof typeof INTERVALS

/** What a request asks of the store, as far as its cost goes. */
export type ReadingsShape =
  | { kind: 'raw'; limit: number }
  | { kind: 'latest'; limit: number }
  | { kind: 'buckets'; interval: IntervalName; fill: Fill }

export interface QueryCost {
  /** The most rows the store can answer with (and, for buckets, the most buckets it computes). */
  bound: number
  /** Whether the query takes one of the account's slots for heavy queries while it runs. */
  heavy: boolean
}

/** Buckets of `intervalMs` (aligned to the epoch, as every bucket is) that [from, to) touches. */
export const bucketsIn = (from: number, to: number, intervalMs: number) => Math.ceil(to / intervalMs) - Math.floor(from / intervalMs)

/**
 * The most rows a query can give: raw pages and files hold at most `limit` rows; the latest readings one per series;
 * buckets one per series per bucket of the window, whatever the fill (a fill adds rows only up to that).
 */
export function boundRows(shape: ReadingsShape, series: number, from: number, to: number): number {
  switch (shape.kind) {
    case 'raw': return shape.limit
    case 'latest': return Math.min(shape.limit, series)
    case 'buckets': return series * bucketsIn(from, to, INTERVALS[shape.interval])
  }
}

const DAY_MS = 86_400_000

/** Rollup levels, coarsest first: per series, count, sum, min, max, and the first and last value with their times. */
export const ROLLUP_LEVELS: readonly { name: RollupLevel; ms: number }[] = [{ name: '1d', ms: DAY_MS }, { name: '1h', ms: 3_600_000 }, { name: '1m', ms: 60_000 }]

/** A stretch of a window and where it is read from: a rollup level (whole buckets of it), or the raw readings. */
export interface Piece { level: RollupLevel | 'raw'; from: number; to: number }

/**
 * Where each stretch of [from, to) is read from for buckets of `intervalMs`: the coarsest level whose buckets nest in
 * the requested ones (its width divides the interval) covers the whole buckets of it inside the window; the partial
 * edges come from the next finer level, and what no level covers whole (under a minute) from raw readings. Every
 * answer is then exactly the raw one: counts, sums, minima and maxima add up, and `last` is the value at the latest
 * time. `available` leaves out levels a store cannot use now (QuestDB without materialized views, or behind).
 */
export function rollupPieces(from: number, to: number, intervalMs: number, available: readonly RollupLevel[] = ROLLUP_LEVELS.map((l) => l.name)): Piece[] {
  const usable = ROLLUP_LEVELS.filter((l) => intervalMs % l.ms === 0 && available.includes(l.name))
  const cover = (from: number, to: number, i: number): Piece[] => {
    if (from >= to) return []
    const level = usable[i]
    if (!level) return [{ level: 'raw', from, to }]
    const start = Math.ceil(from / level.ms) * level.ms
    const end = Math.floor(to / level.ms) * level.ms
    if (start >= end) return cover(from, to, i + 1)
    return [...cover(from, start, i + 1), { level: level.name, from: start, to: end }, ...cover(end, to, i + 1)]
  }
  return cover(from, to, 0)
}

/** The earliest instant each level is sure to hold: midnight UTC, its retention's days before today (0 days: forever). */
export function retentionHorizons(retention: ReadingsRetention, now: number): RetentionHorizons {
  const today = Math.floor(now / DAY_MS) * DAY_MS
  const horizon = (days: number) => (days === 0 ? -Infinity : today - days * DAY_MS)
  return { raw: horizon(retention.rawDays), '1m': horizon(retention.minuteDays), '1h': horizon(retention.hourDays), '1d': horizon(retention.dayDays) }
}

/**
 * The pieces of a window (rollupPieces) some of which lie before the horizon of the level they are read from: a
 * query needing them cannot be answered exactly, whatever the store still happens to hold (partitions are dropped a
 * while after their horizon passes), so it is refused rather than answered with rows missing.
 */
export function piecesBeyondRetention(pieces: readonly Piece[], horizons: RetentionHorizons): Piece[] {
  return pieces.filter((piece) => piece.from < horizons[piece.level])
}

const LEVEL_NAMES: Record<RollupLevel | 'raw', string> = { raw: 'raw readings', '1m': 'minute rollups', '1h': 'hour rollups', '1d': 'day rollups' }

/**
 * Refuses a query part of whose window only levels past their retention could answer: raw pages and files before the
 * raw readings' horizon, buckets whose pieces (rollupPieces over the levels the store keeps) lie before their level's
 * horizon. Names the retention and, for buckets, the finest interval and aligned `from` that the kept rollups answer.
 */
export function checkRetention(shape: ReadingsShape, from: number, to: number, levels: readonly RollupLevel[], retention: ReadingsRetention, now: number): void {
  if (shape.kind === 'latest') return
  const horizons = retentionHorizons(retention, now)
  const beyond = shape.kind === 'raw'
    ? (from < horizons.raw ? [{ level: 'raw' as const, from, to }] : [])
    : piecesBeyondRetention(rollupPieces(from, to, INTERVALS[shape.interval], levels), horizons)
  if (!beyond.length) return
  const kept = (['raw', ...ROLLUP_LEVELS.map((l) => l.name).reverse()] as const).filter((l) => l === 'raw' || levels.includes(l))
  const days: Record<string, number> = { raw: retention.rawDays, '1m': retention.minuteDays, '1h': retention.hourDays, '1d': retention.dayDays }
  const retainedFrom = Object.fromEntries(kept.map((l) => [l, Number.isFinite(horizons[l]) ? new Date(horizons[l]).toISOString() : null]))
  // The finest interval whose pieces from an aligned `from` all lie within retention.
  const fits = (Object.keys(INTERVALS) as IntervalName[]).find((name) => {
    const aligned = Math.floor(from / INTERVALS[name]) * INTERVALS[name]
    return !piecesBeyondRetention(rollupPieces(aligned, to, INTERVALS[name], levels), horizons).length
  })
  const fitFrom = fits && new Date(Math.floor(from / INTERVALS[fits]) * INTERVALS[fits]).toISOString()
  const keeps = kept.map((l) => `${LEVEL_NAMES[l]} for ${days[l] ? `${days[l]} days (from ${retainedFrom[l]})` : 'ever'}`).join(', ')
  const way = fits
    ? `Ask for interval=${fits} with from=${fitFrom}, or a window from ${new Date(horizons.raw).toISOString()} on.`
    : `Ask for a window from ${new Date(horizons.raw).toISOString()} on.`
  throw new ApiError('beyond_retention', `This window starts at ${new Date(from).toISOString()}, before what the service keeps for it: ${keeps}. ${way}`, {
    errors: [{ path: '/query/from', message: `before the retention of ${LEVEL_NAMES[beyond[0]!.level]}` }],
    fields: { retention_days: Object.fromEntries(kept.map((l) => [l, days[l]])), retained_from: retainedFrom, ...(fits ? { suggested_interval: fits, suggested_from: fitFrom } : {}) },
  })
}

/** A window length for people: "3 days", "5 hours", "40 minutes". */
function span(ms: number): string {
  const [unit, size] = ms >= 2 * DAY_MS ? ['day', DAY_MS] : ms >= 2 * 3_600_000 ? ['hour', 3_600_000] : ['minute', 60_000]
  const n = Math.floor(ms / (size as number))
  return `${n} ${unit}${n === 1 ? '' : 's'}`
}

/** Refuses, with a way to fit, a query whose bound exceeds the limit; says whether the rest is heavy. */
export function planCost(shape: ReadingsShape, series: number, from: number, to: number, limits: Pick<ReadingsQueryLimits, 'maxBuckets' | 'heavyRows'>): QueryCost {
  const bound = boundRows(shape, series, from, to)
  if (shape.kind === 'buckets' && bound > limits.maxBuckets) {
    const buckets = bucketsIn(from, to, INTERVALS[shape.interval])
    const coarser = (Object.keys(INTERVALS) as IntervalName[]).find((name) => INTERVALS[name] > INTERVALS[shape.interval] && series * bucketsIn(from, to, INTERVALS[name]) <= limits.maxBuckets)
    const longest = Math.floor(limits.maxBuckets / series) * INTERVALS[shape.interval]
    const ways = [
      coarser && `interval=${coarser} (${series * bucketsIn(from, to, INTERVALS[coarser])} rows)`,
      longest >= INTERVALS[shape.interval] ? `a window of at most ${span(longest)} at interval=${shape.interval}` : undefined,
      series > 1 ? 'fewer series (device_id, channel or metric)' : undefined,
    ].filter(Boolean)
    throw new ApiError('query_too_expensive',
      `This query covers up to ${bound} rows (${series} series × ${buckets} buckets of ${shape.interval}); a query may cover at most ${limits.maxBuckets}. To fit, ask for ${ways.join(', or ')}.`,
      { errors: [{ path: '/query/interval', message: `covers ${bound} rows, more than ${limits.maxBuckets}` }], fields: { max_rows: limits.maxBuckets, rows: bound, series, buckets, ...(coarser ? { suggested_interval: coarser } : {}), max_window_seconds: Math.floor(longest / 1000) } })
  }
  return { bound, heavy: bound > limits.heavyRows }
}

/**
 * One page of buckets, computed from its own stretch of the window: a page costs about as much as its rows, wherever
 * in the window it lies, instead of aggregating everything from its first bucket to the window's end. The store
 * aggregates the buckets that hold readings (`store.buckets`); fills are made here, the same for every store.
 *
 * `seriesBound` is the catalogue's count of series the filter matches (at least the series the store will meet).
 */
export async function bucketPage(store: ReadingsStore, filter: ReadingsFilter, spec: BucketSpec, limit: number, after: SeriesPosition | undefined, signal: AbortSignal, seriesBound: number): Promise<BucketRow[]> {
  if (limit <= 0 || filter.from >= filter.to) return []
  const interval = spec.intervalMs
  const start = after ? after[0] : Math.floor(filter.from / interval) * interval
  const aggregation = { intervalMs: interval, aggregates: spec.aggregates }
  if (spec.fill === 'none') {
    // A stretch of buckets that would give the page if every series had a reading in each, doubled until the
    // page is full or the window ends (sparse data costs a few more rounds, each bounded by its stretch).
    const rows: BucketRow[] = []
    let from = start
    let buckets = Math.ceil(limit / Math.max(1, seriesBound)) + 1
    while (rows.length < limit && from < filter.to) {
      const to = Math.min(filter.to, from + buckets * interval)
      rows.push(...await store.buckets({ ...filter, from: Math.max(filter.from, from), to }, aggregation, limit - rows.length, after, 0, signal))
      from = to
      buckets *= 2
    }
    return rows
  }

  // Filled: every series with a reading anywhere in the window has a row in every bucket. Which series those are,
  // and what each carries into the page (its latest non-empty bucket before it), come from the newest reading per
  // series: in the window, and before the page.
  const series = await store.latest(filter, seriesBound + 1, undefined, signal)
  if (!series.length) return []
  const end = Math.min(filter.to, start + (Math.ceil(limit / series.length) + 1) * interval)
  const held = new Map<string, BucketRow>()
  for (const row of await store.buckets({ ...filter, from: Math.max(filter.from, start), to: end }, aggregation, series.length * Math.ceil((end - start) / interval), undefined, 0, signal)) {
    held.set(`${row.ts}\u0000${row.device_id}\u0000${row.channel}`, row)
  }
  const carried = new Map<string, BucketRow>()
  if (start > filter.from) {
    const before = { ...filter, to: start }
    const lastBefore = await store.latest(before, seriesBound + 1, undefined, signal)
    // Series whose latest earlier reading falls in the same bucket share one aggregation of it.
    const byBucket = new Map<number, Set<string>>()
    for (const r of lastBefore) {
      const bucket = Math.floor(r.ts / interval) * interval
      let names = byBucket.get(bucket)
      if (!names) byBucket.set(bucket, (names = new Set()))
      names.add(`${r.device_id}\u0000${r.channel}`)
    }
    for (const [bucket, names] of byBucket) {
      const rows = await store.buckets({ ...filter, from: Math.max(filter.from, bucket), to: Math.min(start, bucket + interval) }, aggregation, seriesBound + 1, undefined, 0, signal)
      for (const row of rows) {
        const name = `${row.device_id}\u0000${row.channel}`
        if (names.has(name)) carried.set(name, row)
      }
    }
  }
  // The stretch holds the page: its buckets have room for limit + series.length rows, and at most series.length - 1
  // are skipped (those at or before `after` in its first bucket).
  const out: BucketRow[] = []
  for (let ts = start; ts < end && out.length < limit; ts += interval) {
    for (const s of series) {
      const name = `${s.device_id}\u0000${s.channel}`
      const row = held.get(`${ts}\u0000${name}`)
      if (row) carried.set(name, row)
      if (after && ts === after[0] && (s.device_id < after[1] || (s.device_id === after[1] && s.channel <= after[2]))) continue
      out.push(row ?? emptyBucket(ts, s.device_id, s.channel, carried.get(name), spec))
      if (out.length === limit) break
    }
  }
  return out
}

/** A bucket without readings: count 0; metric, environment and (with `previous`) values of the series' latest earlier bucket. */
function emptyBucket(ts: number, deviceId: string, channel: string, earlier: BucketRow | undefined, spec: BucketSpec): BucketRow {
  const row: BucketRow = { ts, device_id: deviceId, channel, metric: earlier?.metric ?? null, environment_id: earlier?.environment_id ?? null }
  for (const a of spec.aggregates) row[a] = a === 'count' ? 0 : spec.fill === 'previous' ? earlier?.[a] : undefined
  return row
}
