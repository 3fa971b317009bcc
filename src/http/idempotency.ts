// Idempotency-Key on POST /activities (CONTRACT §5), after svix's design: take a lock first, then store the
// finished response. Redis (or its in-process twin) holds the lock and a cached copy of the response; Postgres
// holds the response in the same transaction as the write, under a primary key on (account, key), so a retry
// can never write twice even if Redis has lost everything.
import { createHash } from 'node:crypto'
import { and, eq, gte, lt, sql } from 'drizzle-orm'
import { t } from 'elysia'
import { prepared } from '../../db/prepared.ts'
import { idempotencyKeys } from '../../db/schema/index.ts'
import type { InTransaction } from '../../db/transaction.ts'
import type { Deps } from '../deps.ts'
import { canonical } from './cursor.ts'
import { ApiError, problemBody } from './errors.ts'
import { versionOf, withVersion } from './declared-response.ts'
import { requestState } from './request-state.ts'
import { pathOf } from './request-url.ts'
import type { Principal } from '../auth/authenticator.ts'

export const IDEMPOTENCY_RETENTION_MS = 24 * 3600 * 1000
/** Longer than any write can take; a crashed holder's lock frees itself after this. */
const LOCK_TTL_MS = 30_000

export interface StoredResponse { fingerprint: string; status: number; body: string }
export interface Outcome { status: number; body: string }

/** Outcomes worth replaying: everything but server errors and rate limiting, which a retry may well fix. */
const storable = (status: number) => status < 500 && status !== 429

