import { eq, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { accounts, apiKeys, type Plan } from '../../db/schema/index.ts'
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

interface CacheEntry { principal: Principal; cachedAt: number; lastTouchedAt: number }

const INVALIDATION_CHANNEL = 'auth:invalidate'
/** last_used_at is a hint for humans, so it is written at most once a minute per key, off the request path. */
const TOUCH_INTERVAL_MS = 60_000

/**
 * Verifies tokens with an in-memory cache so the hot path pays no database round trip. Revocations and
 * account changes are pushed to every process through the shared store; the TTL is only a backstop.
 */
export class Authenticator {
  private readonly cache = new Map<string, CacheEntry>()
  private readonly loading = new Map<string, Promise<Principal | undefined>>()
  /** Bumped on every invalidation, so a lookup that raced with one does not cache what it read. */
  private generation = 0

  constructor(private readonly db: Db, private readonly shared: SharedStore, private readonly ttlMs: number) {}

  async start(): Promise<void> {
    await this.shared.subscribe(INVALIDATION_CHANNEL, (message) => this.applyInvalidation(message))
  }

  /** The principal for a token, or undefined if it is malformed, unknown, revoked or expired. */
  async verify(token: string): Promise<Principal | undefined> {
    if (parseToken(token) === undefined) return undefined
    const tokenHash = hashToken(token)
    const now = Date.now()
    const hit = this.cache.get(tokenHash)
    let principal: Principal | undefined
    if (hit && now - hit.cachedAt < this.ttlMs) {
      principal = hit.principal
      if (now - hit.lastTouchedAt > TOUCH_INTERVAL_MS) { hit.lastTouchedAt = now; this.touch(principal.keyId) }
    } else {
      principal = await this.load(tokenHash)
    }
    if (principal && principal.expiresAt !== null && principal.expiresAt <= now) return undefined
    return principal
  }

  /** Tells every process to forget a key (revoked or deleted). */
  async invalidateKey(tokenHash: string): Promise<void> {
    await this.shared.publish(INVALIDATION_CHANNEL, `key:${tokenHash}`)
  }

  /** Tells every process to re-read an account's keys (plan or allowlist changed). */
  async invalidateAccount(accountId: string): Promise<void> {
    await this.shared.publish(INVALIDATION_CHANNEL, `account:${accountId}`)
  }

  private applyInvalidation(message: string) {
    this.generation++
    const [kind, value] = [message.slice(0, message.indexOf(':')), message.slice(message.indexOf(':') + 1)]
    if (kind === 'key') this.cache.delete(value)
    else if (kind === 'account') {
      for (const [hash, entry] of this.cache) if (entry.principal.accountId === value) this.cache.delete(hash)
    }
  }

  private load(tokenHash: string): Promise<Principal | undefined> {
    // Concurrent first requests with one key share a single database read.
    let pending = this.loading.get(tokenHash)
    if (!pending) {
      const generation = this.generation
      pending = this.read(tokenHash).then((principal) => {
        if (principal && generation === this.generation) {
          const now = Date.now()
          this.cache.set(tokenHash, { principal, cachedAt: now, lastTouchedAt: now })
          this.touch(principal.keyId)
        }
        return principal
      }).finally(() => this.loading.delete(tokenHash))
      this.loading.set(tokenHash, pending)
    }
    return pending
  }

  private async read(tokenHash: string): Promise<Principal | undefined> {
    const [row] = await this.db.select({
      keyId: apiKeys.id, accountId: apiKeys.accountId, kind: apiKeys.kind, scopes: apiKeys.scopes,
      deviceId: apiKeys.deviceId, expiresAt: apiKeys.expiresAt, revokedAt: apiKeys.revokedAt,
      plan: accounts.plan, liveTestAllowlisted: accounts.liveTestAllowlisted,
    }).from(apiKeys).innerJoin(accounts, eq(accounts.id, apiKeys.accountId)).where(eq(apiKeys.tokenHash, tokenHash))
    if (!row || row.revokedAt) return undefined
    return {
      keyId: row.keyId, accountId: row.accountId, kind: row.kind, scopes: row.scopes, deviceId: row.deviceId,
      plan: row.plan, liveTestAllowlisted: row.liveTestAllowlisted, expiresAt: row.expiresAt?.getTime() ?? null,
    }
  }

  private touch(keyId: string) {
    this.db.update(apiKeys).set({ lastUsedAt: sql`now()` }).where(eq(apiKeys.id, keyId))
      .catch(() => { /* a missed last_used_at update is harmless; the next one will land */ })
  }
}
