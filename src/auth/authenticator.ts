import { eq, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { prepared } from '../../db/prepared.ts'
import { accounts, apiKeys, type Plan } from '../../db/schema/index.ts'
import { AUTH_CHANNEL } from '../kv/channels.ts'
import type { SharedStore } from '../kv/interface.ts'
import { hashToken, parseToken, type TokenKind } from '../tokens.ts'

/** Who is calling: a verified key and what its account may do. */
export interface Principal {
  readonly keyId: string
  readonly accountId: string
  readonly kind: TokenKind
  readonly scopes: readonly string[]
  readonly deviceId: string | null
  readonly plan: Plan
  readonly liveTestAllowlisted: boolean
  /** Epoch ms, or null for keys that never expire. */
  readonly expiresAt: number | null
}

interface CacheEntry { principal: Principal; tokenHash: string; cachedAt: number; lastTouchedAt: number }

/** last_used_at is a hint for humans, so it is written at most once a minute per key, off the request path… */
const TOUCH_INTERVAL_MS = 60_000
/** …and the keys used within this window are written together. */
const TOUCH_BATCH_MS = 200

/**
 * Keys and their accounts by the tokens' hashes: the query uncached keys run, many at once. After a restart (or on a
 * new node) every device reconnects with a key not in the cache; one query per key saturated the pool and the
 * queries left waiting were cancelled (db/client.ts' start deadline), which refused devices at CONNECT.
 */
const keysByHash = prepared('api-keys:by-hashes', (db) => db.select({
  tokenHash: apiKeys.tokenHash, keyId: apiKeys.id, accountId: apiKeys.accountId, kind: apiKeys.kind, scopes: apiKeys.scopes,
  deviceId: apiKeys.deviceId, expiresAt: apiKeys.expiresAt, revokedAt: apiKeys.revokedAt,
  plan: accounts.plan, liveTestAllowlisted: accounts.liveTestAllowlisted,
}).from(apiKeys).innerJoin(accounts, eq(accounts.id, apiKeys.accountId)).where(sql`${apiKeys.tokenHash} = any(${sql.placeholder('tokenHashes')}::text[])`))

const touchKeys = prepared('api-keys:touch', (db) => db.update(apiKeys).set({ lastUsedAt: sql`now()` }).where(sql`${apiKeys.id} = any(${sql.placeholder('keyIds')}::text[])`))

/** Key reads in flight at once: the rest wait and go together in the next query (a burst costs a few queries). */
const MAX_READS_IN_FLIGHT = 2
/** Keys per query: a storm of 10,000 new keys is 20 queries. */
const MAX_KEYS_PER_READ = 500

interface Waiter { resolve(principal: Principal | undefined): void; reject(error: unknown): void }

/** An expired key is refused whether or not it is cached. */
const live = (principal: Principal, now: number) => (principal.expiresAt !== null && principal.expiresAt <= now ? undefined : principal)

/**
 * Verifies tokens with an in-memory cache so the hot path pays no database round trip. Revocations and
 * account changes are pushed to every process through the shared store; the TTL is only a backstop.
 */
export class Authenticator {
  /**
   * Keyed by the token itself, so a hit costs one map lookup: no checksum, no SHA-256. The token is already in
   * this process's memory for every request that carries it; the database still holds only hashes.
   */
  private readonly cache = new Map<string, CacheEntry>()
  private readonly loading = new Map<string, Promise<Principal | undefined>>()
  /** Bumped on every invalidation, so a lookup that raced with one does not cache what it read. */
  private generation = 0
  /** Key hashes waiting for a read (each awaited by one load), in arrival order, and the reads in flight. */
  private readonly queued = new Map<string, Waiter>()
  private readsInFlight = 0
  /** Keys used since the last write of last_used_at, and the timer that writes them. */
  private readonly touched = new Set<string>()
  private touchTimer: ReturnType<typeof setTimeout> | undefined

  /** `now` (epoch ms) decides expiry and cache age; tests pass their own clock instead of waiting for a key to expire. */
  constructor(private readonly db: Db, private readonly shared: SharedStore, private readonly ttlMs: number, private readonly now: () => number = Date.now) {}

  async start(): Promise<void> {
    await this.shared.subscribe(AUTH_CHANNEL, (message) => this.applyInvalidation(message))
  }

  /**
   * The principal for a token, or undefined if it is malformed, unknown, revoked or expired. A cached token is
   * answered synchronously (the ingest hot path awaits nothing for it); otherwise the key is read from the database.
   */
  verify(token: string): Principal | undefined | Promise<Principal | undefined> {
    const now = this.now()
    const hit = this.cache.get(token)
    if (hit && now - hit.cachedAt < this.ttlMs) {
      if (now - hit.lastTouchedAt > TOUCH_INTERVAL_MS) { hit.lastTouchedAt = now; this.touch(hit.principal.keyId) }
      return live(hit.principal, now)
    }
    if (parseToken(token) === undefined) return undefined
    return this.load(token).then((principal) => principal && live(principal, this.now()))
  }

  /** Tells every process to forget a key (revoked or deleted). */
  async invalidateKey(tokenHash: string): Promise<void> {
    await this.shared.publish(AUTH_CHANNEL, `key:${tokenHash}`)
  }

  /** Tells every process to re-read an account's keys (plan or allowlist changed). */
  async invalidateAccount(accountId: string): Promise<void> {
    await this.shared.publish(AUTH_CHANNEL, `account:${accountId}`)
  }

  private applyInvalidation(message: string) {
    this.generation++
    const [kind, value] = [message.slice(0, message.indexOf(':')), message.slice(message.indexOf(':') + 1)]
    // Invalidations are rare, so walking the cache beats keeping a second index by hash.
    for (const [token, entry] of this.cache) {
      if (kind === 'key' ? entry.tokenHash === value : entry.principal.accountId === value) this.cache.delete(token)
    }
  }

  private load(token: string): Promise<Principal | undefined> {
    // Concurrent first requests with one key share a single database read.
    let pending = this.loading.get(token)
    if (!pending) {
      const generation = this.generation
      const tokenHash = hashToken(token)
      pending = this.read(tokenHash).then((principal) => {
        if (principal && generation === this.generation) {
          const now = this.now()
          this.cache.set(token, { principal, tokenHash, cachedAt: now, lastTouchedAt: now })
          this.touch(principal.keyId)
        }
        return principal
      }).finally(() => this.loading.delete(token))
      this.loading.set(token, pending)
    }
    return pending
  }

  /**
   * One key's principal from the database. Alone it is read at once; while MAX_READS_IN_FLIGHT reads are out, keys
   * queue and the next read takes all of them (up to MAX_KEYS_PER_READ) in one query.
   */
  private read(tokenHash: string): Promise<Principal | undefined> {
    // load() shares one read per token, and a token has one hash: a hash is never queued twice.
    const read = new Promise<Principal | undefined>((resolve, reject) => { this.queued.set(tokenHash, { resolve, reject }) })
    this.readQueued()
    return read
  }

  private readQueued() {
    while (this.readsInFlight < MAX_READS_IN_FLIGHT && this.queued.size) {
      const batch = new Map<string, Waiter>()
      for (const [tokenHash, waiter] of this.queued) {
        if (batch.size === MAX_KEYS_PER_READ) break
        batch.set(tokenHash, waiter)
        this.queued.delete(tokenHash)
      }
      this.readsInFlight++
      this.readKeys([...batch.keys()]).then((rows) => {
        const found = new Map(rows.map((row) => [row.tokenHash, row]))
        for (const [tokenHash, waiter] of batch) {
          const row = found.get(tokenHash)
          waiter.resolve(!row || row.revokedAt ? undefined : {
            keyId: row.keyId, accountId: row.accountId, kind: row.kind, scopes: row.scopes, deviceId: row.deviceId,
            plan: row.plan, liveTestAllowlisted: row.liveTestAllowlisted, expiresAt: row.expiresAt?.getTime() ?? null,
          })
        }
      }, (error) => { for (const waiter of batch.values()) waiter.reject(error) }).finally(() => {
        this.readsInFlight--
        this.readQueued()
      })
    }
  }

  /** One query for many keys (its own method so a test can count the queries a burst costs). */
  private readKeys(tokenHashes: string[]) {
    return keysByHash(this.db, { tokenHashes })
  }

  /**
   * Notes a key as used; the keys noted within TOUCH_BATCH_MS are written in one UPDATE. One UPDATE per key made a
   * reconnect storm of 10,000 devices queue 10,000 writes in the pool ahead of the key and device reads.
   */
  private touch(keyId: string) {
    this.touched.add(keyId)
    if (this.touchTimer) return
    this.touchTimer = setTimeout(() => {
      this.touchTimer = undefined
      const keyIds = [...this.touched]
      this.touched.clear()
      touchKeys(this.db, { keyIds }).catch(() => { /* a missed last_used_at update is harmless; the next one will land */ })
    }, TOUCH_BATCH_MS)
    this.touchTimer.unref?.()
  }

}
