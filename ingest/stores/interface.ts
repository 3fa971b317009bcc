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

/** What a store aggregates: the buckets holding readings (fills are the planner's, ingest/planner.ts). */
export type AggregationSpec = Pick<BucketSpec, 'intervalMs' | 'aggregates'>

/** The levels of rollups a store may keep (ingest/planner.ts ROLLUP_LEVELS): per series, 1 minute, 1 hour, 1 day. */
export type RollupLevel = '1m' | '1h' | '1d'

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

/** Keyset positions: raw rows and buckets by (ts, device, channel); latest by (device, channel). */
export type SeriesPosition = [ts: number, deviceId: string, channel: string]
export type LatestPosition = [deviceId: string, channel: string]

/** Where the batcher's group commits go: the readings store itself, or the ingest log in front of it. */
export type ReadingsSink = Pick<ReadingsStore, 'write'>

export interface ReadingsStore {
  readonly kind: 'questdb' | 'sql'
  /**
   * The rollup levels the store keeps (ingest/planner.ts ROLLUP_LEVELS): every level on the SQL store; on QuestDB
   * its materialized views (8.3.1 on), none on 7.4. What a window before the raw readings' horizon can be answered from.
   */
  readonly rollupLevels: readonly RollupLevel[]
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
  /** One row per (bucket, device, channel) holding readings in the filter, buckets aligned to UTC (intervals divide a day). */
  buckets(filter: ReadingsFilter, spec: AggregationSpec, limit: number, after?: SeriesPosition, skip?: number, signal?: AbortSignal): Promise<BucketRow[]>
  /** The newest reading of each (device, channel) within the filter, ordered by device then channel. */
  latest(filter: ReadingsFilter, limit: number, after?: LatestPosition, signal?: AbortSignal): Promise<RawRow[]>
  ping(): Promise<void>
  close(): Promise<void>
}
