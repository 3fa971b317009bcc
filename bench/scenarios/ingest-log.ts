// Ingest through the durable ingest log (issue 22): readings/s through our API with INGEST_LOG (a private
// nats-server, R1, the writer in the server process) on the QuestDB store ÷ the direct path of ingest-questdb
// (measured by that scenario earlier in the same invocation, or here first when it did not run): target ≥ 0.8.
// With the log, a 202 comes before the store has the readings, and at full speed the acknowledgements can outrun
// the writer (the log holds the difference): the target line counts readings stored, from the load's first request
// until QuestDB shows the last one; the acknowledgement rate is reported beside it.
// Then, at half the stored rate (open loop): the acknowledgement's p99, and the visibility lag, from a reading's 202 to
// QuestDB answering it to a query, p50 and p99 over probes sent during the run (target p99 < 1 s). Server CPU per
// reading; NATS's CPU beside it. The log runs in three lanes (INGEST_LOG_LANES=3, issue 60), on the one node.
// Then the failover (issue 60): a 3-node cluster, the log in three R3 lanes; readings/s stored at full speed there,
// then an open loop at half that rate during which the node leading a lane is killed (SIGKILL): the longest wait
// for an acknowledgement across the kill, and every answer's status (the target: all 202, none slower than 1 s).
import { connect } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
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
/** Lanes of the log in both runs: one per node of the failover's cluster. */
const LANES = '3'

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
    const env = serverEnv(database, { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table, INGEST_LOG: nats.servers, INGEST_LOG_STREAM: 'BENCH', INGEST_LOG_LANES: LANES, ...ingestSettings() })
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

    await nats.close()
    nats = undefined
    const failover = await leaderKill(ctx, direct)

    const cpuPerReading = (load.watched.server! * 1e6) / load.readingsPerSecond
    const stats = statsOf(load, 202, run.peakRssMiB)
    const note = `${visible.count === acknowledged ? 'stored = acknowledged' : 'STORED ≠ ACKNOWLEDGED'} (${visible.count} of ${acknowledged}); the writer's store writes: ${writer.stored} stored, ${writer.failed} failed and redelivered; ${load.requestsPerSecond.toFixed(0)} req/s, p99 ${load.latency.p99.toFixed(1)} ms; during load: server ${load.watched.server!.toFixed(2)} cores, nats-server ${load.watched.nats!.toFixed(2)}, QuestDB ${load.watched.questdb!.toFixed(2)}, generator ${load.cpu.toFixed(2)}, others ${load.others.toFixed(2)}`
    return {
      lines: [
        line(NAME, 'readings/s stored via API with the ingest log ÷ direct to QuestDB', storedPerSecond, direct, 'rows/s', 0.8, 'target',
          `${LANES} lanes (R1, one node); baseline: ${directNote}; stored: ${load.totalReadings} readings acknowledged in ${ctx.warmupSeconds + ctx.seconds} s (warm-up and window) were all visible ${settled.waitedMs} ms after the last answer; acknowledged at ${Math.round(load.readingsPerSecond)} readings/s in the window (${(load.readingsPerSecond / direct).toFixed(2)} of the direct path); ${note}`, stats),
        line(NAME, 'server CPU per reading with the ingest log, µs', cpuPerReading, undefined, 'µs', undefined, 'target',
          `producer and writer in one process; nats-server ${((load.watched.nats! * 1e6) / load.readingsPerSecond).toFixed(1)} µs per reading beside it`, stats),
        line(NAME, `ack latency p99 at ${rate} req/s (½ max, open loop), ms`, half.latency.p99, undefined, 'ms', undefined, 'target',
          `${half.requestsPerSecond.toFixed(0)} req/s answered of ${rate} scheduled; p50 ${half.latency.p50.toFixed(1)} ms; server ${half.watched.server!.toFixed(2)} cores, nats-server ${half.watched.nats!.toFixed(2)}, QuestDB ${half.watched.questdb!.toFixed(2)}`, statsOf(half, 202, run.peakRssMiB)),
        line(NAME, 'visibility lag p99 at ½ max (202 → QuestDB answers it), ms (target < 1000)', pct(0.99), undefined, 'ms', undefined, 'target',
          `p50 ${pct(0.5).toFixed(0)} ms, max ${(lags.at(-1) ?? NaN).toFixed(0)} ms over ${lags.length} probes (each polled every 2 ms through QuestDB's HTTP /exec)`),
        ...failover.lines,
      ],
      details: { table, direct, load, half, lags, writer, storedPerSecond, failover: failover.details, settledMs: settled.waitedMs, peakRssMiB: run.peakRssMiB, readingsPerSecond: load.readingsPerSecond },
    }
  } finally {
    for (const t of tables) await dropTable(t).catch(() => {})
    for (const cleanup of cleanups) await cleanup().catch(() => {})
    await nats?.close()
  }
}

/**
 * The log in three R3 lanes on a 3-node cluster: the stored rate at full speed (÷ the direct path, no target: three
 * copies of every message on this machine's cores), then half that rate, open loop, with the node leading the first
 * lane killed a third into the window: the longest acknowledgement wait (from its scheduled send) is the failover
 * latency. Stored = acknowledged is checked after.
 */
