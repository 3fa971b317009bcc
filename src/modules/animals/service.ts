// Animals: data access and rules, free of HTTP. Every query is scoped to the caller's account.
import { and, asc, count, eq, getTableColumns, gt, inArray, isNull, lte, or, sql } from 'drizzle-orm'
import { prepared } from '../../../db/prepared.ts'
import { SPECIES } from '../../../db/reference/species.ts'
import { animals, environments } from '../../../db/schema/index.ts'
import type { Deps } from '../../deps.ts'
import { toPage } from '../../http/cursor.ts'
import { ApiError, type FieldError } from '../../http/errors.ts'
import { requireMatch } from '../../http/etag.ts'
import { mergePatch } from '../../http/merge-patch.ts'
import { newId } from '../../ids.ts'
import { atOrAfter, equals, hasTag, search } from '../../records/filters.ts'
import { listPage } from '../../records/list.ts'
import { presentRow } from '../../records/rows.ts'
import { appendEvent, type Executor } from '../../webhooks/outbox.ts'
import { speciesError } from '../../records/rules.ts'
import type { AnimalListQuery } from './queries.ts'

export type AnimalRow = typeof animals.$inferSelect

/** The fields a client writes; everything else (id, weight, timestamps) the service keeps. */
export type AnimalFields = Pick<AnimalRow,
  'name' | 'reference_id' | 'species_id' | 'sex' | 'status' | 'morph' | 'traits' | 'birth_date' | 'acquired_date' |
  'environment_id' | 'dam_id' | 'sire_id' | 'tags' | 'notes' | 'metadata'>

const WRITABLE: readonly (keyof AnimalFields)[] = [
  'name', 'reference_id', 'species_id', 'sex', 'status', 'morph', 'traits', 'birth_date', 'acquired_date',
  'environment_id', 'dam_id', 'sire_id', 'tags', 'notes', 'metadata',
]
const EMPTY: Omit<AnimalFields, 'name' | 'species_id'> = {
  reference_id: null, sex: 'unknown', status: 'active', morph: null, traits: [], birth_date: null, acquired_date: null,
  environment_id: null, dam_id: null, sire_id: null, tags: [], notes: null, metadata: {},
}
const MAX_METADATA_KEYS = 50
const speciesById = new Map(SPECIES.map((s) => [s.id, s]))

export const presentAnimal = (row: AnimalRow) => presentRow(row)

const live = (accountId: string) => and(eq(animals.account_id, accountId), isNull(animals.deleted_at))

const p = sql.placeholder
const byId = () => and(eq(animals.account_id, p('account')), isNull(animals.deleted_at), eq(animals.id, p('id')))
const animalById = prepared('animals:get', (db) => db.select().from(animals).where(byId()))
const animalByIdLocked = prepared('animals:get-for-update', (db) => db.select().from(animals).where(byId()).for('update'))

export async function getAnimal(db: Executor, accountId: string, id: string, lock = false): Promise<AnimalRow | undefined> {
  const [row] = await (lock ? animalByIdLocked : animalById)(db, { account: accountId, id })
  return row
}

/** Checks what the schema cannot: known species, and references to records of this account that exist. */
async function checkFields(db: Executor, accountId: string, fields: AnimalFields, selfId?: string): Promise<void> {
  const errors: FieldError[] = []
  const unknownSpecies = speciesError(fields.species_id, '/body/species_id')
  if (unknownSpecies) errors.push(unknownSpecies)
  if (Object.keys(fields.metadata).length > MAX_METADATA_KEYS) errors.push({ path: '/body/metadata', message: `may hold at most ${MAX_METADATA_KEYS} keys` })
  if (fields.environment_id) {
    const [env] = await db.select({ id: environments.id }).from(environments).where(and(eq(environments.account_id, accountId), eq(environments.id, fields.environment_id)))
    if (!env) errors.push({ path: '/body/environment_id', message: 'is not an environment of this account' })
  }
  const parents = (['dam_id', 'sire_id'] as const).filter((field) => fields[field])
  if (parents.length) {
    const ids = parents.map((field) => fields[field]!)
    const found = new Set((await db.select({ id: animals.id }).from(animals).where(and(live(accountId), inArray(animals.id, ids)))).map((r) => r.id))
    for (const field of parents) {
      const id = fields[field]!
      if (id === selfId) errors.push({ path: `/body/${field}`, message: 'cannot be the animal itself' })
      else if (!found.has(id)) errors.push({ path: `/body/${field}`, message: 'is not an animal of this account' })
    }
    if (fields.dam_id && fields.dam_id === fields.sire_id) errors.push({ path: '/body/sire_id', message: 'cannot be the same animal as dam_id' })
  }
  if (errors.length) throw new ApiError('validation_failed', 'Some fields refer to things that do not exist.', { errors })
}


