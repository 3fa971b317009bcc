// The bench's side door into QuestDB: its HTTP /exec endpoint for DDL, counts and table statistics; and what
// the QuestDB store baselines (baselines/questdb-sender.ts, baselines/questdb-raw-ilp.ts) need around them.
import { join } from 'node:path'
import { pidsNamed } from './load.ts'
import { ROOT } from './processes.ts'
import { VIEW_CHAIN } from '../../ingest/stores/questdb-rollups.ts'

export const QUESTDB_HTTP = process.env.BENCH_QUESTDB_HTTP || 'http://127.0.0.1:9000'
export const QUESTDB_ILP = process.env.BENCH_QUESTDB_ILP || 'http::addr=127.0.0.1:9000'
export const QUESTDB_PG_URL = process.env.BENCH_QUESTDB_PG_URL || 'postgres://admin:quest@127.0.0.1:8812/qdb'

export async function exec(query: string, timeoutMs = 30_000): Promise<{ columns?: { name: string }[]; dataset?: unknown[][]; error?: string }> {
  const res = await fetch(`${QUESTDB_HTTP}/exec?query=${encodeURIComponent(query)}`, { signal: AbortSignal.timeout(timeoutMs) })
  const body = (await res.json()) as { columns?: { name: string }[]; dataset?: unknown[][]; error?: string }
  if (body.error) throw new Error(`QuestDB: ${body.error} (${query})`)
  return body
}

/** Whether a QuestDB answers on loopback (the scenario is skipped otherwise). */
export async function questdbAnswers(): Promise<boolean> {
  try { await exec('select 1', 2000); return true } catch { return false }
}

/**
 * Which QuestDB answered, and how many workers its shared pools have, for the report: on a 2-core box shared with our
 * server and the generator its figures may depend on them (bench/README.md gives what was seen). E.g. "QuestDB 9.3.2,
 * shared.worker.count=1 (conf)".
 */
export async function questdbSetup(): Promise<string> {
  const build = String((await exec('select build()')).dataset?.[0]?.[0] ?? '')
  // "QuestDB 9.3.2" in release builds; a build whose manifest names the product in lower case says "questdb 9.3.2".
  const number = /questdb ([0-9.]+)/i.exec(build)?.[1]
  const version = number ? `QuestDB ${number}` : 'QuestDB (version unknown)'
  // The shared workers' count, and their other settings where they are not QuestDB's defaults (sleep and yield).
  const workers = await exec(`select property_path, value, value_source from (show parameters) where property_path like 'shared.worker.%'`).catch(() => undefined)
  const settings = ((workers?.dataset ?? []) as [string, string, string][])
    .filter(([path, , source]) => path === 'shared.worker.count' || source !== 'default')
    .map(([path, value, source]) => `${path}=${value} (${source})`)
  return settings.length ? `${version}, ${settings.join(', ')}` : version
}

/** The table our store creates (ingest/stores/questdb.ts), for the baselines to write into. */
export async function createReadingsTable(table: string): Promise<void> {
  await exec(`create table if not exists ${table} (
    ts timestamp, account_id symbol, device_id symbol, channel symbol, metric symbol, environment_id symbol, value double
  ) timestamp(ts) partition by day wal dedup upsert keys(ts, device_id, channel)`)
}

export async function dropTable(table: string): Promise<void> {
  // Our server makes rollup views on QuestDB 8.3.1 and later (they go first), rollup tables on 7.4.
  for (const level of [...VIEW_CHAIN].reverse()) {
    await exec(`drop materialized view if exists ${table}_${level}`).catch(() => {})
    await exec(`drop table if exists ${table}_${level}`).catch(() => {})
  }
  await exec(`drop table if exists ${table}`).catch(() => {})
}

export async function count(table: string): Promise<number> {
  const body = await exec(`select count() from ${table}`)
  return Number(body.dataset?.[0]?.[0] ?? 0)
}

/**
 * Rows and WAL transactions (one per ILP/HTTP request that carried rows) of a table. Read from count() and
 * wal_tables(), which every QuestDB from 7.4 to 9.x has (tables() gained table_row_count and wal_txn only later).
 */
export async function tableStats(table: string): Promise<{ rows: number; walTxn: number }> {
  const [rows, wal] = await Promise.all([count(table), exec(`select sequencerTxn from wal_tables() where name = '${table}'`)])
  return { rows, walTxn: Number(wal.dataset?.[0]?.[0] ?? 0) }
}

/** Polls until `table` shows `expected` rows (QuestDB applies WAL writes asynchronously); returns the last count. */
export async function waitForCount(table: string, expected: number, timeoutMs = 120_000): Promise<{ count: number; waitedMs: number }> {
  const started = Date.now()
  let n = -1
  while (Date.now() - started < timeoutMs) {
    n = await count(table)
    if (n >= expected) break
    await Bun.sleep(200)
  }
  return { count: n, waitedMs: Date.now() - started }
}

/**
 * Waits until the table's rollup views (8.3.1 on) have caught up with it: the planner reads a level only then, so a
 * query right after a bulk load measures the raw table instead. Resolves at once where there are none (7.4).
 */
export async function waitForViews(table: string, timeoutMs = 600_000): Promise<{ views: number; waitedMs: number }> {
  const started = Date.now()
  for (;;) {
    // QuestDB 7.4 has no materialized_views(): an error there means no views.
    const r = await exec(`select view_status, refresh_base_table_txn, base_table_txn from materialized_views() where base_table_name like '${table}%'`).catch(() => ({ error: 'no views', dataset: [] }))
    const rows = r.error ? [] : (r.dataset ?? []) as unknown[][]
    if (!rows.length || rows.every(([status, refreshed, base]) => status === 'valid' && Number(refreshed) === Number(base)) || Date.now() - started > timeoutMs) {
      return { views: rows.length, waitedMs: Date.now() - started }
    }
    await Bun.sleep(200)
  }
}

export const SENDER = join(ROOT, 'bench', 'baselines', 'questdb-sender.ts')
export const RAW_ILP = join(ROOT, 'bench', 'baselines', 'questdb-raw-ilp.ts')
const suffix = () => `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`

/** A table name of its own for one run (the bench drops it at the end). */
export const freshTableName = (label: string) => `bench_${label}_${suffix()}`

export interface RawResult { rows: number; ms: number; rowsPerSecond: number; cpu: number; machineCores: number; watchedCores: Record<string, number> }
export interface SenderResult extends RawResult { runtime: string; buildMs: number; flushMs: number; flushes: number; slowestFlushMs: number }

/** "QuestDB x cores, others y" over a baseline's timed window. */
export const machineNote = (r: RawResult) => {
  const questdb = r.watchedCores.questdb ?? 0
  return `QuestDB ${questdb.toFixed(2)} cores, others ${Math.max(0, r.machineCores - r.cpu - questdb).toFixed(2)}`
}

/** Runs a baseline script against a fresh table of its own and waits until QuestDB shows every row. */
export async function intoFreshTable<T extends { rows: number }>(label: string, run: (table: string) => Promise<T>): Promise<T & { table: string; visible: number; visibleAfterMs: number }> {
  const table = freshTableName(label)
  await createReadingsTable(table)
  try {
    const result = await run(table)
    const { count, waitedMs } = await waitForCount(table, result.rows)
    return { ...result, table, visible: count, visibleAfterMs: waitedMs }
  } finally {
    await dropTable(table)
  }
}

/** QuestDB's JVM (the only java process on a bench machine; its CPU is the store's). */
export const questdbJava = () => pidsNamed('java')
