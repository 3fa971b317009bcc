// What the ingest scenarios share: the group-commit settings passed to our server, its worker processes, the
// Postgres side of the store baselines (a migrated fresh database, COPY's result) and what the SQL store wrote.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { BUN, ROOT } from './processes.ts'
import type { FreshDatabase } from './setup.ts'

export const COPY_SCRIPT = join(ROOT, 'bench', 'baselines', 'pg-copy.ts')

/** One scrape of our server's /metrics: the value of a series as it prints it (name and labels), NaN when absent. */
export async function serverMetrics(baseUrl: string): Promise<(series: string) => number> {
  const lines = (await (await fetch(`${baseUrl}/metrics`)).text()).split('\n')
  return (series) => Number(lines.find((line) => line.startsWith(`${series} `))?.slice(series.length + 1) ?? NaN)
}

/** INGEST_* settings the bench passes through to our server when set (to try other batch sizes and flushes). */
export function ingestSettings(): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of ['INGEST_BATCH_SIZE', 'INGEST_FLUSH_MS', 'INGEST_FLUSH_CONCURRENCY', 'INGEST_MAX_QUEUED', 'WORKERS']) {
    if (process.env[name]) out[name] = process.env[name]!
  }
  return out
}

/** Child pids of a process (with WORKERS > 1 our server's pid is the supervisor; its workers are its children). */
export function childrenOf(pid: number): number[] {
  // Any thread may have spawned them, so every task's list counts.
  const out: number[] = []
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      out.push(...readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number))
    }
  } catch { /* gone */ }
  return out
}

/** Runs our migrations on a fresh database, so a store baseline writes into the same indexed table our server does. */
export async function migrated(database: FreshDatabase): Promise<void> {
  const migrate = Bun.spawn([BUN, 'db/migrate.ts'], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: database.url }, stdout: 'ignore', stderr: 'inherit' })
  if ((await migrate.exited) !== 0) throw new Error(`migrating ${database.name} failed`)
}

/** What the Postgres baselines (baselines/pg-copy.ts, baselines/pg-store.ts) print. */
export interface BaselineResult { rows: number; stored: number; ms: number; rowsPerSecond: number; cpu: number; backendCpu: number; machineCores: number }

/** Cores busy with neither the baseline nor its backends while it ran (noise). */
export const othersOf = (r: BaselineResult) => Math.max(0, r.machineCores - r.cpu - r.backendCpu)

/**
 * Rows in the readings table, and how many INSERTs wrote them: each store write is one statement in its own
 * transaction, so distinct xmin values count the batches.
 */
export async function storedReadings(databaseUrl: string): Promise<{ stored: number; batches: number }> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const [counts] = await sql<{ stored: number; batches: number }[]>`select count(*)::int as stored, count(distinct xmin::text)::int as batches from readings`
    return counts!
  } finally {
    await sql.end()
  }
}
