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

/**
 * What a bucket row aggregates: one series (a device's channel), or every series of a metric within the filter
 * (an environment with `environmentId`, else the whole account); series without a metric are left out of the latter.
 */
export const GROUPINGS = ['series', 'metric'] as const
export type Grouping = (typeof GROUPINGS)[number]

/**
 * One bucket of a group. A series' row has its device_id and channel, and the metric and environment of its latest
 * reading in the bucket; a metric's row has no device_id or channel, and the filter's environment (null without one).
 */
export type BucketRow = Omit<RawRow, 'value' | 'device_id' | 'channel'> & { device_id?: string; channel?: string } & Partial<Record<Aggregate, number>>

/** What tells a bucket's rows apart, in their order: (device_id, channel) of a series; (metric, '') of a metric. */
export type GroupKey = [string, string]
export const groupKey = (row: BucketRow, groupBy: Grouping): GroupKey => (groupBy === 'metric' ? [row.metric ?? '', ''] : [row.device_id ?? '', row.channel ?? ''])
/** Whether key `a` comes before `b` (bytewise, as the stores order them): -1, 0 or 1. */
export const compareKeys = (a: GroupKey, b: GroupKey) => byteOrder(a[0], b[0]) || byteOrder(a[1], b[1])
export const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * Empty buckets: `none` leaves them out; `null` and `previous` give every series (a device and channel with a
 * reading in the window) a row for every bucket of the window. An empty bucket has `count` 0; its other
 * aggregates are absent (`null`) or those of the series' latest earlier bucket in the window (`previous`), and
 * its metric and environment are always those of that earlier bucket (none before the series' first reading).
 */
export const FILLS = ['none', 'null', 'previous'] as const
export type Fill = (typeof FILLS)[number]

export interface BucketSpec {
  interval: IntervalName
  aggregates: readonly Aggregate[]
  fill: Fill
  groupBy: Grouping
}

/** What a store aggregates: the buckets holding readings (fills are the planner's, ingest/planner.ts). */
export type AggregationSpec = Pick<BucketSpec, 'interval' | 'aggregates' | 'groupBy'>

/**
 * Bucket intervals (ingest/planner.ts INTERVALS): fixed widths aligned to the epoch, ISO weeks from Monday 00:00 UTC
 * and calendar months in UTC.
 */
export type IntervalName = '1m' | '5m' | '15m' | '30m' | '1h' | '6h' | '12h' | '1d' | '1w' | '1mo'

/** The levels of rollups a store may keep (ingest/planner.ts ROLLUP_LEVELS): per series, 1 minute, 5 minutes, 1 hour, 1 day. */
export type RollupLevel = '1m' | '5m' | '1h' | '1d'

/** The earliest instant each level is sure to hold (ingest/planner.ts retentionHorizons); -Infinity: forever. */
export type RetentionHorizons = Record<RollupLevel | 'raw', number>

/** What one maintenance run did: the partitions it dropped and made, by table, for the log. */
export interface MaintenanceReport {
  dropped: string[]
  created: string[]
  /** Readings moved from an older layout this run (the SQL store's legacy table). */
  moved?: number
  /** More to do at once (a move not finished): the caller runs maintenance again without waiting. */
  more?: boolean
}

/** The signal of a read nobody will abort. */
export const NO_DEADLINE: AbortSignal = new AbortController().signal

/** Keyset positions: raw rows by (ts, device, channel); buckets by (ts, group key); latest by (device, channel). */
export type SeriesPosition = [ts: number, deviceId: string, channel: string]
export type BucketPosition = [ts: number, ...key: GroupKey]
export type LatestPosition = [deviceId: string, channel: string]

/** Where the batcher's group commits go: the readings store itself, or the ingest log in front of it. */
export type ReadingsSink = Pick<ReadingsStore, 'write'>

export interface ReadingsStore {
  readonly kind: 'questdb' | 'sql'
  /**
   * The rollup levels the store keeps (ingest/planner.ts ROLLUP_LEVELS): every level on the SQL store; on QuestDB
   * its materialized views (8.3.1 on), or on 7.4 tables of our own (questdb-rollups.ts). What a window before the raw
   * readings' horizon can be answered from.
   */
  readonly rollupLevels: readonly RollupLevel[]
  /**
   * Brings rollups kept apart from the write up to date now (QuestDB 7.4's own), treating writes older than
   * `settleMs` as finished; a no-op where rollups are kept with the write or by the store. For tests and tools.
   */
  refreshRollups?(settleMs?: number): Promise<void>
  /**
   * Drops what every level's retention has passed, whole partitions at a time, never row by row; prepares what
   * writes will need next (the SQL store's partitions ahead of time). Safe to run from several processes at once.
   */
  maintain(horizons: RetentionHorizons, now: number): Promise<MaintenanceReport>
  /** Resolves once every reading is durably stored; a reading already stored (same device, channel, ts) is skipped. */
  write(readings: readonly Reading[]): Promise<void>
  /**
   * Reads run under `signal` (default: none): when it aborts, the statement is cancelled in the store and the read
   * rejects with ReadCancelled (db/client.ts).
   * `skip` passes over that many rows first (a CSV file finds where the next file starts without reading up to it).
   */
  raw(filter: ReadingsFilter, limit: number, after?: SeriesPosition, skip?: number, signal?: AbortSignal): Promise<RawRow[]>
  /**
   * One row per (bucket, group) holding readings in the filter, in (ts, group key) order, buckets in UTC (ingest/planner.ts
   * bucketNumber). Aggregates across series add up: avg = Σsum ÷ Σcount; `last` is the value at the latest time, the
   * greatest of them when several series have a reading at that same time.
   */
  buckets(filter: ReadingsFilter, spec: AggregationSpec, limit: number, after?: BucketPosition, skip?: number, signal?: AbortSignal): Promise<BucketRow[]>
  /**
   * Whether every write acknowledged before the call is read by a read begun after it resolves: at once on the SQL
   * store (a write's readings and rollups are one transaction); on QuestDB once it has applied its WAL that far,
   * false if it has not within a moment. Reads begun after it are then the answer over those writes (rollups are read
   * only where they hold every write, questdb-rollups.ts). What ingest/kept-buckets.ts keeps rests on it.
   */
  caughtUp(): Promise<boolean>
  /**
   * The minutes within [from, to) whose answers may still change in their last digits as rollups catch up with
   * them (QuestDB: minutes its rollup marks name, read from the raw readings until the rollups hold them); undefined
   * where the store cannot tell (QuestDB's views without a records database). The SQL store's rollups are written
   * with the readings: none.
   */
  settling(from: number, to: number): Promise<number[] | undefined>
  /** The newest reading of each (device, channel) within the filter, ordered by device then channel. */
  latest(filter: ReadingsFilter, limit: number, after?: LatestPosition, signal?: AbortSignal): Promise<RawRow[]>
  ping(): Promise<void>
  close(): Promise<void>
}
