// Redis is an accelerator, not a single point of failure. While it is unreachable every operation runs on an
// in-process store instead, and the service goes back to Redis by itself once a probe answers. What degrades
// meanwhile (also said in the OpenAPI description): rate limits count per process; idempotency locks are per
// process, with the Postgres primary key on (account, key) still refusing a second write; revocations and device
// changes reach other processes within KEY_CACHE_TTL_MS instead of at once (this process applies them at once).
import { randomUUID } from 'node:crypto'
import type { Logger } from '../log.ts'
import type { SharedStore } from './interface.ts'

export interface FallbackOptions {
  /** How often a probe asks the primary whether it is back. */
  probeMs: number
  log: Pick<Logger, 'warn' | 'info'>
}

export interface FallbackStore extends SharedStore {
  /** Whether operations currently go to the primary (Redis). */
  readonly primaryUp: boolean
}

export function withFallback(primary: SharedStore, fallback: SharedStore, options: FallbackOptions): FallbackStore {
  let up = true
  let probe: ReturnType<typeof setInterval> | undefined

  const markDown = (error: unknown) => {
    if (!up) return
    up = false
    options.log.warn('shared store unreachable: using the in-process store until it answers again', { store: primary.kind, error: String(error) })
    probe = setInterval(() => {
      primary.ping().then(() => {
        if (up) return
        up = true
        clearInterval(probe)
        probe = undefined
        options.log.info('shared store reachable again', { store: primary.kind })
      }, () => {})
    }, options.probeMs)
    probe.unref?.()
  }

  /** Runs `operation` on the primary while it is up, on the fallback otherwise or when the primary fails now. */
  function route<T>(operation: (store: SharedStore) => Promise<T>): Promise<T> {
    if (!up) return operation(fallback)
    return operation(primary).catch((error) => {
      markDown(error)
      return operation(fallback)
    })
  }

  return {
    kind: primary.kind,
    get primaryUp() { return up },
    hit: (key, windowMs) => route((s) => s.hit(key, windowMs)),
    addAll: (counts, ttlMs) => route((s) => s.addAll(counts, ttlMs)),
    acquire: (key, ttlMs) => route((s) => s.acquire(key, ttlMs)),
    // A lock taken from one store is released in both: the primary may have come back in between (and a token
    // is a random UUID, so releasing it where it was never taken does nothing).
    async release(key, token) {
      await fallback.release(key, token)
      if (up) await primary.release(key, token).catch(markDown)
    },
    takeSlot: (key, limit, ttlMs) => route((s) => s.takeSlot(key, limit, ttlMs)),
    // Given back to both, as a lock is released in both.
    async giveSlot(key, token) {
      await fallback.giveSlot(key, token)
      if (up) await primary.giveSlot(key, token).catch(markDown)
    },
    get: (key) => route((s) => s.get(key)),
    set: (key, value, ttlMs) => route((s) => s.set(key, value, ttlMs)),
    getMany: (keys) => route((s) => s.getMany(keys)),
    setMany: (keys, value, ttlMs) => route((s) => s.setMany(keys, value, ttlMs)),
    claimEntries: (entries, claim, keep, ttlMs) => route((s) => s.claimEntries(entries, claim, keep, ttlMs)),
    raiseEntries: (entries, ttlMs) => route((s) => s.raiseEntries(entries, ttlMs)),
    settleEntries: (entries, claim, tag, ttlMs) => route((s) => s.settleEntries(entries, claim, tag, ttlMs)),
    // Both stores run this process's handlers before sending, so publishing on the fallback still applies the
    // message here; only other processes miss it while the primary is down.
    publish: (channel, message) => route((s) => s.publish(channel, message)),
    async subscribe(channel, handler) {
      await fallback.subscribe(channel, handler)
      // Subscribed even while down: the primary's client re-subscribes by itself when it reconnects.
      await primary.subscribe(channel, handler).catch(markDown)
    },
    ping: () => primary.ping(),
    async close() {
      if (probe) clearInterval(probe)
      await Promise.all([primary.close(), fallback.close()])
    },
  }
}

/** Whether `shared` is reaching its primary now (a store without a fallback always is). */
export const primaryUp = (shared: SharedStore): boolean => (shared as Partial<FallbackStore>).primaryUp !== false

/**
 * For what processes keep from the shared store under an epoch (kept buckets, kept latest values): this process's
 * writes made while its primary was unreachable went to its in-process fallback only, so what others keep misses
 * them. `wrote()` after each such write notes it; `renew()` before the next starts a new epoch at `epochKey` once the
 * primary answers again, so everything kept under the old one is read afresh.
 */
export function epochAfterOutage(shared: SharedStore, epochKey: string, ttlMs: number): { wrote(): void; renew(): Promise<boolean> } {
  let missed = false
  return {
    wrote() { if (!primaryUp(shared)) missed = true },
    async renew() {
      if (!missed || !primaryUp(shared)) return false
      await shared.set(epochKey, randomUUID(), ttlMs)
      if (primaryUp(shared)) missed = false
      return true
    },
  }
}
