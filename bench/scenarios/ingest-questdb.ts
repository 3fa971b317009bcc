// Ingest on QuestDB (issue 12): readings/s accepted-and-stored through our API (the real server with QUESTDB_ILP,
// a table of its own) ÷ the same rows written straight to QuestDB with the official client from one process,
// flushing as many rows at a time as our store did on average (target ≥ 3); ÷ raw ILP/HTTP POSTs of the same rows
// and batch size (target ≥ 0.5); ÷ the Postgres path when ingest-postgres ran earlier in the same invocation
// (target ≥ 1.5). Also the server's CPU per reading (target ≤ 5 µs) and the ack latency at half the maximum rate
// (open loop; p99 under 100 ms is what the batching defaults were chosen for). Stored counts are read once
// QuestDB has applied its WAL (polled, not slept). As information, a peer: InfluxDB 1.x's /write (a private
// influxd on loopback, Debian's `influxdb`) taking the same readings as line protocol from the same generator,
// the endpoint sensor deployments move from, in three rounds taking turns with ours (influxRounds); skipped,
// saying so, where influxd is absent.
import type { RawIlpConfig } from '../baselines/questdb-raw-ilp.ts'
import type { RowsSpec } from '../baselines/rows.ts'
import type { SenderConfig } from '../baselines/questdb-sender.ts'
import { ingestSettings } from '../lib/ingest.ts'
import { BUN, runForResult } from '../lib/processes.ts'
import {
  dropTable, freshTableName, intoFreshTable, machineNote, QUESTDB_HTTP, QUESTDB_ILP, QUESTDB_PG_URL, questdbAnswers, questdbJava, questdbSetup, RAW_ILP, SENDER,
  tableStats, waitForCount, type RawResult, type SenderResult,
} from '../lib/questdb.ts'
import { INFLUXD, startInflux } from '../lib/influx.ts'
import { medianBy, runLoad, statsOf, type LoadResult } from '../lib/load.ts'
import { line, needsLocalServer, type Line, type Scenario } from '../lib/report.ts'
import { loadConfig } from '../../src/config.ts'
import { cleanRedis, freshDatabase, metricOf, serverEnv } from '../lib/setup.ts'
import { check } from './http-layer.ts'
import { CHANNELS, closedLoop, driveIngest, pathRatioLine, type IngestRun } from './ingest-postgres.ts'
import { MAX_IN_FLIGHT } from './latency.ts'

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
    const server = run.server
    // Each batch is one WAL transaction: the closed loop's mean batch, for the baselines to write as many rows at a time.
    const closedLoopTxn = (await tableStats(table)).walTxn
    const meanBatch = Math.max(1, Math.round(load.totalReadings / Math.max(1, closedLoopTxn)))
    // The InfluxDB peer takes turns with our server (see influxRounds); our first round is the run above.
    const peer = await influxRounds(ctx, run, table)
    const ourTotal = load.totalReadings + (peer?.ours.reduce((sum, round) => sum + round.totalReadings, 0) ?? 0)
    const rate = Math.max(1, Math.round(load.requestsPerSecond / 2))
    // The latency at half rate is the steady state's: QuestDB first finishes applying the full-speed runs' WAL
    // (it lags behind the acknowledgements under full load), which otherwise lands in the first measured second.
    const settled = await waitForCount(table, ourTotal)
    ctx.log(`${NAME}: the full-speed run's rows were all visible ${settled.waitedMs} ms after its last answer`)
    ctx.log(`${NAME}: open loop at ${rate} req/s (half of the maximum), ${run.perRequest} readings each…`)
    const half: LoadResult = await runLoad({
      url: `${server.baseUrl}/api/v1/sensors/readings`, method: 'POST', lanes: MAX_IN_FLIGHT, mode: 'open', rate,
      warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, drainMs: 20_000,
      // Timestamps after the closed loop's: the same devices, new slots.
      body: { kind: 'readings', perRequest: run.perRequest, channels: CHANNELS, tsBase: run.tsBase + 3_600_000 },
      keys: run.keys, auth: 'header', countAccepted: true,
    }, ctx.generators, { server: () => [server.pid], questdb: questdbJava })
    check(half, 202)
    await server.stop()
    const acknowledged = ourTotal + half.totalReadings
    const visible = await waitForCount(table, acknowledged)
    const stats = await tableStats(table)
    ctx.log(`${NAME}: ${visible.count} rows visible ${visible.waitedMs} ms after the last answer; ${closedLoopTxn} WAL transactions at full speed, ${meanBatch} rows per batch on average`)

    const spec: RowsSpec = {
      accountId: run.accountId, deviceIds: run.deviceIds, perRequest: run.perRequest, channels: CHANNELS,
      tsBase: run.tsBase, rows: load.totalReadings, metrics: Array.from({ length: CHANNELS }, (_, c) => metricOf(c)),
    }
    ctx.log(`${NAME}: the same ${spec.rows} rows through the official client (Bun, one sender, ${meanBatch} rows per flush)…`)
    const client = await intoFreshTable('client', (t) => runForResult<SenderResult>('official client baseline', [BUN, SENDER, JSON.stringify({
      ilp: QUESTDB_ILP, table: t, spec, batch: meanBatch, senders: 1, awaitRows: true, patchEscape: false, watch: { questdb: questdbJava() },
    } satisfies SenderConfig)]))
    // As many requests in flight as our store writes batches at once.
    const inFlight = loadConfig(env).ingestFlushConcurrency
    ctx.log(`${NAME}: the same rows as raw ILP/HTTP POSTs (${meanBatch} rows per request, ${inFlight} in flight)…`)
    const raw = await intoFreshTable('raw', (t) => runForResult<RawResult>('raw ILP baseline', [BUN, RAW_ILP, JSON.stringify({
      http: QUESTDB_HTTP, table: t, spec, batch: meanBatch, inFlight, watch: { questdb: questdbJava() },
    } satisfies RawIlpConfig)]))

    const stored = visible.count
    const verified = stored === acknowledged
    const cpuPerReading = (load.watched.server! * 1e6) / load.readingsPerSecond
    const common = `${verified ? 'stored = acknowledged' : 'STORED ≠ ACKNOWLEDGED'} (${stored} visible of ${acknowledged} acknowledged incl. warm-up and the half-rate run, ${visible.waitedMs} ms after the last answer); ` +
      `our store wrote ${closedLoopTxn} batches at full speed (mean ${meanBatch} rows), ${stats.walTxn} in all; during load: server ${load.watched.server!.toFixed(2)} cores (${cpuPerReading.toFixed(1)} µs CPU/reading), QuestDB ${load.watched.questdb!.toFixed(2)}, generator ${load.cpu.toFixed(2)}, others ${load.others.toFixed(2)}; ${load.requestsPerSecond.toFixed(0)} req/s, p99 ${load.latency.p99.toFixed(1)} ms`
    const loadStats = statsOf(load, 202, run.peakRssMiB)
    const postgresPath = pathRatioLine(ctx, { questdb: load.readingsPerSecond })
    return {
      lines: [
        line(NAME, `readings/s via API ÷ official client (1 process, ${meanBatch}/flush)`, load.readingsPerSecond, client.rowsPerSecond, 'rows/s', 3, 'target',
          `${common}; client: ${((client.cpu * client.ms * 1000) / client.rows).toFixed(1)} µs CPU/row, ${client.cpu.toFixed(2)} cores, ${machineNote(client)}, ${client.buildMs.toFixed(0)} ms building rows + ${client.flushMs.toFixed(0)} ms in ${client.flushes} flushes`, loadStats),
        line(NAME, `readings/s via API ÷ raw ILP/HTTP POST (${meanBatch}/request, ${inFlight} in flight)`, load.readingsPerSecond, raw.rowsPerSecond, 'rows/s', 0.5, 'target',
          `raw ILP: ${((raw.cpu * raw.ms * 1000) / raw.rows).toFixed(1)} µs CPU/row, ${raw.cpu.toFixed(2)} cores, ${machineNote(raw)}, ${raw.ms.toFixed(0)} ms; the official client reaches ${(client.rowsPerSecond / raw.rowsPerSecond).toFixed(2)} of raw ILP`, loadStats),
        ...(postgresPath ? [postgresPath] : []),
        ...(peer ? [peerLine(load, peer)] : []),
        line(NAME, 'server CPU per reading via API, µs (target ≤ 5)', cpuPerReading, undefined, 'µs', undefined, 'target',
          `server ${load.watched.server!.toFixed(2)} cores at ${load.readingsPerSecond.toFixed(0)} readings/s (closed loop, ${run.lanes} devices × ${run.perRequest}/request)`, loadStats),
        line(NAME, `ack latency p99 at ${rate} req/s (½ max, open loop), ms (batching chosen for < 100)`, half.latency.p99, undefined, 'ms', undefined, 'target',
          `started once QuestDB had applied the full-speed run (${settled.waitedMs} ms after its last answer); ${half.requestsPerSecond.toFixed(0)} req/s answered of ${rate} scheduled (${half.late} late sends); server ${half.watched.server!.toFixed(2)} cores, QuestDB ${half.watched.questdb!.toFixed(2)}, others ${half.others.toFixed(2)}; p50 ${half.latency.p50.toFixed(1)} ms, max ${half.latency.max.toFixed(1)} ms; p99 per second: ${half.timeline.map((t) => t.p99.toFixed(0)).join(' ')} ms`,
          statsOf(half, 202, run.peakRssMiB)),
        line(NAME, 'peak RSS of our server at max rate', run.peakRssMiB, undefined, 'MiB'),
      ],
      details: {
        table, questdb: await questdbSetup(), lanes: run.lanes, readingsPerRequest: run.perRequest, settings: ingestSettings(), load, half, stored, acknowledged, verified,
        visibleAfterMs: visible.waitedMs, walTxn: stats.walTxn, meanBatch, client, raw, influx: peer, peakRssMiB: run.peakRssMiB, readingsPerSecond: load.readingsPerSecond,
      },
    }
  } finally {
    await run?.server.stop()
    await dropTable(table)
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}

