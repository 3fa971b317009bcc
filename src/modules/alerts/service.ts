// Alert rules and alerts (issue 16): data access and rules, free of HTTP. Every query is scoped to the caller's
// account. Rule changes are announced on RULES_CHANNEL so every process's evaluator re-reads the account.
import { and, count, eq, isNull, sql } from 'drizzle-orm'
import { METRICS } from '../../../db/reference/metrics.ts'
import { alertRules, alerts, environments, sensorDevices, type AlertRuleSnapshot, ALERT_RESOLUTIONS } from '../../../db/schema/index.ts'
import { ownTransaction, type InTransaction } from '../../../db/transaction.ts'
import type { Deps } from '../../deps.ts'
import { ApiError, type FieldError } from '../../http/errors.ts'
import { requireMatch } from '../../http/etag.ts'
import { mergePatch } from '../../http/merge-patch.ts'
import { newId } from '../../ids.ts'
import { RULES_CHANNEL } from '../../kv/channels.ts'
import { atOrAfter, equals } from '../../records/filters.ts'
import { listPage } from '../../records/list.ts'
import { presentRow } from '../../records/rows.ts'
import { appendEvent, type Executor } from '../../webhooks/outbox.ts'
import { eventOf, presentAlert, type AlertResolution, type AlertRow, type AlertRuleRow } from './rows.ts'
import type { RuleListQuery } from './queries.ts'

/** A rule may hold this many rules per account: the evaluator keeps every rule of every account in memory. */
export const MAX_RULES_PER_ACCOUNT = 1000

const metricIds = new Set(METRICS.map((m) => m.id))

export const presentRule = (row: AlertRuleRow) => presentRow(row)

export type RuleFields = Pick<AlertRuleRow,
  'name' | 'environment_id' | 'device_id' | 'channel' | 'metric' | 'min' | 'max' | 'hysteresis' | 'for_seconds' | 'stale_after_seconds'>
const WRITABLE: readonly (keyof RuleFields)[] = ['name', 'environment_id', 'device_id', 'channel', 'metric', 'min', 'max', 'hysteresis', 'for_seconds', 'stale_after_seconds']
const EMPTY: Omit<RuleFields, 'metric'> = {
  name: null, environment_id: null, device_id: null, channel: null, min: null, max: null, hysteresis: 0, for_seconds: 0, stale_after_seconds: null,
}
const TARGET: readonly (keyof RuleFields)[] = ['environment_id', 'device_id', 'channel', 'metric']

const live = (accountId: string) => and(eq(alertRules.account_id, accountId), isNull(alertRules.deleted_at))

export async function getRule(db: Executor, accountId: string, id: string, lock = false): Promise<AlertRuleRow | undefined> {
  const query = db.select().from(alertRules).where(and(live(accountId), eq(alertRules.id, id)))
  const [row] = await (lock ? query.for('update') : query)
  return row
}

/** Checks what the schema cannot: one target, a known metric, a range to leave and to come back into, and references that exist. */
async function checkRule(db: Executor, accountId: string, fields: RuleFields): Promise<void> {
  const errors: FieldError[] = []
  const byDevice = fields.device_id !== null || fields.channel !== null
  if (fields.environment_id !== null && byDevice) errors.push({ path: '/body/environment_id', message: 'cannot be combined with device_id and channel: a rule watches an environment or one device channel' })
  else if (fields.environment_id === null && !byDevice) errors.push({ path: '/body/environment_id', message: 'or device_id with channel is required' })
  else if (byDevice && fields.device_id === null) errors.push({ path: '/body/device_id', message: 'is required with channel' })
  else if (byDevice && fields.channel === null) errors.push({ path: '/body/channel', message: 'is required with device_id' })
  if (!metricIds.has(fields.metric)) errors.push({ path: '/body/metric', message: 'is not a metric (see GET /environment/metrics)' })
  if (fields.min === null && fields.max === null && fields.stale_after_seconds === null) errors.push({ path: '/body/min', message: 'a rule needs min, max or stale_after_seconds' })
  if (fields.min !== null && fields.max !== null) {
    if (fields.min > fields.max) errors.push({ path: '/body/min', message: 'must not exceed max' })
    else if (fields.min + fields.hysteresis > fields.max - fields.hysteresis) errors.push({ path: '/body/hysteresis', message: 'leaves no range to recover into (min + hysteresis must not exceed max − hysteresis)' })
  }
  if (fields.environment_id !== null) {
    const [env] = await db.select({ id: environments.id }).from(environments).where(and(eq(environments.account_id, accountId), eq(environments.id, fields.environment_id)))
    if (!env) errors.push({ path: '/body/environment_id', message: 'is not an environment of this account' })
  }
  if (fields.device_id !== null) {
    const [device] = await db.select({ id: sensorDevices.id }).from(sensorDevices)
      .where(and(eq(sensorDevices.account_id, accountId), eq(sensorDevices.id, fields.device_id), isNull(sensorDevices.deleted_at)))
    if (!device) errors.push({ path: '/body/device_id', message: 'is not a sensor device of this account' })
  }
  if (errors.length) throw new ApiError('validation_failed', 'The alert rule is not valid.', { errors })
}


export function listRules(deps: Pick<Deps, 'cursors' | 'database'>, accountId: string, query: RuleListQuery) {
  const { limit, cursor, ...filters } = query
  return listPage(deps, {
    list: 'alert-rules', accountId, table: alertRules, filters, limit, cursor,
    conditions: (f) => [
      isNull(alertRules.deleted_at),
      equals(alertRules.environment_id, f.environment_id),
      equals(alertRules.device_id, f.device_id),
      equals(alertRules.metric, f.metric),
      atOrAfter(alertRules.updated_at, f.updated_since),
    ],
  }, presentRule)
}

