// The two ways to open the database: postgres.js on a server, or PGlite embedded in this process. Which one a
// process uses is picked in src/deps.ts, with every other implementation choice.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import * as schema from './schema/index.ts'

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>

export interface Database {
  readonly db: Db
  readonly kind: 'postgres' | 'pglite'
  /** Raw SQL with positional parameters ($1…; arrays bind as Postgres arrays), for hot paths drizzle would slow. */
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<Row[]>
  /** Runs the committed migrations (idempotent); `folder` another set of them (tests of a migration start from an earlier set). */
  migrate(folder?: string): Promise<void>
  /**
   * A pool of its own for readings queries (ingest/stores/sql.ts), so a slow query never holds a connection the
   * records API or ingest needs; every statement runs under the caller's signal.
   */
  openReader(options: ReaderOptions): Reader
  /** A cheap round trip for readiness checks. */
  ping(): Promise<void>
  close(): Promise<void>
}

export interface ReaderOptions {
  connections: number
  /** The server's own backstop: a statement running longer is cancelled by Postgres even if our cancel is lost. */
  statementTimeoutMs: number
}

export interface Reader {
  /** Runs a read; aborting `signal` cancels it in the server (CancelRequest), or drops it if it has not started. */
  query<Row = Record<string, unknown>>(text: string, params: unknown[], signal: AbortSignal): Promise<Row[]>
  close(): Promise<void>
}

/** A read stopped by its signal: `started` says whether it had reached a connection (ran, then was cancelled). */
export class ReadCancelled extends Error {
  constructor(readonly started: boolean, readonly reason: unknown) {
    super(started ? 'the query was cancelled in the server' : 'the query was dropped before it reached a connection')
  }
}

/**
 * Ties a postgres.js query to a signal: on abort, postgres.js sends Postgres (or QuestDB) a CancelRequest for a
 * query that has started, and takes one still queued off its queue. Either way the caller gets ReadCancelled.
 */