/** Rounds of the InfluxDB comparison: ours (the first is the scenario's main run) and InfluxDB's, taking turns. */
const PEER_ROUNDS = 3
/**
 * Each further round of ours takes time slots this much later than the one before (a round spans seconds of them;
 * the half-rate run's start an hour later). Later, not earlier: QuestDB merges rows older than the table's newest
 * into its partition, rewriting the rows after them, so a round in earlier slots would land behind the whole main
 * run (its rounds took 399k–428k readings/s in earlier slots, 426k–453k in later ones, one run each).
 */
const ROUND_SLOTS_MS = 10 * 60_000

interface PeerRounds { ours: LoadResult[]; influx: LoadResult[]; stored: number }

/**
 * The same closed loop (devices, batches, timestamps) against a private InfluxDB's /write, in rounds taking turns
 * with our server (InfluxDB, ours, InfluxDB, ours, InfluxDB after the main run): one after the other, the two moved
 * by a sixth from run to run on this box (0.73 to 0.95 on unchanged code within an hour, 2026-11-28), so the line is
 * the median round of each. Before each InfluxDB round QuestDB has applied ours, so its WAL work is not in
 * InfluxDB's window. Undefined when influxd is absent.
 */
async function influxRounds(ctx: Parameters<Scenario>[0], run: IngestRun, table: string): Promise<PeerRounds | undefined> {
  if (!INFLUXD) {
    ctx.log(`${NAME}: the InfluxDB peer is skipped: influxd is not installed (apt-get install influxdb)`)
    return undefined
  }
  const influx = await startInflux()
  const ours: LoadResult[] = []
  const rounds: LoadResult[] = []
  try {
    let ourTotal = run.load.totalReadings
    for (let round = 0; round < PEER_ROUNDS; round++) {
      const tsBase = run.tsBase + round * ROUND_SLOTS_MS
      if (round > 0) {
        ctx.log(`${NAME}: InfluxDB comparison, our round ${round + 1} of ${PEER_ROUNDS}…`)
        const load = await closedLoop(ctx, run, tsBase, { questdb: questdbJava })
        ours.push(load)
        ourTotal += load.totalReadings
      }
      await waitForCount(table, ourTotal)
      ctx.log(`${NAME}: InfluxDB comparison, InfluxDB's round ${round + 1} of ${PEER_ROUNDS} (line protocol to /write)…`)
      const load = await runLoad({
        url: influx.writeUrl, method: 'POST', lanes: run.lanes, mode: 'closed',
        warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, drainMs: 20_000,
        body: { kind: 'line-protocol', perRequest: run.perRequest, channels: CHANNELS, tsBase },
        // Labels, not keys: InfluxDB runs without authentication here; the device tag is the lane's key number.
        keys: run.keys.map((_, i) => String(i)), auth: 'none', countAccepted: false,
      }, ctx.generators, { influx: () => [influx.pid] })
      check(load, 204)
      rounds.push(load)
    }
    return { ours, influx: rounds, stored: await influx.count() }
  } finally {
    await influx.close()
  }
}

