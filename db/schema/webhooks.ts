// Webhook endpoints, and the deliveries fanned out to them from change events (CONTRACT §8).
import { sql } from 'drizzle-orm'
import { check, foreignKey, index, integer, pgTable, primaryKey, text, timestamp, unique } from 'drizzle-orm/pg-core'
import { accounts } from './foundation.ts'
import { outboxEvents } from './records.ts'

const instant = (name: string) => timestamp(name, { withTimezone: true, precision: 3 })

export const webhookEndpoints = pgTable('webhook_endpoints', {
  id: text('id').primaryKey(),
  account_id: text('account_id').notNull().references(() => accounts.id, { onDelete: 'cascade' }),
  url: text('url').notNull(),
  description: text('description'),
  enabled_events: text('enabled_events').array().notNull(),
  status: text('status').$type<'enabled' | 'disabled'>().notNull().default('enabled'),
  disabled_reason: text('disabled_reason'),
  /** Needed in the clear to sign; shown to the owner once. */
  secret: text('secret').notNull(),
  /** After a rotation the old secret keeps signing too, until it expires. */
  previous_secret: text('previous_secret'),
  previous_secret_expires_at: instant('previous_secret_expires_at'),
  version: integer('version').notNull().default(1),
  created_at: instant('created_at').notNull().defaultNow(),
  updated_at: instant('updated_at').notNull().defaultNow(),
}, (t) => [
  unique('webhook_endpoints_account_id_key').on(t.account_id, t.id),
  check('webhook_endpoints_status_check', sql`${t.status} in ('enabled', 'disabled')`),
])

/** One event for one endpoint: retried on the schedule until it succeeds or runs out of attempts. */
export const webhookDeliveries = pgTable('webhook_deliveries', {
  account_id: text('account_id').notNull(),
  endpoint_id: text('endpoint_id').notNull(),
  event_id: text('event_id').notNull().references(() => outboxEvents.id, { onDelete: 'cascade' }),
  event_type: text('event_type').notNull(),
  status: text('status').$type<'pending' | 'succeeded' | 'failed'>().notNull().default('pending'),
  attempts: integer('attempts').notNull().default(0),
  next_attempt_at: instant('next_attempt_at').notNull().defaultNow(),
  /** A dispatcher's lease on an attempt in progress; once it passes, the attempt is someone else's to make. */
  locked_until: instant('locked_until'),
  last_attempt_at: instant('last_attempt_at'),
  last_status_code: integer('last_status_code'),
  last_error: text('last_error'),
  created_at: instant('created_at').notNull().defaultNow(),
}, (t) => [
  foreignKey({ name: 'webhook_deliveries_endpoint_fk', columns: [t.account_id, t.endpoint_id], foreignColumns: [webhookEndpoints.account_id, webhookEndpoints.id] }).onDelete('cascade'),
  // Identified by what it joins: fanning out is then one INSERT … SELECT inside the change's transaction.
  primaryKey({ name: 'webhook_deliveries_pkey', columns: [t.endpoint_id, t.event_id] }),
  index('webhook_deliveries_due_idx').on(t.next_attempt_at).where(sql`${t.status} = 'pending'`),
  check('webhook_deliveries_status_check', sql`${t.status} in ('pending', 'succeeded', 'failed')`),
])

/** Every attempt, for the endpoint's owner to see what happened. */
export const webhookAttempts = pgTable('webhook_attempts', {
  id: text('id').primaryKey(),
  endpoint_id: text('endpoint_id').notNull(),
  event_id: text('event_id').notNull(),
  attempted_at: instant('attempted_at').notNull(),
  status_code: integer('status_code'),
  duration_ms: integer('duration_ms').notNull(),
  error: text('error'),
}, (t) => [
  foreignKey({ name: 'webhook_attempts_delivery_fk', columns: [t.endpoint_id, t.event_id], foreignColumns: [webhookDeliveries.endpoint_id, webhookDeliveries.event_id] }).onDelete('cascade'),
  index('webhook_attempts_endpoint_idx').on(t.endpoint_id, t.attempted_at),
])
