// Webhook endpoints: what an account subscribes, where to, and how delivery has gone.
import { and, desc, eq, sql } from 'drizzle-orm'
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../../db/schema/index.ts'
import type { Deps } from '../../deps.ts'
import { ApiError, type FieldError } from '../../http/errors.ts'
import { newId } from '../../ids.ts'
import { atOrAfter } from '../../records/filters.ts'
import { listPage } from '../../records/list.ts'
import { presentRow } from '../../records/rows.ts'
import { EVENT_TYPES, appendTestEvent } from '../../webhooks/outbox.ts'
import { newSecret } from '../../webhooks/sign.ts'
import { urlProblem } from '../../webhooks/url-guard.ts'

export type EndpointRow = typeof webhookEndpoints.$inferSelect
/** How long a rotated-out secret keeps signing, so receivers can switch without missing a delivery. */
const SECRET_GRACE_MS = 24 * 3600 * 1000
const SUBSCRIBABLE = new Set<string>(['*', ...EVENT_TYPES.filter((t) => t !== 'webhook_endpoint.test')])

export function presentEndpoint(row: EndpointRow) {
  const { secret: _secret, previous_secret: _previous, previous_secret_expires_at: _expires, ...shown } = row
  return presentRow(shown)
}

export interface EndpointInput { url?: string; description?: string | null; enabled_events?: string[]; status?: 'enabled' | 'disabled' }

async function check(deps: Pick<Deps, 'config'>, input: EndpointInput): Promise<void> {
  const errors: FieldError[] = []
  if (input.url !== undefined) {
    const problem = await urlProblem(input.url, deps.config.webhookAllowPrivate)
    if (problem) errors.push({ path: '/body/url', message: problem })
  }
  input.enabled_events?.forEach((type, i) => {
    if (!SUBSCRIBABLE.has(type)) errors.push({ path: `/body/enabled_events/${i}`, message: `is not an event type (one of: ${[...SUBSCRIBABLE].join(', ')})` })
  })
  if (errors.length) throw new ApiError('validation_failed', 'The endpoint is not valid.', { errors })
}

export async function createEndpoint(deps: Pick<Deps, 'config' | 'database'>, accountId: string, input: Required<Pick<EndpointInput, 'url' | 'enabled_events'>> & EndpointInput) {
  await check(deps, input)
  const [row] = await deps.database.db.insert(webhookEndpoints).values({
    id: newId('webhookEndpoint'), account_id: accountId, url: input.url, description: input.description ?? null,
    enabled_events: [...new Set(input.enabled_events)], secret: newSecret(),
  }).returning()
  return row!
}

export async function getEndpoint(deps: Pick<Deps, 'database'>, accountId: string, id: string): Promise<EndpointRow> {
  const [row] = await deps.database.db.select().from(webhookEndpoints).where(and(eq(webhookEndpoints.account_id, accountId), eq(webhookEndpoints.id, id)))
  if (!row) throw new ApiError('not_found', 'No such webhook endpoint.')
  return row
}

export function listEndpoints(deps: Pick<Deps, 'cursors' | 'database'>, accountId: string, query: { limit?: number; cursor?: string; updated_since?: string }) {
  const { limit, cursor, ...filters } = query
  return listPage(deps, {
    list: 'webhook-endpoints', accountId, table: webhookEndpoints, filters, limit, cursor,
    conditions: (f) => [atOrAfter(webhookEndpoints.updated_at, f.updated_since)],
  }, presentEndpoint)
}

/** Counts by delivery state and the latest attempts, for the endpoint's owner to see how delivery goes. */
export async function deliveryReport(deps: Pick<Deps, 'database'>, endpointId: string) {
  const db = deps.database.db
  const counts = await db.select({ status: webhookDeliveries.status, n: sql<number>`count(*)::int` }).from(webhookDeliveries)
    .where(eq(webhookDeliveries.endpoint_id, endpointId)).groupBy(webhookDeliveries.status)
  const attempts = await db.select({
    event_id: webhookAttempts.event_id, event_type: webhookDeliveries.event_type, attempted_at: webhookAttempts.attempted_at,
    status_code: webhookAttempts.status_code, duration_ms: webhookAttempts.duration_ms, error: webhookAttempts.error,
  }).from(webhookAttempts)
    .innerJoin(webhookDeliveries, and(eq(webhookDeliveries.endpoint_id, webhookAttempts.endpoint_id), eq(webhookDeliveries.event_id, webhookAttempts.event_id)))
    .where(eq(webhookAttempts.endpoint_id, endpointId)).orderBy(desc(webhookAttempts.attempted_at), desc(webhookAttempts.id)).limit(10)
  const count = (status: string) => counts.find((c) => c.status === status)?.n ?? 0
  return {
    deliveries: { pending: count('pending'), succeeded: count('succeeded'), failed: count('failed') },
    recent_attempts: attempts.map((a) => presentRow(a)),
  }
}

export async function updateEndpoint(deps: Pick<Deps, 'config' | 'database'>, accountId: string, id: string, patch: EndpointInput & { rotate_secret?: boolean }) {
  const current = await getEndpoint(deps, accountId, id)
  await check(deps, patch)
  const now = new Date()
  const rotate = patch.rotate_secret === true
  const [row] = await deps.database.db.update(webhookEndpoints).set({
    ...(patch.url !== undefined ? { url: patch.url } : {}),
    ...(patch.description !== undefined ? { description: patch.description } : {}),
    ...(patch.enabled_events !== undefined ? { enabled_events: [...new Set(patch.enabled_events)] } : {}),
    // Enabling again clears why it was disabled; deliveries resume from where they stopped.
    ...(patch.status !== undefined ? { status: patch.status, disabled_reason: patch.status === 'enabled' ? null : current.status === 'disabled' ? current.disabled_reason : 'Disabled by the account.' } : {}),
    ...(rotate ? { secret: newSecret(), previous_secret: current.secret, previous_secret_expires_at: new Date(now.getTime() + SECRET_GRACE_MS) } : {}),
    version: current.version + 1, updated_at: now,
  }).where(eq(webhookEndpoints.id, id)).returning()
  return { row: row!, rotated: rotate }
}

export async function deleteEndpoint(deps: Pick<Deps, 'database'>, accountId: string, id: string): Promise<void> {
  const deleted = await deps.database.db.delete(webhookEndpoints).where(and(eq(webhookEndpoints.account_id, accountId), eq(webhookEndpoints.id, id))).returning({ id: webhookEndpoints.id })
  if (!deleted.length) throw new ApiError('not_found', 'No such webhook endpoint.')
}

export async function sendTestEvent(deps: Pick<Deps, 'database'>, accountId: string, id: string): Promise<string> {
  await getEndpoint(deps, accountId, id)
  return deps.database.db.transaction((tx) => appendTestEvent(tx, accountId, id))
}
