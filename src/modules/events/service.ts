// The events API (Stripe's /events, Svix's messages and attempts): the change events an account's webhooks carry,
// kept 30 days, readable whether or not an endpoint received them; each endpoint's attempts; and the ways to have
// them delivered again after a receiver's outage.
import { and, desc, eq, gte, lt, sql } from 'drizzle-orm'
import { outboxEvents, webhookAttempts, webhookDeliveries } from '../../../db/schema/index.ts'
import type { Deps } from '../../deps.ts'
import { toPage } from '../../http/cursor.ts'
import { ApiError } from '../../http/errors.ts'
import { isId } from '../../ids.ts'
import { atOrAfter, before, equals } from '../../records/filters.ts'
import { listPage } from '../../records/list.ts'
import { presentRow } from '../../records/rows.ts'
import { getEndpoint } from '../webhooks/service.ts'
import type { EventListQuery } from './queries.ts'

/** How long events stay readable here (deliveries and their retries take at most a day and a half). */
export const EVENT_RETENTION_DAYS = 30
const retained = () => sql`${outboxEvents.created_at} >= now() - interval '30 days'`

export interface EventBody { id: string; type: string; created_at: string; data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> } }

/** The event exactly as a webhook delivery carries it (the stored, signed payload). */
const presentEvent = (row: { payload: string }) => JSON.parse(row.payload) as EventBody

export function listEvents(deps: Pick<Deps, 'cursors' | 'database'>, accountId: string, query: EventListQuery) {
  const { limit, cursor, ...filters } = query
  return listPage(deps, {
    list: 'events', accountId, table: outboxEvents, filters, limit, cursor,
    conditions: (f) => [retained(), equals(outboxEvents.type, f.type), atOrAfter(outboxEvents.created_at, f.created_from), before(outboxEvents.created_at, f.created_to)],
  }, presentEvent)
}

export async function getEvent(deps: Pick<Deps, 'database'>, accountId: string, id: string) {
  const [row] = isId('event', id)
    ? await deps.database.db.select({ payload: outboxEvents.payload }).from(outboxEvents).where(and(eq(outboxEvents.account_id, accountId), eq(outboxEvents.id, id), retained()))
    : []
  if (!row) throw new ApiError('not_found', `No event ${id} in this account in the last ${EVENT_RETENTION_DAYS} days.`)
  return presentEvent(row)
}

/** The endpoint, or a 404 (another account's endpoint is not found either). */
const ownEndpoint = (deps: Pick<Deps, 'database'>, accountId: string, endpointId: string) => {
  if (!isId('webhookEndpoint', endpointId)) throw new ApiError('not_found', 'No such webhook endpoint.')
  return getEndpoint(deps, accountId, endpointId)
}

/** Every attempt to deliver to the endpoint, newest first, keyset-paged by attempt id (which sorts by time). */
export async function listAttempts(deps: Pick<Deps, 'cursors' | 'database'>, accountId: string, endpointId: string, query: { limit?: number; cursor?: string }) {
  await ownEndpoint(deps, accountId, endpointId)
  const scope = { list: 'webhook-attempts', accountId, filters: { endpoint_id: endpointId } }
  const limit = query.limit ?? 50
  const after = query.cursor ? String(deps.cursors.decode(scope, query.cursor)[0]) : undefined
  const rows = await deps.database.db.select({
    id: webhookAttempts.id, event_id: webhookAttempts.event_id, event_type: webhookDeliveries.event_type, attempted_at: webhookAttempts.attempted_at,
    status_code: webhookAttempts.status_code, duration_ms: webhookAttempts.duration_ms, error: webhookAttempts.error,
  }).from(webhookAttempts)
    .innerJoin(webhookDeliveries, and(eq(webhookDeliveries.endpoint_id, webhookAttempts.endpoint_id), eq(webhookDeliveries.event_id, webhookAttempts.event_id)))
    .where(and(eq(webhookAttempts.endpoint_id, endpointId), eq(webhookDeliveries.account_id, accountId), after ? lt(webhookAttempts.id, after) : undefined))
    .orderBy(desc(webhookAttempts.id)).limit(limit + 1)
  return toPage(rows, limit, deps.cursors, scope, (r) => [r.id], presentRow)
}

/**
 * After a receiver's outage: every delivery to the endpoint that failed (ran out of attempts) for an event created
 * at or after `since` is due again now, with a fresh schedule of retries. Deliveries still pending are left alone.
 */
export async function recoverEndpoint(deps: Pick<Deps, 'database'>, accountId: string, endpointId: string, since: string): Promise<{ recovered: number }> {
  const endpoint = await ownEndpoint(deps, accountId, endpointId)
  if (endpoint.status !== 'enabled') throw new ApiError('conflict', 'The endpoint is disabled: enable it (PATCH status "enabled") before recovering its deliveries.')
  const rows = await deps.database.db.update(webhookDeliveries)
    .set({ status: 'pending', attempts: 0, next_attempt_at: sql`now()`, locked_until: null })
    .where(and(eq(webhookDeliveries.account_id, accountId), eq(webhookDeliveries.endpoint_id, endpointId), eq(webhookDeliveries.status, 'failed'), gte(webhookDeliveries.created_at, sql`${since}::timestamptz`)))
    .returning({ event_id: webhookDeliveries.event_id })
  return { recovered: rows.length }
}

/** One event to one endpoint again, whether it was delivered, failed, or never subscribed: due now. */
export async function resendEvent(deps: Pick<Deps, 'database'>, accountId: string, endpointId: string, eventId: string): Promise<{ event_id: string }> {
  const endpoint = await ownEndpoint(deps, accountId, endpointId)
  if (endpoint.status !== 'enabled') throw new ApiError('conflict', 'The endpoint is disabled: enable it (PATCH status "enabled") before resending to it.')
  const event = await getEvent(deps, accountId, eventId).catch(() => undefined)
  if (!event) throw new ApiError('validation_failed', 'No such event.', { errors: [{ path: '/body/event_id', message: `is not an event of this account in the last ${EVENT_RETENTION_DAYS} days` }] })
  await deps.database.db.insert(webhookDeliveries)
    .values({ account_id: accountId, endpoint_id: endpointId, event_id: eventId, event_type: String(event.type) })
    .onConflictDoUpdate({ target: [webhookDeliveries.endpoint_id, webhookDeliveries.event_id], set: { status: 'pending', attempts: 0, next_attempt_at: sql`now()`, locked_until: null } })
  return { event_id: eventId }
}
