// Change events are written to the outbox in the same transaction as the change (CONTRACT §8), so an event
// exists exactly when its change committed. Delivery reads the outbox (issue 5).
import { sql } from 'drizzle-orm'
import { prepared, type Executor } from '../../db/prepared.ts'
import { outboxEvents, webhookDeliveries, webhookEndpoints } from '../../db/schema/index.ts'
import { newId } from '../ids.ts'

export const EVENT_TYPES = [
  'animal.created', 'animal.updated', 'animal.deleted', 'activity.created',
  'sensor_device.created', 'sensor_device.updated', 'sensor_device.deleted', 'sensor_device.paired',
  'webhook_endpoint.test',
  // Additive to v1 (issue 16), raised by the alert evaluator.
  'environment.alert.triggered', 'environment.alert.resolved', 'sensor_device.stale', 'sensor_device.recovered',
] as const
export type EventType = (typeof EVENT_TYPES)[number]

export type { Executor }

const p = sql.placeholder

/**
 * The event row and its deliveries to the account's enabled endpoints that want it, in one statement: an event
 * is committed with its deliveries or not at all, and writing it costs one round trip.
 */
const insertEvent = prepared('outbox:append', () => sql`with event as (
    insert into ${outboxEvents} (id, account_id, type, payload, created_at)
    values (${p('id')}, ${p('account')}, ${p('type')}, ${p('payload')}, ${p('createdAt')}::timestamptz) returning id, account_id, type)
  insert into ${webhookDeliveries} (account_id, endpoint_id, event_id, event_type)
  select e.account_id, e.id, event.id, event.type from ${webhookEndpoints} e join event on e.account_id = event.account_id
  where e.status = 'enabled' and (event.type = any(e.enabled_events) or '*' = any(e.enabled_events))`)

/**
 * Appends `{ id, type, created_at, data: { object, previous_attributes? } }`, minified, as it will be signed and
 * sent. On updates `previous_attributes` holds the changed fields' old values (as Stripe's events do).
 */
export async function appendEvent(tx: Executor, accountId: string, type: EventType, object: Record<string, unknown>, previousAttributes?: Record<string, unknown>): Promise<string> {
  const id = newId('event')
  const createdAt = new Date().toISOString()
  const data = previousAttributes ? { object, previous_attributes: previousAttributes } : { object }
  const payload = JSON.stringify({ id, type, created_at: createdAt, data })
  await insertEvent(tx, { id, account: accountId, type, payload, createdAt })
  return id
}

/** The test event goes to one endpoint only, whatever events it subscribes to. */
export async function appendTestEvent(tx: Executor, accountId: string, endpointId: string): Promise<string> {
  const id = newId('event')
  const createdAt = new Date().toISOString()
  const payload = JSON.stringify({ id, type: 'webhook_endpoint.test', created_at: createdAt, data: { object: { endpoint_id: endpointId } } })
  await tx.insert(outboxEvents).values({ id, account_id: accountId, type: 'webhook_endpoint.test', payload, created_at: createdAt })
  await tx.insert(webhookDeliveries).values({ account_id: accountId, endpoint_id: endpointId, event_id: id, event_type: 'webhook_endpoint.test' })
  return id
}
