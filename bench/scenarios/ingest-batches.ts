// Ingest by batch size: POST /sensors/readings carrying 1, 100 and 1000 readings per request (or only --batch),
// one device per lane (--concurrency, default 64), closed loop, on the real server (`bun src/main.ts`) with the
// readings store --store picks: sql (default; Postgres) or questdb (QUESTDB_ILP, a table of its own). For each
// batch size: readings/s ÷ the store's own direct write of the same rows (Postgres: one COPY,
// baselines/pg-copy.ts; QuestDB: the official client flushing as many rows at a time as our store did,
// baselines/questdb-sender.ts), and req/s ÷ a bare Bun.serve parsing the same bodies (servers/bare-server.ts).
// After each batch size the rows stored must equal the readings acknowledged so far.
import postgres from 'postgres'
import type { CopyConfig } from '../baselines/pg-copy.ts'
import type { SenderConfig } from '../baselines/questdb-sender.ts'
import type { RowsSpec } from '../baselines/rows.ts'
import type { BodySpec } from '../load/generator.ts'
import { childrenOf, COPY_SCRIPT, ingestSettings, migrated, othersOf, storedReadings, type BaselineResult } from '../lib/ingest.ts'
import { pidsNamed, runLoad, statsOf, type LoadResult, type Watch } from '../lib/load.ts'
import { BUN, ourServer, peakRssMiB, resetPeakRss, runForResult, startServer, type Child } from '../lib/processes.ts'
import {
  dropTable, freshTableName, intoFreshTable, machineNote, QUESTDB_HTTP, QUESTDB_ILP, QUESTDB_PG_URL, questdbAnswers, questdbJava, SENDER,
  tableStats, waitForCount, type SenderResult,
} from '../lib/questdb.ts'
import { line, needsLocalServer, type Line, type Scenario } from '../lib/report.ts'
import { accountAndToken, cleanRedis, createDevices, freshDatabase, metricOf, serverEnv, type FreshDatabase } from '../lib/setup.ts'
import { check } from './http-layer.ts'

const NAME = 'ingest-batches'
const DEFAULT_BATCHES = [1, 100, 1000]
const DEFAULT_LANES = 64
const CHANNELS = 10
const HOUR = 3_600_000
/** Device creations in flight while setting up. */
const SETUP_PARALLEL = 8

/** The readings store behind our server, seen from the bench: how to count what it holds and write rows directly. */
interface StoreUnderTest {
  /** The direct write the API is compared with. */
  baseline: string
  /** What our server needs to use this store. */
  env: Record<string, string>
  /** The store's processes, for their CPU. */
  pids: () => number[]
  /** Rows the store holds, once it shows `expected` (or gave up waiting), and the writes that put them there. */
  stored(expected: number): Promise<{ rows: number; writes: number }>
  /** Writes `spec`'s rows straight into a store of the same kind, `meanBatch` rows per write where that applies. */
  direct(spec: RowsSpec, meanBatch: number): Promise<{ rowsPerSecond: number; verified: boolean; note: string }>
  cleanUp(): Promise<void>
}

/** Postgres: our server's own database; COPY into the same indexed table of another, emptied before each run. */
async function postgresUnderTest(ours: FreshDatabase): Promise<StoreUnderTest> {
  const copyDb = await freshDatabase('batches_copy')
  try { await migrated(copyDb) } catch (error) { await copyDb.drop(); throw error }
  return {
    baseline: 'COPY', env: {}, pids: () => pidsNamed('postgres'),
    async stored() {
      const { stored, batches } = await storedReadings(ours.url)
      return { rows: stored, writes: batches }
    },
    async direct(spec) {
      const sql = postgres(copyDb.url, { max: 1, onnotice: () => {} })
      try { await sql`truncate readings, reading_rollups_1m, reading_rollups_5m, reading_rollups_1h, reading_rollups_1d, reading_latest` } finally { await sql.end() }
      const copy = await runForResult<BaselineResult>('COPY baseline', [BUN, COPY_SCRIPT, JSON.stringify({ databaseUrl: copyDb.url, spec } satisfies CopyConfig)])
      return {
        rowsPerSecond: copy.rowsPerSecond, verified: copy.stored === copy.rows,
        note: `COPY of ${copy.rows} rows: client ${copy.cpu.toFixed(2)} cores, its backend ${copy.backendCpu.toFixed(2)} (${((copy.backendCpu * 1e6) / copy.rowsPerSecond).toFixed(1)} µs/row), others ${othersOf(copy).toFixed(2)}, ${copy.ms.toFixed(0)} ms`,
      }
    },
    cleanUp: () => copyDb.drop(),
  }
}

