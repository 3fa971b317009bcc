// Activities: recorded events on an animal (feeding, weight, shed…). Data access and rules, free of HTTP.
import { and, eq, isNull, sql } from 'drizzle-orm'
import { prepared } from '../../../db/prepared.ts'
import { activities, animals } from '../../../db/schema/index.ts'
import { ownTransaction, type InTransaction } from '../../../db/transaction.ts'
import type { Deps } from '../../deps.ts'
import { ApiError, type FieldError } from '../../http/errors.ts'
import { activityDetailsErrors, futureError } from '../../records/rules.ts'
import { newId } from '../../ids.ts'
import { atOrAfter, before, equals } from '../../records/filters.ts'
import { listPage, type Bound } from '../../records/list.ts'
import { presentRow } from '../../records/rows.ts'
import { appendEvent, type Executor } from '../../webhooks/outbox.ts'
import { getAnimal, recordWeight } from '../animals/service.ts'
import type { ActivityListQuery } from './queries.ts'

export type ActivityRow = typeof activities.$inferSelect
export const presentActivity = (row: ActivityRow) => presentRow(row)


export interface ActivityInput { animal_id: string; type: string; occurred_at?: string; details?: Record<string, unknown>; notes?: string | null }


const p = sql.placeholder
/** The activity, written only when its animal is the account's (undeleted): the check and the write in one statement. */
const insertActivity = prepared('activities:insert', (db) => db.insert(activities).select((qb) => qb.select({
  id: sql<string>`${p('id')}::text`.as('id'), account_id: animals.account_id, animal_id: animals.id, type: sql<string>`${p('type')}::text`.as('type'),
  occurred_at: sql<Date>`${p('occurredAt')}::timestamptz`.as('occurred_at'), details: sql`${p('details')}::jsonb`.as('details'),
  notes: sql<string | null>`${p('notes')}::text`.as('notes'), created_at: sql<Date>`now()`.as('created_at'), updated_at: sql<Date>`now()`.as('updated_at'),
}).from(animals).where(and(eq(animals.account_id, p('account')), eq(animals.id, p('animalId')), isNull(animals.deleted_at)))).returning())

/**
 * POST /activities: records the activity in its own transaction, or in the one `within` opens (idempotency wraps the
 * same work with the key's claim and stored answer).
 */
export function createActivity(deps: Pick<Deps, 'database'>, accountId: string, input: ActivityInput, within: InTransaction<ActivityRow> = ownTransaction(deps.database)): Promise<ActivityRow> {
  return within((tx) => recordActivity(tx, accountId, input))
}

/** Writes an activity (and, for a weighing, the animal's latest weight) with their events, inside `tx`. */
export async function recordActivity(tx: Executor, accountId: string, input: ActivityInput): Promise<ActivityRow> {
  const details = input.details ?? {}
  const occurredAt = input.occurred_at ? new Date(input.occurred_at) : new Date()
  const errors = activityDetailsErrors(input.type, details, { type: '/body/type', details: '/body/details' })
  const tooLate = futureError(occurredAt.getTime(), Date.now(), '/body/occurred_at')
  if (tooLate) errors.push(tooLate)
  const notAnimal = { path: '/body/animal_id', message: 'is not an animal of this account' }
  if (errors.length) {
    if (!(await getAnimal(tx, accountId, input.animal_id))) errors.push(notAnimal)
    throw new ApiError('validation_failed', 'The activity is not valid.', { errors })
  }
  const written = await insertActivity(tx, {
    id: newId('activity'), account: accountId, animalId: input.animal_id, type: input.type, occurredAt: occurredAt.toISOString(),
    details: JSON.stringify(details), notes: input.notes ?? null,
  })
  const row = written[0]
  if (!row) throw new ApiError('validation_failed', 'The activity is not valid.', { errors: [notAnimal] })
  await appendEvent(tx, accountId, 'activity.created', presentActivity(row))
  if (input.type === 'weight') await recordWeight(tx, accountId, input.animal_id, (details as { grams: number }).grams, occurredAt)
  return row
}


export function listActivities(deps: Pick<Deps, 'cursors' | 'database'>, accountId: string, query: ActivityListQuery) {
  const { limit, cursor, ...filters } = query
  const conditions = (f: Bound<typeof filters>) => [
    equals(activities.animal_id, f.animal_id),
    equals(activities.type, f.type),
    atOrAfter(activities.occurred_at, f.from),
    before(activities.occurred_at, f.to),
    atOrAfter(activities.updated_at, f.updated_since),
  ]
  return listPage(deps, { list: 'activities', accountId, table: activities, filters, limit, cursor, conditions, sortBy: activities.occurred_at }, presentActivity)
}
