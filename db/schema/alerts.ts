// Alert rules on environment readings, and the alerts they raise (issue 16). Rules are read into memory by
// every server process; alerts are written by the evaluator in batches, and the partial unique index below is
// what keeps one alert open per rule and series even when several processes see the same readings.
import { sql } from 'drizzle-orm'
import { check, doublePrecision, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { accounts } from './foundation.ts'

const instant = (name: string) => timestamp(name, { withTimezone: true, precision: 3 })

export const alertRules = pgTable('alert_rules', {
  id: text('id').primaryKey(),
  account_id: text('account_id').notNull().references(() => accounts.id, { onDelete: 'cascade' }),
  name: text('name'),
  /** Either an environment (every series of `metric` mapped to it) or one device channel. */
  environment_id: text('environment_id'),
  device_id: text('device_id'),
  channel: text('channel'),
  metric: text('metric').notNull(),
  min: doublePrecision('min'),
  max: doublePrecision('max'),
  hysteresis: doublePrecision('hysteresis').notNull().default(0),
  for_seconds: integer('for_seconds').notNull().default(0),
  stale_after_seconds: integer('stale_after_seconds'),
  version: integer('version').notNull().default(1),
  created_at: instant('created_at').notNull().defaultNow(),
  updated_at: instant('updated_at').notNull().defaultNow(),
  deleted_at: instant('deleted_at'),
}, (t) => [
  index('alert_rules_account_updated_idx').on(t.account_id, t.updated_at),
  check('alert_rules_target_check', sql`(${t.environment_id} is not null and ${t.device_id} is null and ${t.channel} is null) or (${t.environment_id} is null and ${t.device_id} is not null and ${t.channel} is not null)`),
])

export const ALERT_KINDS = ['threshold', 'stale'] as const
export const ALERT_STATES = ['open', 'resolved'] as const
export const ALERT_RESOLUTIONS = ['recovered', 'rule_changed', 'rule_deleted'] as const

export interface AlertRuleSnapshot {
  id: string; name: string | null; min: number | null; max: number | null; hysteresis: number
  for_seconds: number; stale_after_seconds: number | null
}

export const alerts = pgTable('alerts', {
  id: text('id').primaryKey(),
  account_id: text('account_id').notNull().references(() => accounts.id, { onDelete: 'cascade' }),
  rule_id: text('rule_id').notNull(),
  kind: text('kind').$type<(typeof ALERT_KINDS)[number]>().notNull(),
  state: text('state').$type<(typeof ALERT_STATES)[number]>().notNull().default('open'),
  environment_id: text('environment_id'),
  device_id: text('device_id').notNull(),
  channel: text('channel').notNull(),
  metric: text('metric').notNull(),
  /** The rule as it was when the alert opened. */
  rule: jsonb('rule').$type<AlertRuleSnapshot>().notNull(),
  triggered_at: instant('triggered_at').notNull(),
  window_from: instant('window_from').notNull(),
  window_to: instant('window_to').notNull(),
  value_first: doublePrecision('value_first'),
  value_last: doublePrecision('value_last'),
  value_min: doublePrecision('value_min'),
  value_max: doublePrecision('value_max'),
  value_count: integer('value_count'),
  resolved_at: instant('resolved_at'),
  resolved_value: doublePrecision('resolved_value'),
  resolved_reason: text('resolved_reason').$type<(typeof ALERT_RESOLUTIONS)[number]>(),
  created_at: instant('created_at').notNull().defaultNow(),
  updated_at: instant('updated_at').notNull().defaultNow(),
}, (t) => [
  uniqueIndex('alerts_one_open_idx').on(t.rule_id, t.kind, t.device_id, t.channel).where(sql`${t.state} = 'open'`),
  index('alerts_account_id_idx').on(t.account_id, t.id),
  index('alerts_open_idx').on(t.state).where(sql`${t.state} = 'open'`),
  check('alerts_kind_check', sql`${t.kind} in ('threshold', 'stale')`),
  check('alerts_state_check', sql`${t.state} in ('open', 'resolved')`),
])
