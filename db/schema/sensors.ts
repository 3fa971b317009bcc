// Sensor devices, headless pairing claims, and the SQL readings store (CONTRACT §7).
import { sql } from 'drizzle-orm'
import { check, doublePrecision, index, integer, jsonb, pgTable, pgView, primaryKey, text, timestamp, unique, uniqueIndex } from 'drizzle-orm/pg-core'
import { accounts } from './foundation.ts'

const instant = (name: string) => timestamp(name, { withTimezone: true, precision: 3 })

/** A device reports channels, not places: each channel maps to a metric and an environment here. */
export interface DeviceChannel { key: string; metric: string | null; unit: string | null; environment_id: string | null }

export const sensorDevices = pgTable('sensor_devices', {
  id: text('id').primaryKey(),
  account_id: text('account_id').notNull().references(() => accounts.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  model: text('model'),
  hardware_id: text('hardware_id'),
  channels: jsonb('channels').$type<DeviceChannel[]>().notNull().default([]),
  /** Channels that sent readings without a mapping; their readings are kept with metric and environment null. */
  unmapped_channels: text('unmapped_channels').array().notNull().default(sql`'{}'::text[]`),
  last_seen_at: instant('last_seen_at'),
  version: integer('version').notNull().default(1),
  created_at: instant('created_at').notNull().defaultNow(),
  updated_at: instant('updated_at').notNull().defaultNow(),
  deleted_at: instant('deleted_at'),
}, (t) => [
  unique('sensor_devices_account_id_key').on(t.account_id, t.id),
  index('sensor_devices_account_updated_idx').on(t.account_id, t.updated_at),
])

const CLAIM_STATUSES = ['pending', 'claimed', 'expired'] as const

/** RFC 8628-shaped pairing: a headless device starts a claim, its owner completes it with the user code. */
export const pairingClaims = pgTable('pairing_claims', {
  /**
   * SHA-256 (hex) of the claim id. The claim id is the device's only secret (whoever holds it is handed the device
   * key), so, like a key, it is kept only as a hash (migration 0009).
   */
  claim_hash: text('claim_hash').primaryKey(),
  user_code: text('user_code').notNull(),
  model: text('model'),
  hardware_id: text('hardware_id'),
  status: text('status').$type<(typeof CLAIM_STATUSES)[number]>().notNull().default('pending'),
  account_id: text('account_id').references(() => accounts.id, { onDelete: 'cascade' }),
  device_id: text('device_id'),
  /**
   * When the device key was minted and handed over: at the first poll after the claim that proves the claim id. The
   * key is never stored, only its hash with the device's other keys; until this is set the device has no key.
   */
  key_issued_at: instant('key_issued_at'),
  expires_at: instant('expires_at').notNull(),
  last_polled_at: instant('last_polled_at'),
  created_at: instant('created_at').notNull().defaultNow(),
}, (t) => [
  // A code is unique among live claims only, so the short code space is reused once claims end.
  uniqueIndex('pairing_claims_pending_code_idx').on(t.user_code).where(sql`${t.status} = 'pending'`),
  check('pairing_claims_status_check', sql`${t.status} in ('pending', 'claimed', 'expired')`),
])

/**
 * Readings in the SQL store (the embedded default, and Postgres without QuestDB), compact (migration 0007): the
 * channel and the series as small ids, the time, the value. Partitioned by week on `ts` (ingest/stores/sql-layout.ts
 * makes partitions ahead and drops them behind; drizzle cannot declare partitioning, the migration does). Unique on
 * (channel, ts): a retried batch is a no-op.
 */
export const readings = pgTable('readings', {
  channel_id: integer('channel_id').notNull(),
  series_id: integer('series_id').notNull(),
  ts: instant('ts').notNull(),
  value: doublePrecision('value').notNull(),
}, (t) => [primaryKey({ name: 'readings_pkey', columns: [t.channel_id, t.ts] })])

/** A small id per device channel: what readings are unique on, with their time. */
export const readingChannels = pgTable('reading_channels', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  device_id: text('device_id').notNull(),
  channel: text('channel').notNull(),
}, (t) => [unique('reading_channels_key').on(t.device_id, t.channel)])

/** Each series' newest reading, kept by the write (only ever forward in time): "latest" reads one row per series. */
export const readingLatest = pgTable('reading_latest', {
  series_id: integer('series_id').primaryKey(),
  ts: instant('ts').notNull(),
  value: doublePrecision('value').notNull(),
})

/** Every reading with its names (a view over readings and the catalogue): for people and tools, not the service's queries. */
export const sensorReadings = pgView('sensor_readings', {
  account_id: text('account_id').notNull(),
  device_id: text('device_id').notNull(),
  channel: text('channel').notNull(),
  ts: instant('ts').notNull(),
  value: doublePrecision('value').notNull(),
  metric: text('metric'),
  environment_id: text('environment_id'),
  series_id: integer('series_id').notNull(),
}).existing()

/**
 * The series catalogue (ingest/series.ts): each (account, device, channel, metric, environment) readings were stored
 * under, with a small integer id. Bounds a readings query's cost before it runs; rollups are kept per series.
 */
export const readingSeries = pgTable('reading_series', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  account_id: text('account_id').notNull(),
  device_id: text('device_id').notNull(),
  channel: text('channel').notNull(),
  metric: text('metric'),
  environment_id: text('environment_id'),
  channel_id: integer('channel_id').notNull(),
}, (t) => [
  unique('reading_series_key').on(t.account_id, t.device_id, t.channel, t.metric, t.environment_id).nullsNotDistinct(),
  index('reading_series_account_environment_idx').on(t.account_id, t.environment_id),
])

/** Rollups of readings per series (migrations 0006, 0007, 0010): one table per level, the same columns in each, partitioned by bucket. */
const rollupTable = (name: string) => pgTable(name, {
  series_id: integer('series_id').notNull(),
  bucket: instant('bucket').notNull(),
  count: integer('count').notNull(),
  sum: doublePrecision('sum').notNull(),
  min: doublePrecision('min').notNull(),
  max: doublePrecision('max').notNull(),
  first_ts: instant('first_ts').notNull(),
  first_value: doublePrecision('first_value').notNull(),
  last_ts: instant('last_ts').notNull(),
  last_value: doublePrecision('last_value').notNull(),
}, (t) => [primaryKey({ name: `${name}_pkey`, columns: [t.series_id, t.bucket] })])
export const readingRollups1m = rollupTable('reading_rollups_1m')
export const readingRollups5m = rollupTable('reading_rollups_5m')
export const readingRollups1h = rollupTable('reading_rollups_1h')
export const readingRollups1d = rollupTable('reading_rollups_1d')

/**
 * The minutes written to a QuestDB readings table (`store`) whose rollup tables of our own (QuestDB 7.4, no
 * materialized views) may not reflect them yet: marked on write, removed by the refresh once settled
 * (ingest/stores/questdb-rollups.ts). Days holding a mark are read from the raw readings.
 */
export const readingRollupMarks = pgTable('reading_rollup_marks', {
  store: text('store').notNull(),
  minute: instant('minute').notNull(),
  marked_at: instant('marked_at').notNull().defaultNow(),
  /** When the last refresh that recomputed the minute began: once SETTLE_MS after marked_at, the mark is done. */
  refreshed_at: instant('refreshed_at'),
}, (t) => [primaryKey({ name: 'reading_rollup_marks_pkey', columns: [t.store, t.minute] })])
