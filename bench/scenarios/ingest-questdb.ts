// Ingest on QuestDB: readings/s accepted-and-stored through our API (the real server with QUESTDB_ILP, a table
// of its own) ÷ the same rows written straight to QuestDB with the official client from one process, flushing
// as many rows at a time as our store did on average (target ≥ 1.0); and ÷ raw ILP/HTTP POSTs of the same rows
// and batch size (goal ≥ 0.5). Stored counts are read once QuestDB has applied its WAL (polled, not slept).
import type { RawIlpConfig } from '../baselines/questdb-raw-ilp.ts'
import type { RowsSpec } from '../baselines/rows.ts'
import type { SenderConfig } from '../baselines/questdb-sender.ts'
import { ingestSettings } from '../lib/ingest.ts'
import { BUN, runForResult } from '../lib/processes.ts'
import {
  dropTable, freshTableName, intoFreshTable, machineNote, QUESTDB_HTTP, QUESTDB_ILP, QUESTDB_PG_URL, questdbAnswers, questdbJava, RAW_ILP, SENDER,
  tableStats, waitForCount, type RawResult, type SenderResult,
} from '../lib/questdb.ts'
import { statsOf } from '../lib/load.ts'
import { line, needsLocalServer, type Scenario } from '../lib/report.ts'
import { cleanRedis, freshDatabase, metricOf, serverEnv } from '../lib/setup.ts'
import { CHANNELS, driveIngest, type IngestRun } from './ingest-postgres.ts'

const NAME = 'ingest-questdb'
export const ingestQuestdb: Scenario = async (ctx) => {
  // Its baselines write into this machine's QuestDB: our server has to write into the same one.
  if (ctx.options.target) return needsLocalServer()
  if (!(await questdbAnswers())) return { lines: [], details: {}, skipped: `no QuestDB answers at ${QUESTDB_HTTP} (start one on loopback, or point BENCH_QUESTDB_HTTP at it)` }
  const database = await freshDatabase('qdb')
  const table = freshTableName('api')
  const env = serverEnv(database, { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table, ...ingestSettings() })
  let run: IngestRun | undefined
  try {
    run = await driveIngest(ctx, env, { questdb: questdbJava }, NAME)
    const { load } = run
    await run.server.stop()
    const visible = await waitForCount(table, load.totalReadings)
    const stats = await tableStats(table)
    const meanBatch = Math.max(1, Math.round(load.totalReadings / Math.max(1, stats.walTxn)))
    ctx.log(`${NAME}: ${visible.count} rows visible ${visible.waitedMs} ms after the last answer; ${stats.walTxn} WAL transactions, ${meanBatch} rows per batch on average`)

    const spec: RowsSpec = {
      accountId: run.accountId, deviceIds: run.deviceIds, perRequest: run.perRequest, channels: CHANNELS,
      tsBase: run.tsBase, rows: load.totalReadings, metrics: Array.from({ length: CHANNELS }, (_, c) => metricOf(c)),
    }
    ctx.log(`${NAME}: the same ${spec.rows} rows through the official client (Bun, one sender, ${meanBatch} rows per flush)…`)
    const client = await intoFreshTable('client', (t) => runForResult<SenderResult>('official client baseline', [BUN, SENDER, JSON.stringify({
      ilp: QUESTDB_ILP, table: t, spec, batch: meanBatch, senders: 1, awaitRows: true, patchEscape: false, watch: { questdb: questdbJava() },
    } satisfies SenderConfig)]))
    ctx.log(`${NAME}: the same rows as raw ILP/HTTP POSTs (${meanBatch} rows per request)…`)
    const raw = await intoFreshTable('raw', (t) => runForResult<RawResult>('raw ILP baseline', [BUN, RAW_ILP, JSON.stringify({
      http: QUESTDB_HTTP, table: t, spec, batch: meanBatch, inFlight: 1, watch: { questdb: questdbJava() },
    } satisfies RawIlpConfig)]))

    const stored = visible.count
    const verified = stored === load.totalReadings
    const common = `${verified ? 'stored = acknowledged' : 'STORED ≠ ACKNOWLEDGED'} (${stored} visible of ${load.totalReadings} acknowledged incl. warm-up, ${visible.waitedMs} ms after the last answer); ` +
      `our store wrote ${stats.walTxn} batches (mean ${meanBatch} rows); during load: server ${load.watched.server!.toFixed(2)} cores (${((load.watched.server! * 1e6) / load.readingsPerSecond).toFixed(1)} µs CPU/reading), QuestDB ${load.watched.questdb!.toFixed(2)}, generator ${load.cpu.toFixed(2)}, others ${load.others.toFixed(2)}; ${load.requestsPerSecond.toFixed(0)} req/s, p99 ${load.latency.p99.toFixed(1)} ms`
    const loadStats = statsOf(load, 202, run.peakRssMiB)
    return {
      lines: [
        line(NAME, `readings/s via API ÷ official client (1 process, ${meanBatch}/flush)`, load.readingsPerSecond, client.rowsPerSecond, 'rows/s', 1.0, 'target',
          `${common}; client: ${((client.cpu * client.ms * 1000) / client.rows).toFixed(1)} µs CPU/row, ${client.cpu.toFixed(2)} cores, ${machineNote(client)}, ${client.buildMs.toFixed(0)} ms building rows + ${client.flushMs.toFixed(0)} ms in ${client.flushes} flushes`, loadStats),
        line(NAME, `readings/s via API ÷ raw ILP/HTTP POST (${meanBatch}/request)`, load.readingsPerSecond, raw.rowsPerSecond, 'rows/s', 0.5, 'goal',
          `raw ILP: ${((raw.cpu * raw.ms * 1000) / raw.rows).toFixed(1)} µs CPU/row, ${raw.cpu.toFixed(2)} cores, ${machineNote(raw)}, ${raw.ms.toFixed(0)} ms; the official client reaches ${(client.rowsPerSecond / raw.rowsPerSecond).toFixed(2)} of raw ILP`, loadStats),
        line(NAME, 'peak RSS of our server at max rate', run.peakRssMiB, undefined, 'MiB'),
      ],
      details: {
        table, lanes: run.lanes, readingsPerRequest: run.perRequest, settings: ingestSettings(), load, stored, acknowledged: load.totalReadings, verified,
        visibleAfterMs: visible.waitedMs, walTxn: stats.walTxn, meanBatch, client, raw, peakRssMiB: run.peakRssMiB,
      },
    }
  } finally {
    await run?.server.stop()
    await dropTable(table)
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}
