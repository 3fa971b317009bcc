// Alert rows as the evaluator and the API share them: their presentation, the event each transition sends, the
// evaluator's batched writes and what it loads. Kept apart from service.ts, whose functions take pieces of Deps, so the
// evaluator (built by src/deps.ts) imports nothing that imports deps.ts back.
import { and, eq, isNull, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { alertRules, alerts, sensorDevices, type AlertRuleSnapshot, ALERT_RESOLUTIONS } from '../../../db/schema/index.ts'
import { appendEvent, type EventType, type Executor } from '../../webhooks/outbox.ts'

export type AlertRuleRow = typeof alertRules.$inferSelect
export type AlertRow = typeof alerts.$inferSelect
export type AlertResolution = (typeof ALERT_RESOLUTIONS)[number]

export function presentAlert(row: AlertRow) {
  const iso = (d: Date | null) => (d ? d.toISOString() : null)
  return {
    id: row.id, rule_id: row.rule_id, kind: row.kind, state: row.state,
    environment_id: row.environment_id, device_id: row.device_id, channel: row.channel, metric: row.metric,
    rule: row.rule,
    triggered_at: row.triggered_at.toISOString(),
    window: { from: row.window_from.toISOString(), to: row.window_to.toISOString() },
    values: { first: row.value_first, last: row.value_last, min: row.value_min, max: row.value_max, count: row.value_count },
    resolved_at: iso(row.resolved_at), resolved_value: row.resolved_value, resolved_reason: row.resolved_reason,
    created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(),
  }
}

export const snapshotOf = (rule: AlertRuleRow): AlertRuleSnapshot => ({
  id: rule.id, name: rule.name, min: rule.min, max: rule.max, hysteresis: rule.hysteresis,
  for_seconds: rule.for_seconds, stale_after_seconds: rule.stale_after_seconds,
})

/** The event an alert's opening or closing sends, by its kind. */
export function eventOf(kind: AlertRow['kind'], opening: boolean): EventType {
  if (kind === 'threshold') return opening ? 'environment.alert.triggered' : 'environment.alert.resolved'
  return opening ? 'sensor_device.stale' : 'sensor_device.recovered'
}

/** The fields a client writes. */
/** An alert the evaluator opens, or the close of the open alert of a rule, kind and series. */
export type Transition =
  | { open: typeof alerts.$inferInsert }
  | { close: { ruleId: string; kind: AlertRow['kind']; deviceId: string; channel: string; at: Date; value: number | null } }

/**
 * Writes the evaluator's transitions in one transaction, each with its event. The partial unique index keeps one
 * alert open per rule, kind and series, so when two processes open the same alert only the first write counts,
 * and a close that finds nothing open (another process closed it) sends nothing. Returns the transitions that
 * took effect.
 */
export async function writeTransitions(db: Executor & Pick<Db, 'transaction'>, transitions: readonly Transition[]): Promise<Transition[]> {
  return db.transaction(async (tx) => {
    const applied: Transition[] = []
    for (const transition of transitions) {
      let row: AlertRow | undefined
      if ('open' in transition) {
        ;[row] = await tx.insert(alerts).values(transition.open).onConflictDoNothing().returning()
      } else {
        const { ruleId, kind, deviceId, channel, at, value } = transition.close
        ;[row] = await tx.update(alerts).set({ state: 'resolved', resolved_at: at, resolved_value: value, resolved_reason: 'recovered', updated_at: new Date() })
          .where(and(eq(alerts.rule_id, ruleId), eq(alerts.kind, kind), eq(alerts.device_id, deviceId), eq(alerts.channel, channel), eq(alerts.state, 'open')))
          .returning()
      }
      if (!row) continue
      await appendEvent(tx, row.account_id, eventOf(row.kind, 'open' in transition), presentAlert(row))
      applied.push(transition)
    }
    return applied
  })
}

/** What the evaluator reads: live rules, their open alerts, and the live devices (with their channel mappings) of their accounts. */
export async function loadRules(db: Executor, accountId?: string) {
  const rules = await db.select().from(alertRules).where(and(isNull(alertRules.deleted_at), accountId ? eq(alertRules.account_id, accountId) : undefined))
  const open = await db.select({
    rule_id: alerts.rule_id, kind: alerts.kind, device_id: alerts.device_id, channel: alerts.channel, environment_id: alerts.environment_id,
    window_from: alerts.window_from, value_last: alerts.value_last,
  }).from(alerts).where(and(eq(alerts.state, 'open'), accountId ? eq(alerts.account_id, accountId) : undefined))
  const watching = [...new Set(rules.map((r) => r.account_id))]
  const devices = watching.length
    ? await db.select({ id: sensorDevices.id, account_id: sensorDevices.account_id, channels: sensorDevices.channels }).from(sensorDevices)
      .where(and(isNull(sensorDevices.deleted_at), sql`${sensorDevices.account_id} = any(${sql.param(watching)}::text[])`))
    : []
  return { rules, open, devices }
}