async function leaderKill(ctx: Parameters<Scenario>[0], direct: number): Promise<{ lines: ReturnType<typeof line>[]; details: Record<string, unknown> }> {
  const label = `${NAME} (3-node cluster)`
  const nats = await startNats(3)
  const database = await freshDatabase('log_cluster')
  const table = freshTableName('log_cluster')
  const env = serverEnv(database, { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table, INGEST_LOG: nats.servers, INGEST_LOG_STREAM: 'BENCHC', INGEST_LOG_REPLICAS: '3', INGEST_LOG_LANES: LANES, ...ingestSettings() })
  const nc = await connect({ servers: nats.servers.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 250, pingInterval: 1_000, maxPingOut: 2 })
  try {
    const jsm = await jetstreamManager(nc, { timeout: 2_000 })
    const streams = Array.from({ length: Number(LANES) }, (_, i) => (i === 0 ? 'BENCHC' : `BENCHC_${i}`))
    const leaders = () => Promise.all(streams.map(async (name) => (await jsm.streams.info(name).catch(() => undefined))?.cluster?.leader))
    const natsPids = () => pidsNamed('nats-server')
    const run = await driveIngest(ctx, env, { questdb: questdbJava, nats: natsPids }, label)
    const { load, server } = run
    const settled = await waitForCount(table, load.totalReadings)
    const storedPerSecond = load.totalReadings / (ctx.warmupSeconds + ctx.seconds + settled.waitedMs / 1000)
    // The server keeps the lanes led from different nodes: wait until they are, so the kill takes one lane's leader.
    const spreadBy = Date.now() + 30_000
    let led = await leaders()
    while (!(led.every(Boolean) && new Set(led).size === streams.length) && Date.now() < spreadBy) { await Bun.sleep(250); led = await leaders() }
    const victim = nats.nodes.find((n) => n.name === led[0])
    if (!victim) throw new Error(`${label}: the first lane has no leader (${led.join(', ')})`)
    const rate = Math.max(1, Math.round(storedPerSecond / run.perRequest / 2))
    // Long enough to see the lane's new leader elected (4 to 7 s in nats-server 2.9) inside the window.
    const durationMs = Math.max(ctx.seconds, 12) * 1000
    ctx.log(`${label}: open loop at ${rate} req/s for ${durationMs / 1000} s; ${victim.name}, leading ${streams[0]}, killed ${Math.round(durationMs / 3000)} s in…`)
    let killedAt = 0
    let electedMs = NaN
    const killing = (async () => {
      await Bun.sleep(ctx.warmupSeconds * 1000 + durationMs / 3)
      killedAt = performance.now()
      await victim.kill()
      // When the lost lane has a leader again: what a device would have waited for with one lane.
      while (performance.now() - killedAt < 30_000) {
        const [leader] = await leaders()
        if (leader && leader !== victim.name) { electedMs = performance.now() - killedAt; break }
        await Bun.sleep(100)
      }
    })()
    const [half] = await Promise.all([runLoad({
      url: `${server.baseUrl}/api/v1/sensors/readings`, method: 'POST', lanes: MAX_IN_FLIGHT, mode: 'open', rate,
      warmupMs: ctx.warmupSeconds * 1000, durationMs, drainMs: 20_000,
      body: { kind: 'readings', perRequest: run.perRequest, channels: CHANNELS, tsBase: run.tsBase + 3_600_000 },
      keys: run.keys, auth: 'header', countAccepted: true,
    }, ctx.generators, { server: () => [server.pid], questdb: questdbJava, nats: natsPids }), killing]) as [LoadResult, void]
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text()
    const failovers = [...metrics.matchAll(/^hrs_ingest_log_failovers_total\{lane="([^"]+)"\} (\d+)/gm)].map((m) => `${m[1]} ${m[2]}`).join(', ') || 'none'
    // Drained by the server's writer before it stops: the lane whose leader was killed may still hold messages (its
    // consumer elects a leader too), which no writer would take once the server is gone.
    const acknowledged = load.totalReadings + half.totalReadings
    const visible = await waitForCount(table, acknowledged)
    await server.stop()
    const statuses = JSON.stringify(half.statuses)
    const stored = visible.count === acknowledged ? 'stored = acknowledged' : 'STORED ≠ ACKNOWLEDGED'
    ctx.log(`${label}: longest wait ${half.latency.max.toFixed(0)} ms, statuses ${statuses}, lane re-elected in ${electedMs.toFixed(0)} ms, failovers ${failovers}; ${stored} (${visible.count} of ${acknowledged})`)
    return {
      lines: [
        line(NAME, `readings/s stored via API, log in ${LANES} R3 lanes on a 3-node cluster ÷ direct to QuestDB`, storedPerSecond, direct, 'rows/s', undefined, 'target',
          `all three nats-servers on this machine (every message stored three times); ${load.totalReadings} readings all visible ${settled.waitedMs} ms after the last answer; server ${load.watched.server!.toFixed(2)} cores, nats-servers ${load.watched.nats!.toFixed(2)}, QuestDB ${load.watched.questdb!.toFixed(2)}`, statsOf(load, 202, run.peakRssMiB)),
        line(NAME, `failover latency: longest ack wait across a lane leader's SIGKILL at ${rate} req/s (½ max, open loop, 3 R3 lanes), ms (target < 1000)`, half.latency.max, undefined, 'ms', undefined, 'target',
          `statuses ${statuses} (target: all 202); p99 ${half.latency.p99.toFixed(1)} ms; the killed node led ${streams[0]}, whose new leader was elected ${electedMs.toFixed(0)} ms after the kill (a single stream's outage); the server's failovers by lane: ${failovers}; ${stored} (${visible.count} of ${acknowledged})`, statsOf(half, 202, run.peakRssMiB)),
      ],
      details: { table, load, half, storedPerSecond, settledMs: settled.waitedMs, electedMs, failovers, victim: victim.name, visible: visible.count, acknowledged },
    }
  } finally {
    await nc.close().catch(() => {})
    await dropTable(table).catch(() => {})
    await database.drop().catch(() => {})
    await cleanRedis(env.REDIS_PREFIX!).catch(() => {})
    await nats.close()
  }
}
