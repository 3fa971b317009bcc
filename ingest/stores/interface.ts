// Where readings live: QuestDB in production, a table in the records database by default. Both answer the same
// queries with the same rows for the same data (test/unit/readings-stores.test.ts holds them to it).

/** One reading as stored: the device's channel, mapped (or not) to a metric and an environment at ingest. */
export interface Reading {
  accountId: string
  deviceId: string
  channel: string
  /** Epoch milliseconds. */
  ts: number
  value: number
  metric: string | null
  environmentId: string | null
}

export const AGGREGATES = ['avg', 'min', 'max', 'last', 'count'] as const
export type Aggregate = (typeof AGGREGATES)[number]

export interface ReadingsFilter {
  accountId: string
  environmentId?: string
  deviceId?: string
  channel?: string
  metric?: string
  /** Epoch ms, inclusive. */
  from: number
  /** Epoch ms, exclusive. */
  to: number
}

export interface RawRow { ts: number; device_id: string; channel: string; metric: string | null; environment_id: string | null; value: number }
export type BucketRow = Omit<RawRow, 'value'> & Partial<Record<Aggregate, number>>

/**
 * Empty buckets: `none` leaves them out; `null` and `previous` give every series (a device and channel with a
 * reading in the window) a row for every bucket of the window. An empty bucket has `count` 0; its other
 * aggregates are absent (`null`) or those of the series' latest earlier bucket in the window (`previous`), and
 * its metric and environment are always those of that earlier bucket (none before the series' first reading).
 */
export const FILLS = ['none', 'null', 'previous'] as const
export type Fill = (typeof FILLS)[number]

export interface BucketSpec {
  intervalMs: number
  aggregates: readonly Aggregate[]
  fill: Fill
}

/** Keyset positions: raw rows and buckets by (ts, device, channel); latest by (device, channel). */
export type SeriesPosition = [ts: number, deviceId: string, channel: string]
export type LatestPosition = [deviceId: string, channel: string]

/** Where the batcher's group commits go: the readings store itself, or the ingest log in front of it. */
export type ReadingsSink = Pick<ReadingsStore, 'write'>

export interface ReadingsStore {
  readonly kind: 'questdb' | 'sql'
  /** Resolves once every reading is durably stored; a reading already stored (same device, channel, ts) is skipped. */
  write(readings: readonly Reading[]): Promise<void>
  /** `skip` passes over that many rows first (a CSV file finds where the next file starts without reading up to it). */
  raw(filter: ReadingsFilter, limit: number, after?: SeriesPosition, skip?: number): Promise<RawRow[]>
  /** One row per (bucket, device, channel), buckets aligned to UTC (intervals divide a day). */
  buckets(filter: ReadingsFilter, spec: BucketSpec, limit: number, after?: SeriesPosition, skip?: number): Promise<BucketRow[]>
  /** The newest reading of each (device, channel) within the filter, ordered by device then channel. */
  latest(filter: ReadingsFilter, limit: number, after?: LatestPosition): Promise<RawRow[]>
  ping(): Promise<void>
  close(): Promise<void>
}

/**
 * A later page of buckets needs no reading from before the bucket it resumes at: narrowing the window there
 * keeps each page from aggregating every earlier bucket again (30 days of minute data took 0.5 s a page).
 */
export const pastPage = (filter: ReadingsFilter, after?: SeriesPosition): ReadingsFilter =>
  after ? { ...filter, from: Math.max(filter.from, after[0]) } : filter

/**
 * With a fill, every page must see the whole window: which series exist and a previous bucket's values can lie
 * before the page (so a filled later page costs as much as the first).
 */
export const bucketWindow = (filter: ReadingsFilter, spec: BucketSpec, after?: SeriesPosition): ReadingsFilter =>
  spec.fill === 'none' ? pastPage(filter, after) : filter

/** The first bucket of a window starts at or before `from`, aligned to UTC like every bucket. */
export const firstBucket = (filter: ReadingsFilter, intervalMs: number) => Math.floor(filter.from / intervalMs) * intervalMs