/**
 * ÷ InfluxDB: the median of the rounds' ratios, each round ours then InfluxDB's right after (ours: the main run and
 * the further rounds). Not each side's median round: in a run at 22:07 UTC on 2026-11-28 something else took the
 * box for two rounds (ours 248k, 24k, 282k readings/s; InfluxDB 112k, 64k, 319k), and the sides' medians made
 * 248k ÷ 112k = 2.22 of it, where the rounds' ratios (2.21, 0.38, 0.88) give 0.88 and the note shows the spread.
 */
function peerLine(main: LoadResult, peer: PeerRounds): Line {
  const rate = (load: LoadResult) => load.readingsPerSecond
  const pairs = [main, ...peer.ours].map((ours, i) => ({ ours, influx: peer.influx[i]! }))
  const ratio = (pair: (typeof pairs)[number]) => rate(pair.ours) / rate(pair.influx)
  const middle = medianBy(pairs, ratio)
  const sent = peer.influx.reduce((sum, load) => sum + load.totalReadings, 0)
  const rounds = pairs.map((pair) => `${(rate(pair.ours) / 1000).toFixed(0)}k / ${(rate(pair.influx) / 1000).toFixed(0)}k (${ratio(pair).toFixed(2)})`).join(', ')
  return line(NAME, 'readings/s via API ÷ InfluxDB 1.6 /write (same generator, line protocol)', rate(middle.ours), rate(middle.influx), 'rows/s', undefined, 'target',
    `information (no target): the median of ${pairs.length} rounds' ratios, each round ours then InfluxDB's, ours / InfluxDB ${rounds} readings/s; ${peer.stored} of ${sent} readings InfluxDB was sent countable afterwards; InfluxDB in the median round: 204 to ${middle.influx.okRequests} requests in the window, influxd ${middle.influx.watched.influx!.toFixed(2)} cores, generator ${middle.influx.cpu.toFixed(2)}, others ${middle.influx.others.toFixed(2)}, p99 ${middle.influx.latency.p99.toFixed(1)} ms`,
    statsOf(middle.influx, 204))
}