/**
 * POST /environment/alert-rules: creates the rule in its own transaction, or in the one `within` opens (idempotency
 * wraps the same work with the key's claim and stored answer).
 */
export function createAlertRule(deps: Pick<Deps, 'database'>, accountId: string, input: Partial<RuleFields> & Pick<RuleFields, 'metric'>, within: InTransaction<AlertRuleRow> = ownTransaction(deps.database)): Promise<AlertRuleRow> {
  return within((tx) => createRule(tx, accountId, input))
}

async function createRule(tx: Executor, accountId: string, input: Partial<RuleFields> & Pick<RuleFields, 'metric'>): Promise<AlertRuleRow> {
  const fields: RuleFields = { ...EMPTY, ...input }
  await checkRule(tx, accountId, fields)
  const [{ rules }] = (await tx.select({ rules: count() }).from(alertRules).where(live(accountId))) as [{ rules: number }]
  if (rules >= MAX_RULES_PER_ACCOUNT) throw new ApiError('validation_failed', `An account may hold at most ${MAX_RULES_PER_ACCOUNT} alert rules.`, { errors: [{ path: '/body', message: 'too many alert rules' }] })
  const [row] = await tx.insert(alertRules).values({ id: newId('alertRule'), account_id: accountId, ...fields }).returning()
  return row!
}

/**
 * Applies a JSON merge patch. A rule that now watches something else (another target or metric) closes its open
 * alerts with `rule_changed`; one that no longer has a range (or a staleness limit) closes those of that kind.
 */
export async function updateRule(deps: Pick<Deps, 'alerts' | 'database' | 'shared'>, accountId: string, id: string, patch: Record<string, unknown>, ifMatch: string | null): Promise<AlertRuleRow> {
  const row = await deps.database.db.transaction(async (tx) => {
    const current = await getRule(tx, accountId, id, true)
    if (!current) throw new ApiError('not_found', 'No such alert rule.')
    requireMatch(ifMatch, current.version)
    const before = Object.fromEntries(WRITABLE.map((field) => [field, current[field]]))
    const fields = { ...EMPTY, ...(mergePatch(before, patch) as object) } as RuleFields
    const changed = WRITABLE.filter((field) => fields[field] !== current[field])
    if (!changed.length) return current
    await checkRule(tx, accountId, fields)
    const [updated] = await tx.update(alertRules)
      .set({ ...Object.fromEntries(changed.map((field) => [field, fields[field]])), version: current.version + 1, updated_at: new Date() })
      .where(eq(alertRules.id, id)).returning()
    const retargeted = changed.some((field) => TARGET.includes(field))
    if (retargeted || (fields.min === null && fields.max === null)) await closeAlerts(tx, updated!, 'rule_changed', 'threshold')
    if (retargeted || fields.stale_after_seconds === null) await closeAlerts(tx, updated!, 'rule_changed', 'stale')
    return updated!
  })
  await announce(deps, accountId)
  return row
}

/** Soft delete: gone from the API, kept in storage so its alerts still name it; its open alerts close. */
export async function deleteRule(deps: Pick<Deps, 'alerts' | 'database' | 'shared'>, accountId: string, id: string, ifMatch: string | null): Promise<void> {
  await deps.database.db.transaction(async (tx) => {
    const current = await getRule(tx, accountId, id, true)
    if (!current) throw new ApiError('not_found', 'No such alert rule.')
    requireMatch(ifMatch, current.version)
    await tx.update(alertRules).set({ deleted_at: new Date(), updated_at: new Date(), version: current.version + 1 }).where(eq(alertRules.id, id))
    await closeAlerts(tx, current, 'rule_deleted')
  })
  await announce(deps, accountId)
}

/** This process's evaluator re-reads the account before the write is answered; the others on the message. */
export async function announce(deps: Pick<Deps, 'alerts' | 'shared'>, accountId: string): Promise<void> {
  await deps.alerts.reloadAccount(accountId)
  await deps.shared.publish(RULES_CHANNEL, accountId)
}

async function closeAlerts(tx: Executor, rule: AlertRuleRow, reason: AlertResolution, kind?: AlertRow['kind']): Promise<void> {
  const now = new Date()
  const closed = await tx.update(alerts).set({ state: 'resolved', resolved_at: now, resolved_reason: reason, updated_at: now })
    .where(and(eq(alerts.rule_id, rule.id), eq(alerts.state, 'open'), kind ? eq(alerts.kind, kind) : undefined)).returning()
  for (const alert of closed) await appendEvent(tx, alert.account_id, eventOf(alert.kind, false), presentAlert(alert))
}

export async function getAlert(db: Executor, accountId: string, id: string): Promise<AlertRow | undefined> {
  const [row] = await db.select().from(alerts).where(and(eq(alerts.account_id, accountId), eq(alerts.id, id)))
  return row
}

export interface AlertListQuery {
  limit?: number; cursor?: string
  state?: AlertRow['state']; kind?: AlertRow['kind']; environment_id?: string; device_id?: string; rule_id?: string; updated_since?: string
}

export function listAlerts(deps: Pick<Deps, 'cursors' | 'database'>, accountId: string, query: AlertListQuery) {
  const { limit, cursor, ...filters } = query
  return listPage(deps, {
    list: 'alerts', accountId, table: alerts, filters, limit, cursor,
    conditions: (f) => [
      equals(alerts.state, f.state),
      equals(alerts.kind, f.kind),
      equals(alerts.environment_id, f.environment_id),
      equals(alerts.device_id, f.device_id),
      equals(alerts.rule_id, f.rule_id),
      atOrAfter(alerts.updated_at, f.updated_since),
    ],
  }, presentAlert)
}

