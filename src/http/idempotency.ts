// Idempotency-Key on POST /activities (CONTRACT §5), after svix's design: take a lock first, then store the
// finished response. Redis (or its in-process twin) holds the lock and a cached copy of the response; Postgres
// holds the response in the same transaction as the write, under a primary key on (account, key), so a retry
// can never write twice even if Redis has lost everything.
import { createHash } from 'node:crypto'
import { and, eq, gte, lt, sql } from 'drizzle-orm'
import { idempotencyKeys } from '../../db/schema/index.ts'
import type { Deps } from '../deps.ts'
import type { Executor } from '../webhooks/outbox.ts'
import { canonical } from './cursor.ts'
import { ApiError, problemBody } from './errors.ts'

export const IDEMPOTENCY_RETENTION_MS = 24 * 3600 * 1000
/** Longer than any write can take; a crashed holder's lock frees itself after this. */
const LOCK_TTL_MS = 30_000

export interface StoredResponse { fingerprint: string; status: number; body: string }
export interface Outcome { status: number; body: string }

/** Outcomes worth replaying: everything but server errors and rate limiting, which a retry may well fix. */
const storable = (status: number) => status < 500 && status !== 429

export function fingerprintOf(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${canonical(body)}`).digest('base64url')
}

interface DriverError { code?: string; constraint?: string; constraint_name?: string; cause?: DriverError }

/** Whether the error is our key's primary key refusing a second write (postgres.js and PGlite name fields apart). */
function isKeyTaken(error: unknown): boolean {
  const e = ((error as DriverError | undefined)?.cause ?? error) as DriverError | undefined
  return e?.code === '23505' && (e.constraint_name ?? e.constraint) === 'idempotency_keys_account_id_key_pk'
}

export interface IdempotentRequest {
  accountId: string
  key: string
  fingerprint: string
  requestId: string
  /** The request's URL, against which a stored problem's `type` is made absolute. */
  url: string
}

export interface IdempotentResult extends Outcome { replayed: boolean }

/**
 * Runs `perform` at most once per (account, key) within the retention window. `perform` writes through the
 * transaction it is given and returns the response to send; an ApiError it throws below 500 (other than 429)
 * is stored and replayed like a success.
 */
export async function runIdempotent(deps: Deps, request: IdempotentRequest, perform: (tx: Executor) => Promise<Outcome>): Promise<IdempotentResult> {
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
    const loadStored = async (): Promise<StoredResponse | undefined> => {
      const [row] = await db.select({ fingerprint: idempotencyKeys.fingerprint, status: idempotencyKeys.status, body: idempotencyKeys.body })
        .from(idempotencyKeys)
        .where(and(eq(idempotencyKeys.account_id, accountId), eq(idempotencyKeys.key, key),
          gte(idempotencyKeys.created_at, new Date(Date.now() - IDEMPOTENCY_RETENTION_MS))))
      return row
    }
    const replayStored = async () => {
      const stored = await loadStored()
      if (!stored) throw new Error('idempotency key conflict without a stored response')
      await remember(stored)
      return fromStore(stored)
    }

    // Redis may have lost the cached response (eviction, FLUSHALL, failover); Postgres has not.
    const earlier = await loadStored()
    if (earlier) { await remember(earlier); return fromStore(earlier) }

    let outcome: Outcome
    try {
      outcome = await db.transaction(async (tx) => {
        // A key past its retention window may be used again.
        await tx.delete(idempotencyKeys).where(and(eq(idempotencyKeys.account_id, accountId), eq(idempotencyKeys.key, key),
          lt(idempotencyKeys.created_at, new Date(Date.now() - IDEMPOTENCY_RETENTION_MS))))
        // Claim the key before doing the work: a concurrent writer that lost its Redis lock blocks here on the
        // primary key until we commit, then replays our response instead of writing.
        await tx.insert(idempotencyKeys).values({ account_id: accountId, key, fingerprint, status: 0, body: '' })
        const result = await perform(tx)
        const keyRow = and(eq(idempotencyKeys.account_id, accountId), eq(idempotencyKeys.key, key))
        if (storable(result.status)) await tx.update(idempotencyKeys).set(result).where(keyRow)
        else await tx.delete(idempotencyKeys).where(keyRow)
        return result
      })
    } catch (error) {
      // Another process wrote this key while our lock was lost: its write stands, ours rolled back.
      if (isKeyTaken(error)) return await replayStored()
      if (!(error instanceof ApiError) || !storable(error.status)) throw error
      outcome = { status: error.status, body: JSON.stringify(problemBody(error.code, error.detail, request.requestId, request.url, error.extra.errors, error.extra.fields)) }
      const inserted = await db.insert(idempotencyKeys).values({ account_id: accountId, key, fingerprint, ...outcome })
        .onConflictDoNothing().returning({ key: idempotencyKeys.key })
      if (!inserted.length) return await replayStored()
    }
    if (storable(outcome.status)) await remember({ fingerprint, ...outcome })
    return { ...outcome, replayed: false }
  } finally {
    await deps.shared.release(lockKey, lock)
  }
}

/** Drops stored responses past the retention window (run periodically). */
export async function purgeExpiredIdempotencyKeys(deps: Deps): Promise<void> {
  await deps.database.db.delete(idempotencyKeys).where(lt(idempotencyKeys.created_at, sql`now() - interval '24 hours'`))
}
