// The readings-query baseline: the same query run straight against the store, from one process, with the same
// lanes and windows as the API run. It opens the store as our server does (ingest/stores/sql.ts on Postgres, or
// ingest/stores/questdb.ts) and calls it exactly as GET /environment/readings does, page after page (asking for
// `limit + 1` rows, the next page after the last row's position): the SQL the store issues, without HTTP,
// authentication, cursors or JSON. Prints `result {json}` with queries (pages) per second and the rows each
// full walk counted.
import { openPostgres } from '../../db/client.ts'
import type { IntervalName } from '../../ingest/stores/interface.ts'
import type { Aggregate, BucketRow, ReadingsFilter, ReadingsStore, SeriesPosition } from '../../ingest/stores/interface.ts'
import { questdbStore } from '../../ingest/stores/questdb.ts'
import { sqlStore } from '../../ingest/stores/sql.ts'
import { loadConfig } from '../../src/config.ts'
import { cpuWindow } from '../lib/proc.ts'
import { backendsOf } from '../lib/records.ts'

export interface DirectConfig {
  store: { kind: 'sql'; databaseUrl: string } | { kind: 'questdb'; ilp: string; pgUrl: string; table: string }
  filter: ReadingsFilter
  /** Buckets (`interval` and `agg` in the API) or raw rows. */
  query: { kind: 'buckets'; interval: IntervalName; aggregates: Aggregate[] } | { kind: 'raw' }
  limit: number
  lanes: number
  warmupMs: number
  durationMs: number
  /** Processes whose CPU to report over the window (QuestDB's); for Postgres, the database's backends are added here. */
  watch: Record<string, number[]>
}

export interface DirectResult {
  /** Store queries (one per page) finished inside the window, and per second. */
  queries: number
  queriesPerSecond: number
  /** Whole run: full walks and the rows and pages each counted. */
  walks: { completed: number; rowsMin: number; rowsMax: number; pagesMax: number }
  latency: { p50: number; p95: number; p99: number }
  /** This process's CPU over the window, cores. */
  cpu: number
  watchedCores: Record<string, number>
  machineCores: number
}

const percentile = (sorted: Float64Array, p: number) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN

async function openStore(config: DirectConfig): Promise<{ store: ReadingsStore; close(): Promise<void> }> {
  if (config.store.kind === 'sql') {
    const database = await openPostgres(config.store.databaseUrl)
    return { store: sqlStore(database), close: () => database.close() }
  }
  const store = await questdbStore(loadConfig({ QUESTDB_ILP: config.store.ilp, QUESTDB_PG_URL: config.store.pgUrl, QUESTDB_TABLE: config.store.table }))
  return { store, close: () => store.close() }
}

if (import.meta.main) {
  const config = JSON.parse(process.argv[2]!) as DirectConfig
  const { store, close } = await openStore(config)
  const { query, filter, limit } = config
  const page = (after?: SeriesPosition): Promise<BucketRow[]> => query.kind === 'buckets'
    ? store.buckets(filter, { interval: query.interval, aggregates: query.aggregates, groupBy: 'series' }, limit + 1, after)
    : store.raw(filter, limit + 1, after)

  const start = performance.now()
  const windowStart = start + config.warmupMs
  const windowEnd = windowStart + config.durationMs
  const latencies: number[] = []
  const walks = { completed: 0, rowsMin: Infinity, rowsMax: 0, pagesMax: 0 }
  let queries = 0
  let window: ReturnType<typeof cpuWindow> | undefined
  let cpu0 = process.cpuUsage()
  let measured: { cpu: number; machine: ReturnType<ReturnType<typeof cpuWindow>> } | undefined
  // Postgres's backends are taken when the window opens: by then the warm-up has opened this process's connections.
  const backends = config.store.kind === 'sql' ? backendsOf(new URL(config.store.databaseUrl).pathname.slice(1)) : undefined
  const opened = setTimeout(() => { window = cpuWindow({ ...config.watch, ...(backends ? { store: backends() } : {}) }); cpu0 = process.cpuUsage() }, config.warmupMs)
  // The lanes can finish their last walk a moment before this timer fires; the run waits for it rather than
  // cancel it, so the window is always measured.
  const windowClosed = new Promise<void>((resolve) => setTimeout(() => {
    const used = process.cpuUsage(cpu0)
    measured = { cpu: (used.user + used.system) / 1000 / config.durationMs, machine: window!() }
    resolve()
  }, config.warmupMs + config.durationMs))

  await Promise.all(Array.from({ length: config.lanes }, async () => {
    while (performance.now() < windowEnd) {
      let after: SeriesPosition | undefined
      let rows = 0
      let pages = 0
      for (;;) {
        const sent = performance.now()
        const got = await page(after)
        const done = performance.now()
        if (done >= windowStart && done <= windowEnd) { queries++; if (sent >= windowStart) latencies.push(done - sent) }
        const hasMore = got.length > limit
        const shown = hasMore ? got.slice(0, limit) : got
        rows += shown.length
        pages++
        if (!hasMore) break
        if (done > windowEnd) { rows = -1; break } // the window closed mid-walk: not a full walk
        const last = shown[shown.length - 1]!
        after = [last.ts, last.device_id!, last.channel!]
      }
      if (rows >= 0) {
        walks.completed++
        walks.rowsMin = Math.min(walks.rowsMin, rows); walks.rowsMax = Math.max(walks.rowsMax, rows); walks.pagesMax = Math.max(walks.pagesMax, pages)
      }
    }
  }))
  clearTimeout(opened)
  await windowClosed
  await close()
  if (!measured) throw new Error('the window never closed')
  const sorted = Float64Array.from(latencies).sort()
  const result: DirectResult = {
    queries, queriesPerSecond: queries / (config.durationMs / 1000),
    walks: { ...walks, rowsMin: walks.completed ? walks.rowsMin : 0 },
    latency: { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) },
    cpu: measured.cpu, watchedCores: measured.machine.cores, machineCores: measured.machine.machineCores,
  }
  console.log(`result ${JSON.stringify(result)}`)
  process.exit(0)
}