export function listAnimals(deps: Pick<Deps, 'cursors' | 'database'>, accountId: string, query: AnimalListQuery) {
  const { limit, cursor, ...filters } = query
  return listPage(deps, {
    list: 'animals', accountId, table: animals, filters, limit, cursor,
    conditions: (f) => [
      isNull(animals.deleted_at),
      equals(animals.species_id, f.species_id),
      equals(animals.status, f.status),
      equals(animals.sex, f.sex),
      equals(animals.environment_id, f.environment_id),
      hasTag(animals.tags, f.tag),
      search(f.q, animals.name, animals.reference_id),
      atOrAfter(animals.updated_at, f.updated_since),
    ],
  }, presentAnimal)
}

export async function createAnimal(deps: Pick<Deps, 'database'>, accountId: string, input: Partial<AnimalFields> & Pick<AnimalFields, 'name' | 'species_id'>): Promise<AnimalRow> {
  const fields: AnimalFields = { ...EMPTY, ...input }
  return deps.database.db.transaction(async (tx) => {
    await checkFields(tx, accountId, fields)
    const [row] = await tx.insert(animals).values({ id: newId('animal'), account_id: accountId, ...fields }).returning()
    await appendEvent(tx, accountId, 'animal.created', presentAnimal(row!))
    return row!
  })
}

/** Applies a JSON merge patch; `ifMatch` (when sent) must name the current version. */
export async function updateAnimal(deps: Pick<Deps, 'database'>, accountId: string, id: string, patch: Record<string, unknown>, ifMatch: string | null): Promise<AnimalRow> {
  return deps.database.db.transaction(async (tx) => {
    // Locked so the version we check is the version we replace.
    const current = await getAnimal(tx, accountId, id, true)
    if (!current) throw new ApiError('not_found', 'No such animal.')
    requireMatch(ifMatch, current.version)
    const before = Object.fromEntries(WRITABLE.map((field) => [field, current[field]]))
    // A removed member falls back to its empty value: null, or [] and {} for lists and maps.
    const fields = { ...EMPTY, ...(mergePatch(before, patch) as object) } as AnimalFields
    const changed = WRITABLE.filter((field) => JSON.stringify(fields[field]) !== JSON.stringify(current[field]))
    if (!changed.length) return current
    await checkFields(tx, accountId, fields, id)
    const [row] = await tx.update(animals)
      .set({ ...Object.fromEntries(changed.map((field) => [field, fields[field]])), version: current.version + 1, updated_at: new Date().toISOString() })
      .where(eq(animals.id, id)).returning()
    await appendEvent(tx, accountId, 'animal.updated', presentAnimal(row!), presentRow(Object.fromEntries(changed.map((f) => [f, current[f]]))))
    return row!
  })
}

/** Soft delete: gone from the API, kept in storage. */
export async function deleteAnimal(deps: Pick<Deps, 'database'>, accountId: string, id: string, ifMatch: string | null): Promise<void> {
  await deps.database.db.transaction(async (tx) => {
    const current = await getAnimal(tx, accountId, id, true)
    if (!current) throw new ApiError('not_found', 'No such animal.')
    requireMatch(ifMatch, current.version)
    const [row] = await tx.update(animals).set({ deleted_at: new Date().toISOString(), updated_at: new Date().toISOString(), version: current.version + 1 }).where(eq(animals.id, id)).returning()
    await appendEvent(tx, accountId, 'animal.deleted', presentAnimal(row!))
  })
}

/**
 * A weighing as the animal's latest weight, unless a later one is recorded: the row locked, checked and updated
 * in one statement, which also returns the old values for the event's previous_attributes. The lock is FOR NO
 * KEY UPDATE (what the update itself takes): FOR UPDATE would wait on the key-share lock that a concurrent
 * weighing's activity insert holds on the same animal (its foreign key), while that one waits on ours: a deadlock.
 */
