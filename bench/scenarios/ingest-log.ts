// Ingest through the durable ingest log (issue 22): readings/s through our API with INGEST_LOG (a private
// nats-server, R1, the writer in the server process) on the QuestDB store ÷ the direct path of ingest-questdb
// (measured by that scenario earlier in the same invocation, or here first when it did not run): target ≥ 0.8.
// With the log, a 202 comes before the store has the readings, and at full speed the acknowledgements can outrun
// the writer (the log holds the difference): the target line counts readings stored, from the load's first request
// until QuestDB shows the last one; the acknowledgement rate is reported beside it.
// Then, at half the stored rate (open loop): the acknowledgement's p99, and the visibility lag, from a reading's 202 to
// QuestDB answering it to a query, p50 and p99 over probes sent during the run (target p99 < 1 s). Server CPU per
// reading; NATS's CPU beside it.
import { startNats, NATS_SERVER, type NatsDeployment } from '../lib/nats.ts'
import { ingestSettings } from '../lib/ingest.ts'
import { runLoad, pidsNamed, statsOf, type LoadResult } from '../lib/load.ts'
import { dropTable, exec, freshTableName, QUESTDB_HTTP, QUESTDB_ILP, QUESTDB_PG_URL, questdbAnswers, questdbJava, waitForCount } from '../lib/questdb.ts'
import { line, needsLocalServer, type Scenario } from '../lib/report.ts'
import { cleanRedis, freshDatabase, serverEnv } from '../lib/setup.ts'
import { check } from './http-layer.ts'
import { CHANNELS, driveIngest, type IngestRun } from './ingest-postgres.ts'
import { MAX_IN_FLIGHT } from './latency.ts'

const NAME = 'ingest-log'
/** Visibility probes during the half-rate run, one after another. */
const PROBES = 40

/**
 * The writer's store writes by outcome, from the server's /metrics. A failed one is redelivered a second later, so
 * failures show only as a lower stored rate: 23 deadlocks in series registration (fixed in 22dc6d4) once took a run
 * from about 1.1 to 0.56 of the direct path with nothing else to tell why.
 */
