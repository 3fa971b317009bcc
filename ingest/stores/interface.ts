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

/** Keyset positions: raw rows and buckets by (ts, device, channel); latest by (device, channel). */
export type SeriesPosition = [ts: number, deviceId: string, channel: string]
export type LatestPosition = [deviceId: string, channel: string]

export interface ReadingsStore {
  readonly kind: 'questdb' | 'sql'
  /** Resolves once every reading is durably stored; a reading already stored (same device, channel, ts) is skipped. */
  write(readings: readonly Reading[]): Promise<void>
  raw(filter: ReadingsFilter, limit: number, after?: SeriesPosition): Promise<RawRow[]>
  /** One row per (bucket, device, channel), buckets aligned to UTC (intervals divide a day). */
  buckets(filter: ReadingsFilter, intervalMs: number, aggregates: readonly Aggregate[], limit: number, after?: SeriesPosition): Promise<BucketRow[]>
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
