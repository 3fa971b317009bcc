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
   * Entries that keep each thing's newest version (ingest/kept-latest.ts: each series' newest reading), held as
   * `${order} ${tag} ${value}`: `order` a finite number (a time), `tag` a word saying who vouches for it (a
   * generation), or a claim (a word starting with `?`) while a reader finds it out. getMany reads them as held.
   * Every call is one round trip, atomic per key; keys expire `ttlMs` after they were last set. Keys of one thing's
   * variants (a channel's series) share a group, joined when claimed or raised.
   *
   * claimEntries: every key not tagged `keep` is set to order -1 under `claim` (taken over from any other claim).
   */
  claimEntries(entries: readonly ClaimedEntry[], claim: string, keep: string, ttlMs: number): Promise<void>
  /**
   * raiseEntries: every key held at an order up to the entry's takes the entry's order and value, keeping its tag; a
   * key not held stays absent. First, the entry's other keys of its group are removed where they hold an order from
   * its `takenFrom` to its own, or are under a claim (see RaisedEntry).
   */
  raiseEntries(entries: readonly RaisedEntry[], ttlMs: number): Promise<void>
  /**
   * settleEntries: every key still under `claim` is tagged `tag`, at the greater of its order and the entry's (with
   * that one's value); an entry without an order removes it. Keys under another claim, or none, are left.
   */
  settleEntries(entries: readonly SettledEntry[], claim: string, tag: string, ttlMs: number): Promise<void>
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

/** A key to claim, and its group. */
export type ClaimedEntry = readonly [key: string, group: string]
/**
 * A key to raise. `takenFrom`: the entry took over the orders from `takenFrom` to `order` from whichever of its
 * group held them (a reading stored again under its channel's new mapping replaces the one stored at its time under
 * the old), so another key of the group holding one of them is removed, and so is one under a claim (its reader may
 * meet one of them).
 */
export type RaisedEntry = readonly [key: string, order: number, value: string, group: string, takenFrom: number]
/** What a reader found for a key it claimed: an order and value, or no order where it found nothing certain. */
export type SettledEntry = readonly [key: string, order: number | undefined, value: string]