/** QuestDB: a table of our server's own; the official client into a fresh table per run. */
function questdbUnderTest(): StoreUnderTest {
  const table = freshTableName('batches')
  return {
    baseline: 'official client', env: { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table }, pids: questdbJava,
    async stored(expected) {
      // QuestDB applies WAL writes in the background: polled until every acknowledged row shows.
      const { count } = await waitForCount(table, expected)
      return { rows: count, writes: (await tableStats(table)).walTxn }
    },
    async direct(spec, meanBatch) {
      const client = await intoFreshTable('batches_client', (t) => runForResult<SenderResult>('official client baseline', [BUN, SENDER, JSON.stringify({
        ilp: QUESTDB_ILP, table: t, spec, batch: meanBatch, senders: 1, awaitRows: true, patchEscape: false, watch: { questdb: questdbJava() },
      } satisfies SenderConfig)]))
      return {
        rowsPerSecond: client.rowsPerSecond, verified: client.visible === client.rows,
        note: `official client, ${client.rows} rows at ${meanBatch} per flush: ${((client.cpu * client.ms * 1000) / client.rows).toFixed(1)} µs CPU/row, ${client.cpu.toFixed(2)} cores, ${machineNote(client)}`,
      }
    },
    cleanUp: () => dropTable(table),
  }
}