const weighAnimal = prepared('animals:weigh', (db) => {
  const old = db.$with('old').as(db.select({ id: animals.id, weight_grams: animals.weight_grams, weighed_at: animals.weighed_at }).from(animals)
    .where(and(byId(), sql`(${animals.weighed_at} is null or ${animals.weighed_at} < ${p('at')}::timestamptz
      or (${animals.weighed_at} = ${p('at')}::timestamptz and ${animals.weight_grams} is distinct from ${p('grams')}::float8))`)).for('no key update'))
  return db.with(old).update(animals)
    .set({ weight_grams: sql`${p('grams')}::float8`, weighed_at: sql`${p('at')}::timestamptz`, version: sql`${animals.version} + 1`, updated_at: sql`now()` })
    .from(old).where(eq(animals.id, old.id))
    .returning({ ...getTableColumns(animals), old_weight_grams: old.weight_grams, old_weighed_at: old.weighed_at })
})

/**
 * The latest-weight rule, in its two forms: a weighing becomes the animal's latest weight unless a later one is
 * already recorded; one at the same instant replaces it if its weight differs (the same weighing again changes
 * nothing, so a restore imports without touching versions). recordWeight serves POST /activities (one weighing, with
 * its animal.updated event); recordWeights the importer (many at once, no events, as imports send none).
 */
export async function recordWeight(tx: Executor, accountId: string, animalId: string, grams: number, at: Date): Promise<void> {
  const [row] = await weighAnimal(tx, { account: accountId, id: animalId, grams, at: at.toISOString() })
  if (!row) return
  const { old_weight_grams, old_weighed_at, ...animal } = row
  await appendEvent(tx, accountId, 'animal.updated', presentAnimal(animal), presentRow({ weight_grams: old_weight_grams, weighed_at: old_weighed_at }))
}

const WEIGHTS_PER_STATEMENT = 500

export async function recordWeights(tx: Executor, accountId: string, weighings: readonly { animalId: string; grams: number; at: number }[]): Promise<void> {
  const newest = new Map<string, { grams: number; at: number }>()
  for (const { animalId, grams, at } of weighings) {
    const current = newest.get(animalId)
    if (!current || current.at <= at) newest.set(animalId, { grams, at })
  }
  const list = [...newest]
  for (let i = 0; i < list.length; i += WEIGHTS_PER_STATEMENT) {
    const batch = sql.join(list.slice(i, i + WEIGHTS_PER_STATEMENT).map(([id, w]) => sql`(${id}, ${w.grams}::float8, ${new Date(w.at).toISOString()}::timestamptz)`), sql`, `)
    await tx.execute(sql`
      update ${animals} set weight_grams = w.grams, weighed_at = w.at, version = ${animals.version} + 1, updated_at = now()
      from (values ${batch}) as w(id, grams, at)
      where ${animals.account_id} = ${accountId} and ${animals.id} = w.id and ${animals.deleted_at} is null
        and (${animals.weighed_at} is null or ${animals.weighed_at} < w.at
          or (${animals.weighed_at} = w.at and ${animals.weight_grams} is distinct from w.grams))`)
  }
}

/** The species present in the account with how many (undeleted) animals of each, keyset-paged by species id. */
export async function listAnimalTypes(deps: Pick<Deps, 'cursors' | 'database'>, accountId: string, query: { limit?: number; cursor?: string }) {
  const scope = { list: 'animal-types', accountId, filters: {} }
  const limit = query.limit ?? 50
  const after = query.cursor ? String(deps.cursors.decode(scope, query.cursor)[0]) : undefined
  const rows = await deps.database.db.select({ species_id: animals.species_id, count: count() }).from(animals)
    .where(and(live(accountId), after ? gt(animals.species_id, after) : undefined))
    .groupBy(animals.species_id).orderBy(asc(animals.species_id)).limit(limit + 1)
  return toPage(rows, limit, deps.cursors, scope, (r) => [r.species_id], (r) => {
    const species = speciesById.get(r.species_id)
    return { species_id: r.species_id, scientific_name: species?.scientific_name ?? null, common_name: species?.common_name ?? null, count: r.count }
  })
}
