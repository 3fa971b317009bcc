import { sql } from 'drizzle-orm'
import { boolean, check, index, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

export const PLANS = ['free', 'keeper', 'breeder', 'professional'] as const
export type Plan = (typeof PLANS)[number]

const timestamps = {
  createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
}

export const accounts = pgTable('accounts', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  email: text('email'),
  plan: text('plan').$type<Plan>().notNull().default('free'),
  liveTestAllowlisted: boolean('live_test_allowlisted').notNull().default(false),
  ...timestamps,
}, (t) => [check('accounts_plan_check', sql`${t.plan} in ('free', 'keeper', 'breeder', 'professional')`)])

/** Personal access tokens and device keys; only the SHA-256 of the value is kept. */
export const apiKeys = pgTable('api_keys', {
  id: text('id').primaryKey(),
  accountId: text('account_id').notNull().references(() => accounts.id, { onDelete: 'cascade' }),
  kind: text('kind').$type<'personal' | 'device'>().notNull(),
  name: text('name').notNull(),
  tokenHash: text('token_hash').notNull().unique(),
  tokenPrefix: text('token_prefix').notNull(),
  lastFour: text('last_four').notNull(),
  scopes: text('scopes').array().notNull().default(sql`'{}'::text[]`),
  /** Set for device keys: the one device the key speaks for. */
  deviceId: text('device_id'),
  expiresAt: timestamp('expires_at', { withTimezone: true, precision: 3 }),
  lastUsedAt: timestamp('last_used_at', { withTimezone: true, precision: 3 }),
  revokedAt: timestamp('revoked_at', { withTimezone: true, precision: 3 }),
  createdAt: timestamps.createdAt,
}, (t) => [
  index('api_keys_account_idx').on(t.accountId, t.createdAt),
  check('api_keys_kind_check', sql`${t.kind} in ('personal', 'device')`),
])

/** Platform-wide settings an operator changes at run time (status, cursor secret). */
export const platformSettings = pgTable('platform_settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: timestamps.updatedAt,
})