export const ingestBatches: Scenario = async (ctx) => {
  if (ctx.options.target) return needsLocalServer()
  const kind = ctx.options.store ?? 'sql'
  if (kind === 'questdb' && !(await questdbAnswers())) return { lines: [], details: {}, skipped: `no QuestDB answers at ${QUESTDB_HTTP} (start one on loopback, or point BENCH_QUESTDB_HTTP at it)` }
  const lanes = ctx.options.concurrency ?? DEFAULT_LANES
  const batches = ctx.options.batch ? [ctx.options.batch] : DEFAULT_BATCHES
  const database = await freshDatabase('batches')
  let store: StoreUnderTest | undefined
  let env: Record<string, string> | undefined
  let server: Child | undefined
  let bare: Child | undefined
  try {
    store = kind === 'sql' ? await postgresUnderTest(database) : questdbUnderTest()
    env = serverEnv(database, { ...store.env, ...ingestSettings() })
    const { accountId, token } = await accountAndToken(env)
    server = await startServer('our server', ourServer('src/main.ts', NAME), env)
    const devices = await createDevices(server.baseUrl, token, lanes, CHANNELS, SETUP_PARALLEL)
    bare = await startServer('bare server', [BUN, 'bench/servers/bare-server.ts'], {})
    const ourServerPids = () => [server!.pid, ...childrenOf(server!.pid)]

    const lines: Line[] = []
    const runs: Record<string, unknown>[] = []
    let acknowledged = 0
    let writes = 0
    const firstTs = Date.now() - 24 * HOUR
    for (const [i, batch] of batches.entries()) {
      // Each batch size gets timestamps of its own (6 h apart, far more than a run spans): a reading already
      // stored is acknowledged again without adding a row, and stored = acknowledged would no longer hold.
      const body: BodySpec = { kind: 'readings', perRequest: batch, channels: CHANNELS, tsBase: firstTs + i * 6 * HOUR }
      const load = (url: string, watch: Watch) => runLoad({
        url, method: 'POST', lanes, warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, mode: 'closed', drainMs: 20_000,
        body, keys: devices.map((d) => d.key), auth: 'header', countAccepted: true,
      }, ctx.generators, watch)

      ctx.log(`${NAME}: ${lanes} devices posting ${batch} reading${batch > 1 ? 's' : ''} per request to our server (${kind} store)…`)
      // The peak of this batch size's run, not of the setup or an earlier run.
      for (const pid of ourServerPids()) resetPeakRss(pid)
      const ours = await load(`${server.baseUrl}/api/v1/sensors/readings`, { server: ourServerPids, store: store.pids })
      const rss = Math.max(...ourServerPids().map(peakRssMiB))
      check(ours, 202)
      acknowledged += ours.totalReadings
      const stored = await store.stored(acknowledged)
      const storeWrites = stored.writes - writes
      writes = stored.writes
      const meanBatch = Math.max(1, Math.round(ours.totalReadings / Math.max(1, storeWrites)))

      ctx.log(`${NAME}: the same bodies on a bare Bun.serve…`)
      const bareRun = await load(`${bare.baseUrl}/readings`, { server: () => [bare!.pid] })
      check(bareRun, 202)

      ctx.log(`${NAME}: the same ${ours.totalReadings} rows written directly (${store.baseline})…`)
      const spec: RowsSpec = {
        accountId, deviceIds: devices.map((d) => d.id), perRequest: batch, channels: CHANNELS, tsBase: body.tsBase,
        rows: ours.totalReadings, metrics: Array.from({ length: CHANNELS }, (_, c) => metricOf(c)),
      }
      const direct = await store.direct(spec, meanBatch)

      const verified = stored.rows === acknowledged && direct.verified
      const perReading = (r: LoadResult) => ((r.watched.server! * 1e6) / r.readingsPerSecond).toFixed(1)
      const perRequest = (r: LoadResult) => ((r.watched.server! * 1e6) / r.requestsPerSecond).toFixed(1)
      const storeNote = `${stored.rows === acknowledged ? 'stored = acknowledged' : 'STORED ≠ ACKNOWLEDGED'} (${stored.rows} rows stored, ${acknowledged} acknowledged so far incl. warm-up); ` +
        `this run's ${ours.totalReadings} in ${storeWrites} store writes (mean ${meanBatch} rows); during load: server ${ours.watched.server!.toFixed(2)} cores (${perReading(ours)} µs CPU/reading), ` +
        `${kind === 'sql' ? 'postgres' : 'QuestDB'} ${ours.watched.store!.toFixed(2)} cores, generator ${ours.cpu.toFixed(2)}, others ${ours.others.toFixed(2)}; ${direct.note}`
      const bareNote = `server CPU per request ours ${perRequest(ours)} µs / bare ${perRequest(bareRun)} µs; server ${ours.watched.server!.toFixed(2)} / ${bareRun.watched.server!.toFixed(2)} cores; ` +
        `generator ${ours.cpu.toFixed(2)} / ${bareRun.cpu.toFixed(2)} cores; others ${ours.others.toFixed(2)} / ${bareRun.others.toFixed(2)}; ` +
        `bare p50 ${bareRun.latency.p50.toFixed(1)} ms, p95 ${bareRun.latency.p95.toFixed(1)}, p99 ${bareRun.latency.p99.toFixed(1)}`
      const stats = statsOf(ours, 202, rss)
      lines.push(
        line(NAME, `${batch}/request: readings/s via API (${lanes} devices, ${kind}) ÷ ${store.baseline}`, ours.readingsPerSecond, direct.rowsPerSecond, 'rows/s', undefined, 'target', storeNote, stats),
        line(NAME, `${batch}/request: req/s via API (${kind}) ÷ bare Bun.serve`, ours.requestsPerSecond, bareRun.requestsPerSecond, 'req/s', undefined, 'target', bareNote, stats),
      )
      runs.push({ batch, ours, bare: bareRun, stored: stored.rows, acknowledged, verified, storeWrites, meanBatch, direct, peakRssMiB: rss })
    }
    return { lines, details: { store: kind, lanes, channels: CHANNELS, settings: ingestSettings(), runs } }
  } finally {
    await server?.stop()
    await bare?.stop()
    await store?.cleanUp()
    await database.drop()
    if (env) await cleanRedis(env.REDIS_PREFIX!)
  }
}
