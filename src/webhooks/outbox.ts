// Change events are written to the outbox in the same transaction as the change (CONTRACT §8), so an event
// exists exactly when its change committed. Delivery reads the outbox (issue 5).
import type { Db } from '../../db/client.ts'
import { sql } from 'drizzle-orm'
import { outboxEvents, webhookDeliveries } from '../../db/schema/index.ts'
import { newId } from '../ids.ts'

export const EVENT_TYPES = [
  'animal.created', 'animal.updated', 'animal.deleted', 'activity.created',
  'sensor_device.created', 'sensor_device.updated', 'sensor_device.deleted', 'sensor_device.paired',
  'webhook_endpoint.test',
  // Additive to v1 (issue 16), raised by the alert evaluator.
  'environment.alert.triggered', 'environment.alert.resolved', 'sensor_device.stale', 'sensor_device.recovered',
] as const
export type EventType = (typeof EVENT_TYPES)[number]

/** A database handle or an open transaction on it. */
export type Executor = Pick<Db, 'insert' | 'select' | 'update' | 'delete' | 'execute'>

/**
 * Appends `{ id, type, created_at, data: { object, previous_attributes? } }`, minified, as it will be signed and
 * sent. On updates `previous_attributes` holds the changed fields' old values (as Stripe's events do).
 */
export async function appendEvent(tx: Executor, accountId: string, type: EventType, object: Record<string, unknown>, previousAttributes?: Record<string, unknown>): Promise<string> {
  const id = newId('event')
  const createdAt = new Date()
  const data = previousAttributes ? { object, previous_attributes: previousAttributes } : { object }
  const payload = JSON.stringify({ id, type, created_at: createdAt.toISOString(), data })
  await tx.insert(outboxEvents).values({ id, account_id: accountId, type, payload, created_at: createdAt })
  // Fan out to the account's enabled endpoints that want this event, in the same transaction: an event is
  // committed with its deliveries or not at all.
  await tx.execute(sql`insert into webhook_deliveries (account_id, endpoint_id, event_id, event_type)
    select account_id, id, ${id}, ${type} from webhook_endpoints
    where account_id = ${accountId} and status = 'enabled' and (${type} = any(enabled_events) or '*' = any(enabled_events))`)
  return id
}

/** The test event goes to one endpoint only, whatever events it subscribes to. */
export async function appendTestEvent(tx: Executor, accountId: string, endpointId: string): Promise<string> {
  const id = newId('event')
  const createdAt = new Date()
  const payload = JSON.stringify({ id, type: 'webhook_endpoint.test', created_at: createdAt.toISOString(), data: { object: { endpoint_id: endpointId } } })
  await tx.insert(outboxEvents).values({ id, account_id: accountId, type: 'webhook_endpoint.test', payload, created_at: createdAt })
  await tx.insert(webhookDeliveries).values({ account_id: accountId, endpoint_id: endpointId, event_id: id, event_type: 'webhook_endpoint.test' })
  return id
}