function fingerprintOf(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${canonical(body)}`).digest('base64url')
}

const p = sql.placeholder
const keyRow = () => and(eq(idempotencyKeys.account_id, p('account')), eq(idempotencyKeys.key, p('key')))
/** The stored response, if the key was used within the retention window. */
const storedResponse = prepared('idempotency:stored', (db) => db.select({ fingerprint: idempotencyKeys.fingerprint, status: idempotencyKeys.status, body: idempotencyKeys.body })
  .from(idempotencyKeys).where(and(keyRow(), gte(idempotencyKeys.created_at, sql`${p('since')}::timestamptz`))))
/**
 * Claims the key in one statement: a new key is inserted, a key past its retention window is taken over, and a
 * live key (or one a concurrent writer holds: the primary key makes us wait for its commit) returns no row.
 */
const claimKey = prepared('idempotency:claim', (db) => db.insert(idempotencyKeys)
  .values({ account_id: p('account'), key: p('key'), fingerprint: p('fingerprint'), status: 0, body: '' })
  .onConflictDoUpdate({
    target: [idempotencyKeys.account_id, idempotencyKeys.key],
    set: { fingerprint: sql`excluded.fingerprint`, status: 0, body: '', created_at: sql`now()` },
    setWhere: lt(idempotencyKeys.created_at, sql`${p('since')}::timestamptz`),
  })
  .returning({ key: idempotencyKeys.key }))
const storeResponse = prepared('idempotency:store', (db) => db.update(idempotencyKeys)
  .set({ status: sql`${p('status')}::int`, body: sql`${p('body')}::text` }).where(keyRow()))
const forgetKey = prepared('idempotency:forget', (db) => db.delete(idempotencyKeys).where(keyRow()))
/** A refusal thrown by the handler (its write rolled back), stored unless the key was taken meanwhile. */
const storeRefusal = prepared('idempotency:store-refusal', (db) => db.insert(idempotencyKeys)
  .values({ account_id: p('account'), key: p('key'), fingerprint: p('fingerprint'), status: sql`${p('status')}::int`, body: sql`${p('body')}::text` })
  .onConflictDoNothing().returning({ key: idempotencyKeys.key }))

/** Thrown inside the write's transaction when the key is live: the transaction rolls back and the response replays. */
class KeyTaken extends Error {}

export interface IdempotentRequest {
  accountId: string
  key: string
  fingerprint: string
  requestId: string
}

export interface IdempotentResult extends Outcome { replayed: boolean }

/**
 * Runs `perform` at most once per (account, key) within the retention window. `perform` opens its transaction with
 * the `within` it is given (the service owns its transaction; this wraps it), which claims the key first and stores
 * the response `perform`'s work returns before committing; an ApiError it throws below 500 (other than 429) is
 * stored and replayed like a success.
 */
export async function runIdempotent(deps: Pick<Deps, 'config' | 'database' | 'shared'>, request: IdempotentRequest, perform: (within: InTransaction<Outcome>) => Promise<Outcome>): Promise<IdempotentResult> {
  const { accountId, key, fingerprint } = request
  const db = deps.database.db
  const cacheKey = `idem:${accountId}:${key}`
  const fromStore = (stored: StoredResponse): IdempotentResult => {
    if (stored.fingerprint !== fingerprint) {
      throw new ApiError('idempotency_key_mismatch', 'This Idempotency-Key was used with a different request; use a new key for a new request.')
    }
    return { status: stored.status, body: stored.body, replayed: true }
  }

  const cached = await deps.shared.get(cacheKey)
  if (cached) return fromStore(JSON.parse(cached))

  const lockKey = `idem-lock:${accountId}:${key}`
  const lock = await deps.shared.acquire(lockKey, LOCK_TTL_MS)
  if (!lock) throw new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress; retry after it finishes.')
  try {
    const remember = async (stored: StoredResponse) => {
      await deps.shared.set(cacheKey, JSON.stringify(stored), IDEMPOTENCY_RETENTION_MS)
    }
    const row = { account: accountId, key }
    const since = () => new Date(Date.now() - IDEMPOTENCY_RETENTION_MS).toISOString()
    const replayStored = async () => {
      const [stored] = await storedResponse(db, { ...row, since: since() })
      if (!stored) throw new Error('idempotency key conflict without a stored response')
      await remember(stored)
      return fromStore(stored)
    }

    // Redis may have lost the cached response (eviction, FLUSHALL, failover); Postgres has not: a live key's
    // claim returns nothing, and its stored response replays.
    let outcome: Outcome
    try {
      outcome = await perform((work) => db.transaction(async (tx) => {
        // Claim the key before doing the work: a concurrent writer that lost its Redis lock blocks here on the
        // primary key until we commit, then replays our response instead of writing.
        if (!(await claimKey(tx, { ...row, fingerprint, since: since() })).length) throw new KeyTaken()
        const result = await work(tx)
        if (storable(result.status)) await storeResponse(tx, { ...row, status: result.status, body: result.body })
        else await forgetKey(tx, row)
        return result
      }))
    } catch (error) {
      // The key is live, or another process wrote it while our lock was lost: its write stands, ours rolled back.
      if (error instanceof KeyTaken) return await replayStored()
      if (!(error instanceof ApiError) || !storable(error.status)) throw error
      outcome = { status: error.status, body: JSON.stringify(problemBody(error.code, error.detail, request.requestId, deps.config.publicUrl, error.extra.errors, error.extra.fields)) }
      const inserted = await storeRefusal(db, { ...row, fingerprint, ...outcome })
      if (!inserted.length) return await replayStored()
    }
    if (storable(outcome.status)) await remember({ fingerprint, ...outcome })
    return { ...outcome, replayed: false }
  } finally {
    await deps.shared.release(lockKey, lock)
  }
}

/** Drops stored responses past the retention window (run periodically). */
export async function purgeExpiredIdempotencyKeys(deps: Pick<Deps, 'database'>): Promise<void> {
  await deps.database.db.delete(idempotencyKeys).where(lt(idempotencyKeys.created_at, sql`now() - interval '24 hours'`))
}

/** The request header of a create that honours Idempotency-Key. */
export const IdempotencyHeaders = t.Object({
  'idempotency-key': t.Optional(t.String({
    minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$', examples: ['3f2c9a4e-7b1d-4c55-9e0a-2d6f1b8c7e41'],
    description: 'Makes a retry safe: within 24 h the same key returns the first response (with `Idempotent-Replayed: true`) instead of writing again; the same key with a different body is 422, and while the first request is still running 409.',
  })),
})

/** An idempotent operation creates a record, and a new record is at version 1: a replay names that version's ETag, as the first answer did. */
const CREATED_VERSION = 1

/** What `writeOnce` needs of the route's context (Elysia's, as the handler received it). */
export interface CreateContext {
  request: Request
  /** The caller (the route declares `principal: true`). */
  principal: Principal
  set: { status?: number | string }
  headers: { 'idempotency-key'?: string }
  body: unknown
}

/**
 * Answers a create that declares `op({ idempotent: true })`: `perform` calls the service, which writes in the
 * transaction `within` opens (a plain one, or, when the request carries an Idempotency-Key, one that also claims the
 * key and stores the answer); `present` turns the new row into the record as the API shows it (`versioned(…)` when
 * the route also declares etag). It runs at most once per key. A replay answers the stored bytes; the app's hook
 * (declared-response.ts) marks it with Idempotent-Replayed and, on an etag route, the ETag of the version the create
 * made. A stored refusal (4xx) answers as the problem it was.
 */
export async function writeOnce<Row, Out extends object>(deps: Pick<Deps, 'config' | 'database' | 'shared'>, context: CreateContext, perform: (within: InTransaction<Row>) => Promise<Row>, present: (row: Row) => Out): Promise<Out | Response> {
  const { request, principal, set, headers, body } = context
  const state = requestState(request)
  const route = state.route
  if (!route?.policy.idempotent) throw new Error(`${route?.method} ${route?.path}: answers through writeOnce() but does not declare idempotent`)
  let created: Out | undefined
  const answer = (row: Row): Outcome => {
    created = present(row)
    const version = versionOf(created)
    if (version !== undefined && version !== CREATED_VERSION) throw new Error(`a create answered version ${version}; a replay would name version ${CREATED_VERSION}`)
    return { status: 201, body: JSON.stringify(created) }
  }
  const key = headers['idempotency-key']
  const result = key === undefined
    ? { ...answer(await perform((work) => deps.database.db.transaction(work))), replayed: false }
    // The service's work runs inside the idempotent transaction; its answer is made there, to be stored with it.
    : await runIdempotent(deps, { accountId: principal.accountId, key, fingerprint: fingerprintOf('POST', pathOf(request.url), body), requestId: state.requestId },
      async (within) => {
        let row!: Row
        let outcome!: Outcome
        await perform((work) => within(async (tx) => { row = await work(tx); return (outcome = answer(row)) }).then(() => row))
        return outcome
      })
  state.idempotency = result.replayed ? 'replayed' : 'fresh'
  set.status = result.status
  if (!result.replayed && created) return created
  // A replay (and a refusal) answers the stored bytes as they are: the first answer, whatever the schemas say now.
  const stored = new Response(result.body, { status: result.status, headers: { 'content-type': result.status >= 400 ? 'application/problem+json' : 'application/json' } })
  return route.policy.etag && result.status < 400 ? withVersion(stored, CREATED_VERSION) : stored
}
