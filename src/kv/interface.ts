// What the service needs from Redis; src/kv/memory.ts is the in-process twin for the embedded mode.
export interface SharedStore {
  readonly kind: 'redis' | 'memory'
  /**
   * Counts one hit in a fixed window that starts at the window's first hit, atomically.
   * Returns the count so far and the milliseconds until the window resets.
   */
  hit(key: string, windowMs: number): Promise<{ count: number; resetMs: number }>
  /**
   * Adds each amount to its counter (a counter expires `ttlMs` after it is created) in one round trip, and
   * returns the new totals in the same order.
   */
  addAll(counts: readonly { key: string; amount: number }[], ttlMs: number): Promise<number[]>
  /** Takes a lock that expires after `ttlMs` unless released; returns its token, or null if someone holds it. */
  acquire(key: string, ttlMs: number): Promise<string | null>
  /** Releases a lock, but only if `token` still holds it (an expired lock may have passed to someone else). */
  release(key: string, token: string): Promise<void>
  /**
   * Takes one of `limit` slots of a counting semaphore (a slot expires after `ttlMs` unless given back, so a
   * process that dies holding one cannot keep it); returns its token, or null while all are taken.
   */
  takeSlot(key: string, limit: number, ttlMs: number): Promise<string | null>
  /** Gives a slot back (a token that already expired, or was never taken here, is ignored). */
  giveSlot(key: string, token: string): Promise<void>
  get(key: string): Promise<string | null>
  set(key: string, value: string, ttlMs: number): Promise<void>
  /** The values of `keys` (null where absent or expired), in their order, in one round trip. */
  getMany(keys: readonly string[]): Promise<(string | null)[]>
  /** Sets every key of `keys` to `value`, each expiring after `ttlMs`, in one round trip. */
  setMany(keys: readonly string[], value: string, ttlMs: number): Promise<void>
  /**
   * For each entry, sets `key` to `${order} ${value}` (expiring after `ttlMs`) unless it holds a greater order (the
   * first word of what it holds), atomically per key, in one round trip: a value that only moves forward, whichever
   * of several writers comes last. With `onlyHeld`, a key not held is left absent. getMany reads it back as stored.
   */
  keepNewest(entries: readonly NewestEntry[], ttlMs: number, onlyHeld?: boolean): Promise<void>
  /**
   * Sends `message` to every subscriber of `channel`. This process's own handlers have run by the time it
   * resolves (read-your-writes); they may see the message a second time, so handlers must be idempotent.
   */
  publish(channel: string, message: string): Promise<void>
  /** Calls `handler` for every message on `channel`, from this or any other process sharing the store. */
  subscribe(channel: string, handler: (message: string) => void): Promise<void>
  ping(): Promise<void>
  close(): Promise<void>
}

/** An entry of SharedStore.keepNewest: `order` a finite number (a time, say). */
export type NewestEntry = readonly [key: string, order: number, value: string]