async function writerBatchesOf(baseUrl: string): Promise<{ stored: number; failed: number }> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text()
  if (!text.includes('hrs_ingest_log_writer_batches_total')) throw new Error(`ingest-log: the server's /metrics has no writer batches: ${text.slice(0, 200)}`)
  const count = (outcome: string) => Number(new RegExp(`^hrs_ingest_log_writer_batches_total\\{outcome="${outcome}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0)
  return { stored: count('stored'), failed: count('failed') }
}

export const ingestLog: Scenario = async (ctx) => {
  if (ctx.options.target) return needsLocalServer()
  if (!NATS_SERVER) return { lines: [], details: {}, skipped: 'nats-server is not installed (apt-get install nats-server)' }
  if (!(await questdbAnswers())) return { lines: [], details: {}, skipped: `no QuestDB answers at ${QUESTDB_HTTP} (start one on loopback, or point BENCH_QUESTDB_HTTP at it)` }
  const tables: string[] = []
  const cleanups: (() => Promise<void>)[] = []
  let nats: NatsDeployment | undefined
  try {
    // The baseline: ingest-questdb's direct path from this invocation, or measured here the same way.
    let direct = ctx.earlier.get('ingest-questdb')?.details.readingsPerSecond as number | undefined
    let directNote = 'ingest-questdb earlier in this invocation'
    if (direct === undefined) {
      const database = await freshDatabase('log_direct')
      const table = freshTableName('direct')
      tables.push(table)
      const env = serverEnv(database, { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table, ...ingestSettings() })
      cleanups.push(async () => { await database.drop(); await cleanRedis(env.REDIS_PREFIX!) })
      const run = await driveIngest(ctx, env, { questdb: questdbJava }, `${NAME} (direct)`)
      await run.server.stop()
      direct = run.load.readingsPerSecond
      directNote = 'the direct path measured first in this scenario'
    }

    nats = await startNats(1)
    const database = await freshDatabase('log')
    const table = freshTableName('log')
    tables.push(table)
    const env = serverEnv(database, { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table, INGEST_LOG: nats.servers, INGEST_LOG_STREAM: 'BENCH', ...ingestSettings() })
    cleanups.push(async () => { await database.drop(); await cleanRedis(env.REDIS_PREFIX!) })
    const natsPids = () => pidsNamed('nats-server')
    const run: IngestRun = await driveIngest(ctx, env, { questdb: questdbJava, nats: natsPids }, NAME)
    const { load, server } = run
    const settled = await waitForCount(table, load.totalReadings)
    ctx.log(`${NAME}: the full-speed run's readings were all visible ${settled.waitedMs} ms after its last answer`)
    // Stored readings per second over the whole run: warm-up and window, plus the wait until the last was visible.
    const storedPerSecond = load.totalReadings / (ctx.warmupSeconds + ctx.seconds + settled.waitedMs / 1000)

    // Half the rate readings were stored at, as the README says: half the acknowledgement rate can be more than the
    // store takes (at 2026-11-27's 879,560 readings/s acknowledged, 420,355 stored), and the lag then grows for as
    // long as the run lasts, whatever the writer does.
    const rate = Math.max(1, Math.round(storedPerSecond / run.perRequest / 2))
    ctx.log(`${NAME}: open loop at ${rate} req/s (half the rate readings were stored at), with ${PROBES} visibility probes…`)
    const halfRun = runLoad({
      url: `${server.baseUrl}/api/v1/sensors/readings`, method: 'POST', lanes: MAX_IN_FLIGHT, mode: 'open', rate,
      warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, drainMs: 20_000,
      body: { kind: 'readings', perRequest: run.perRequest, channels: CHANNELS, tsBase: run.tsBase + 3_600_000 },
      keys: run.keys, auth: 'header', countAccepted: true,
    }, ctx.generators, { server: () => [server.pid], questdb: questdbJava, nats: natsPids })
    // Probes: one reading on the first device at a timestamp of its own, acknowledged, then polled for in QuestDB.
    const lags: number[] = []
    const probeBase = run.tsBase - 3_600_000
    const probing = (async () => {
      await Bun.sleep(ctx.warmupSeconds * 1000)
      const spacing = (ctx.seconds * 1000) / PROBES
      for (let i = 0; i < PROBES; i++) {
        const started = performance.now()
        const response = await fetch(`${server.baseUrl}/api/v1/sensors/readings`, {
          method: 'POST', headers: { authorization: `Bearer ${run.keys[0]}`, 'content-type': 'application/json' },
          body: JSON.stringify({ readings: [{ channel: 'c0', value: i, ts: probeBase + i }] }),
        })
        await response.arrayBuffer()
        if (response.status !== 202) continue
        const acked = performance.now()
        const at = new Date(probeBase + i).toISOString()
        for (const deadline = acked + 10_000; performance.now() < deadline;) {
          const found = await exec(`select count() from '${table}' where device_id = '${run.deviceIds[0]}' and ts = '${at}'`)
          if (Number(found.dataset?.[0]?.[0] ?? 0) > 0) { lags.push(performance.now() - acked); break }
          await Bun.sleep(2)
        }
        const next = started + spacing
        if (performance.now() < next) await Bun.sleep(next - performance.now())
      }
    })()
    const [half] = await Promise.all([halfRun, probing]) as [LoadResult, void]
    check(half, 202)
    const writer = await writerBatchesOf(server.baseUrl)
    await server.stop()
    // Every acknowledged reading reaches QuestDB (the probes included): stored = acknowledged.
    const acknowledged = load.totalReadings + half.totalReadings + lags.length
    const visible = await waitForCount(table, acknowledged)
    lags.sort((a, b) => a - b)
    const pct = (p: number) => lags[Math.min(lags.length - 1, Math.ceil(lags.length * p) - 1)] ?? NaN

    const cpuPerReading = (load.watched.server! * 1e6) / load.readingsPerSecond
    const stats = statsOf(load, 202, run.peakRssMiB)
    const note = `${visible.count === acknowledged ? 'stored = acknowledged' : 'STORED ≠ ACKNOWLEDGED'} (${visible.count} of ${acknowledged}); the writer's store writes: ${writer.stored} stored, ${writer.failed} failed and redelivered; ${load.requestsPerSecond.toFixed(0)} req/s, p99 ${load.latency.p99.toFixed(1)} ms; during load: server ${load.watched.server!.toFixed(2)} cores, nats-server ${load.watched.nats!.toFixed(2)}, QuestDB ${load.watched.questdb!.toFixed(2)}, generator ${load.cpu.toFixed(2)}, others ${load.others.toFixed(2)}`
    return {
      lines: [
        line(NAME, 'readings/s stored via API with the ingest log ÷ direct to QuestDB', storedPerSecond, direct, 'rows/s', 0.8, 'target',
          `baseline: ${directNote}; stored: ${load.totalReadings} readings acknowledged in ${ctx.warmupSeconds + ctx.seconds} s (warm-up and window) were all visible ${settled.waitedMs} ms after the last answer; acknowledged at ${Math.round(load.readingsPerSecond)} readings/s in the window (${(load.readingsPerSecond / direct).toFixed(2)} of the direct path); ${note}`, stats),
        line(NAME, 'server CPU per reading with the ingest log, µs', cpuPerReading, undefined, 'µs', undefined, 'target',
          `producer and writer in one process; nats-server ${((load.watched.nats! * 1e6) / load.readingsPerSecond).toFixed(1)} µs per reading beside it`, stats),
        line(NAME, `ack latency p99 at ${rate} req/s (½ max, open loop), ms`, half.latency.p99, undefined, 'ms', undefined, 'target',
          `${half.requestsPerSecond.toFixed(0)} req/s answered of ${rate} scheduled; p50 ${half.latency.p50.toFixed(1)} ms; server ${half.watched.server!.toFixed(2)} cores, nats-server ${half.watched.nats!.toFixed(2)}, QuestDB ${half.watched.questdb!.toFixed(2)}`, statsOf(half, 202, run.peakRssMiB)),
        line(NAME, 'visibility lag p99 at ½ max (202 → QuestDB answers it), ms (target < 1000)', pct(0.99), undefined, 'ms', undefined, 'target',
          `p50 ${pct(0.5).toFixed(0)} ms, max ${(lags.at(-1) ?? NaN).toFixed(0)} ms over ${lags.length} probes (each polled every 2 ms through QuestDB's HTTP /exec)`),
      ],
      details: { table, direct, load, half, lags, writer, storedPerSecond, settledMs: settled.waitedMs, peakRssMiB: run.peakRssMiB, readingsPerSecond: load.readingsPerSecond },
    }
  } finally {
    for (const t of tables) await dropTable(t).catch(() => {})
    for (const cleanup of cleanups) await cleanup().catch(() => {})
    await nats?.close()
  }
}
