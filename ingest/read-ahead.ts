// The next page of a walk through readings, read while the client takes in the page before it: a client walking a
// year of hourly buckets (36 pages of 10,000 rows) otherwise leaves the store idle while each page travels and is
// parsed, then the client idle while the next is read. For a walk already under way (a request that carried a
// cursor), and from the first page of a light bucketed query (ingest/query.ts says why): a first page that is all a
// client wanted then costs a second read only where that read is small.

/** Pages read ahead and not yet asked for, in this process; past this many, no more are started. */
const MAX_PENDING = 16
/** How long a page read ahead waits to be asked for: a page is never older than this when it is sent. */
export const READ_AHEAD_MS = 5_000

export class ReadAhead<T> {
  private readonly pending = new Map<string, { rows: Promise<T>; expires: number }>()

  /** The page read ahead under `key`, if one was; it is given once. A read that failed gives undefined. */
  async take(key: string): Promise<T | undefined> {
    const hit = this.pending.get(key)
    if (!hit) return undefined
    this.pending.delete(key)
    if (hit.expires <= Date.now()) return undefined
    return hit.rows.catch(() => undefined)
  }

  /** Starts reading a page under `key` (the account, the page size and the cursor that asks for it). */
  start(key: string, read: () => Promise<T>): void {
    const now = Date.now()
    for (const [k, entry] of this.pending) if (entry.expires <= now) this.pending.delete(k)
    if (this.pending.size >= MAX_PENDING || this.pending.has(key)) return
    const rows = read()
    // Unclaimed, a failure (no free slot, the deadline) is nobody's: the page is read again if asked for.
    rows.catch(() => {})
    this.pending.set(key, { rows, expires: now + READ_AHEAD_MS })
  }
}