export async function cancellable<Row>(query: Promise<Row[]> & { state?: unknown; cancel(): unknown }, signal: AbortSignal): Promise<Row[]> {
  let startedAtAbort = false
  const onAbort = () => {
    startedAtAbort = Boolean(query.state)
    void Promise.resolve(query.cancel()).catch(() => {})
  }
  if (signal.aborted) onAbort()
  else signal.addEventListener('abort', onAbort, { once: true })
  try {
    return await query
  } catch (error) {
    if (signal.aborted) throw new ReadCancelled(startedAtAbort, signal.reason)
    throw error
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

const MIGRATIONS_FOLDER = join(import.meta.dir, 'migrations')

function processAlive(pid: number): boolean {
  try { process.kill(pid, 0); return true } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM' }
}

/** The embedded database's directory is another live process's: a start refused with one line (src/main.ts). */
export class DataDirInUse extends Error {}

/**
 * PGlite is one Postgres in one process: a second process opening the same directory would corrupt it.
 * A pid file makes that a clear error instead (a stale file from a crashed process is taken over).
 */
function lockDataDir(dataDir: string): () => void {
  const lockFile = join(dataDir, 'hrs.pid')
  let holder: number | undefined
  try { holder = Number(readFileSync(lockFile, 'utf8')) } catch { /* no lock yet */ }
  if (holder && holder !== process.pid && processAlive(holder)) {
    throw new DataDirInUse(`the embedded database in ${dataDir} is in use by process ${holder}; stop it first (or set DATABASE_URL)`)
  }
  writeFileSync(lockFile, String(process.pid))
  return () => rmSync(lockFile, { force: true })
}

/**
 * Deadlines on the real server, so an unreachable or stuck Postgres costs a request seconds, not minutes (the
 * driver's own connect timeout is 30 s): a connection attempt gives up after this…
 */
const CONNECT_TIMEOUT_SECONDS = 2
/** …and the server cancels any statement running longer than this (no request of ours needs a tenth of it). */
const STATEMENT_TIMEOUT_MS = 10_000
/**
 * A query that has not reached a connection this long after it was issued, while the pool answered no other, is
 * cancelled (SQLSTATE 57014, which answers 503 with Retry-After): while Postgres is down, postgres.js keeps queries
 * queued until a connection opens, and a request waited for it with no answer (15 s and more in a fast-shutdown
 * test). Cancelling a query that no connection has taken removes it from the queue, so it is never run later. With the sweep's quarter
 * second, this leaves the 2 s promise of a 503 (README, "When a backend fails") room on a busy machine.
 */
const START_DEADLINE_MS = 1_000
/**
 * Reconnect attempts while Postgres is down: postgres.js backs off up to 20 s between them by default, so service
 * came back up to 20 s after Postgres did; here at most half a second.
 */
const reconnectBackoffSeconds = (attempt: number) => Math.min(0.05 * 2 ** attempt, 0.5)

/**
 * The part of a postgres.js query the deadline reads: `state` is null until a connection has taken it; `resolve` is
 * what the connection calls with its rows (wrapped to count it: that does not run the query, as then would).
 */
interface PendingQuery { state: unknown; cancel(): unknown; resolve(value: unknown): unknown }

/**
 * Wraps `client.unsafe` (drizzle's one way in, and `begin`'s) so that every query not taken by a connection within
 * START_DEADLINE_MS, while no other query was answered either, is cancelled. Postgres is then presumed unreachable
 * and every query still waiting is cancelled at the next sweep (a request making two queries in turn would otherwise
 * wait twice), until a query is seen taken by a connection again. One sweep a quarter second, not a timer per query:
 * the hot path pays an array push and a wrapped resolve.
 *
 * The list holds its queries weakly. A postgres.js query is the promise of its rows, so a strong reference kept
 * every result alive until the next sweep: at 800 pages/s, 200 results of 50 rows outlived each young-generation
 * collection, which then promoted and re-marked them (a median 8.4 MB visited per collection against 0.8 MB now and
 * the hand-written server's 0.5 MB, from JavaScriptCore's GC log). In `bun run bench hand-written`'s paced rounds
 * our server paused 499 and 522 times, the hand-written one 222–272 times; 278 and 244 times since (2026-11-29).
 * A query waiting for a connection is held by postgres.js's queue, so a reference that no longer resolves belongs
 * to a query that has settled: it counts as taken.
 */
function cancelQueriesNotStarted(client: { unsafe: (...args: any[]) => any }): () => void {
  const unsafe = client.unsafe.bind(client)
  let issued: { query: WeakRef<PendingQuery>; at: number }[] = []
  let unreachable = false
  /** Queries answered: a pool that answers queries is reachable, however long its queue (failing ones are not). */
  let answered = 0
  client.unsafe = (...args: any[]) => {
    const query = unsafe(...args) as PendingQuery
    const { resolve } = query
    query.resolve = (value) => (answered++, resolve(value))
    issued.push({ query: new WeakRef(query), at: performance.now() })
    return query
  }
  /** When a sweep last saw a query answered since the one before: the pool was making progress. */
  let lastAnswer = performance.now()
  let answeredAtSweep = 0
  const sweep = setInterval(() => {
    const now = performance.now()
    const due = now - START_DEADLINE_MS
    if (answered !== answeredAtSweep) { answeredAtSweep = answered; lastAnswer = now }
    const waiting: typeof issued = []
    for (const entry of issued) {
      const query = entry.query.deref()
      if (!query || query.state) unreachable = false
      else waiting.push(entry)
    }
    // The list is in issue order, so the oldest waiting query says whether any is overdue. A pool that answered a
    // query meanwhile is busy, not cut off: a query waiting its turn there is not cancelled. When it was, at the dense
    // site (issue 57, the SQL store, 4 reader connections), a read queued past a second made every read still queued
    // fail 503 at once, and the dashboards' walks with them.
    if (waiting.length > 0 && waiting[0]!.at <= due && lastAnswer <= due) unreachable = true
    if (unreachable) for (const entry of waiting) void Promise.resolve(entry.query.deref()?.cancel()).catch(() => {})
    issued = unreachable ? [] : waiting
  }, 250)
  sweep.unref()
  return () => clearInterval(sweep)
}

export async function openPostgres(databaseUrl: string): Promise<Database> {
  const { default: postgres } = await import('postgres')
  const { drizzle } = await import('drizzle-orm/postgres-js')
  const { migrate } = await import('drizzle-orm/postgres-js/migrator')
  const client = postgres(databaseUrl, {
    max: 10, onnotice: () => {}, connect_timeout: CONNECT_TIMEOUT_SECONDS, backoff: reconnectBackoffSeconds,
    // TimeZone UTC: Postgres then writes timestamps as the API does (db/schema/instant.ts takes its fast path).
    connection: { statement_timeout: STATEMENT_TIMEOUT_MS, TimeZone: 'UTC' },
  })
  const stopDeadlines = cancelQueriesNotStarted(client)
  const db = drizzle({ client, schema })
  return {
    db: db as unknown as Db,
    kind: 'postgres',
    query: async (text, params = []) => (await client.unsafe(text, params as never[])) as never,
    migrate: (folder = MIGRATIONS_FOLDER) => migrate(db, { migrationsFolder: folder }),
    openReader({ connections, statementTimeoutMs }) {
      const reader = postgres(databaseUrl, {
        max: connections, onnotice: () => {}, connect_timeout: CONNECT_TIMEOUT_SECONDS, backoff: reconnectBackoffSeconds, idle_timeout: 60,
        connection: { statement_timeout: statementTimeoutMs, TimeZone: 'UTC' },
      })
      // The same start deadline as the records pool: while Postgres is down, a read waits for a connection at most
      // START_DEADLINE_MS, then fails as unavailable (503 within the 2 s the README promises).
      const stopDeadlines = cancelQueriesNotStarted(reader)
      return {
        query: (text, params, signal) => cancellable(reader.unsafe(text, params as never[]) as never, signal),
        close: () => { stopDeadlines(); return reader.end({ timeout: 5 }) },
      }
    },
    ping: async () => { await client`select 1` },
    close: () => { stopDeadlines(); return client.end({ timeout: 5 }) },
  }
}

/** `dataDir` is a directory (locked to this process), or `memory://` for a database that lives in memory. */
export async function openPglite(dataDir: string): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite')
  const { drizzle } = await import('drizzle-orm/pglite')
  const { migrate } = await import('drizzle-orm/pglite/migrator')
  const inMemory = dataDir === 'memory://'
  let unlock = () => {}
  if (!inMemory) { mkdirSync(dataDir, { recursive: true }); unlock = lockDataDir(dataDir) }
  const client = inMemory ? new PGlite() : new PGlite(dataDir)
  await client.waitReady
  const db = drizzle({ client, schema })
  return {
    db: db as unknown as Db,
    kind: 'pglite',
    query: async (text, params = []) => (await client.query(text, params)).rows as never,
    migrate: (folder = MIGRATIONS_FOLDER) => migrate(db, { migrationsFolder: folder }),
    // PGlite runs each statement to its end on this thread: it cannot be cancelled (statement_timeout never fires
    // there), so the embedded store relies on the planner's bounds alone. A read is dropped only before it starts.
    openReader: () => ({
      async query(text, params, signal) {
        if (signal.aborted) throw new ReadCancelled(false, signal.reason)
        return (await client.query(text, params)).rows as never
      },
      async close() {},
    }),
    ping: async () => { await client.query('select 1') },
    // Once, as postgres.js's end(): PGlite refuses a second close, and the lock may be another process's by then.
    close: async () => { if (client.closed) return; await client.close(); unlock() },
  }
}
