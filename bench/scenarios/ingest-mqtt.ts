// Devices over MQTT (issue 23): readings/s published at QoS 1 (128 devices, 100 readings per publish, each device
// on its own connection, the next publish once the PUBACK is in) ÷ the same load over HTTP POST /sensors/readings,
// in the same run, each on a fresh database and server: target ≥ 1.0 (MQTT has no per-request HTTP cost). On the SQL
// store, and on QuestDB when one answers on loopback. Server CPU per reading for both; then MQTT at half its
// maximum rate (open loop): the PUBACK's p99. Stored = acknowledged is checked for both transports. The note gives
// each transport's readings per store write over the closed loop (the group commit's batches, from /metrics; one
// worker's with WORKERS > 1), so that a difference in batching between the transports shows.
import { freePort } from '../lib/processes.ts'
import { ingestSettings, serverMetrics, storedReadings } from '../lib/ingest.ts'
import { runLoad, statsOf, type LoadResult } from '../lib/load.ts'
import { dropTable, freshTableName, QUESTDB_HTTP, QUESTDB_ILP, QUESTDB_PG_URL, questdbAnswers, questdbJava, waitForCount } from '../lib/questdb.ts'
import { line, needsLocalServer, type Line, type Scenario, type ScenarioContext } from '../lib/report.ts'
import { cleanRedis, freshDatabase, serverEnv } from '../lib/setup.ts'
import { check } from './http-layer.ts'
import { CHANNELS, driveIngest, type IngestRun } from './ingest-postgres.ts'
import { MAX_IN_FLIGHT } from './latency.ts'

const NAME = 'ingest-mqtt'

interface TransportRun { run: IngestRun; half?: LoadResult; stored: number; acknowledged: number; writes: StoreWrites }

/** The group commit's writes to the readings store so far, from the server's /metrics (hrs_ingest_flush_readings). */
interface StoreWrites { writes: number; readings: number }

async function storeWrites(baseUrl: string): Promise<StoreWrites> {
  const value = await serverMetrics(baseUrl)
  return { writes: value('hrs_ingest_flush_readings_count'), readings: value('hrs_ingest_flush_readings_sum') }
}

const perWrite = ({ writes, readings }: StoreWrites) => (readings / writes).toFixed(0)

/** One transport on one store: a fresh database (and QuestDB table), our server with its MQTT listener, the load. */
async function measure(ctx: ScenarioContext, store: 'sql' | 'questdb', over: 'http' | 'mqtt'): Promise<TransportRun> {
  const database = await freshDatabase(`mqtt_${over}`)
  const table = store === 'questdb' ? freshTableName(`mqtt_${over}`) : undefined
  const env = serverEnv(database, { MQTT_PORT: String(freePort()), ...(table ? { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table } : {}), ...ingestSettings() })
  let run: IngestRun | undefined
  try {
    run = await driveIngest(ctx, env, store === 'questdb' ? { questdb: questdbJava } : {}, `${NAME} ${over} (${store})`, undefined, over)
    // The closed loop's writes (warm-up included): the group commit makes fewer, larger writes the faster readings come.
    const writes = await storeWrites(run.server.baseUrl)
    let half: LoadResult | undefined
    if (over === 'mqtt') {
      const rate = Math.max(1, Math.round(run.load.requestsPerSecond / 2))
      ctx.log(`${NAME}: MQTT open loop at ${rate} publishes/s (half of the maximum)…`)
      const server = run.server
      half = await runLoad({
        url: '', method: 'POST', lanes: Math.min(MAX_IN_FLIGHT, run.lanes), mode: 'open', rate,
        warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, drainMs: 20_000,
        body: { kind: 'readings', perRequest: run.perRequest, channels: CHANNELS, tsBase: run.tsBase + 3_600_000 },
        keys: run.keys, auth: 'header', countAccepted: true,
        mqtt: { url: `mqtt://127.0.0.1:${env.MQTT_PORT}`, deviceIds: run.deviceIds },
      }, ctx.generators, { server: () => [server.pid] })
      check(half, 'puback')
    }
    await run.server.stop()
    const acknowledged = run.load.totalReadings + (half?.totalReadings ?? 0)
    const stored = table ? (await waitForCount(table, acknowledged)).count : (await storedReadings(database.url)).stored
    return { run, half, stored, acknowledged, writes }
  } finally {
    await run?.server.stop()
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
    if (table) await dropTable(table)
  }
}

const cpuPerReading = (load: LoadResult) => (load.watched.server! * 1e6) / load.readingsPerSecond

export const ingestMqtt: Scenario = async (ctx) => {
  if (ctx.options.target) return needsLocalServer()
  const stores: ('sql' | 'questdb')[] = ['sql']
  if (await questdbAnswers()) stores.push('questdb')
  else ctx.log(`${NAME}: QuestDB skipped (none answers at ${QUESTDB_HTTP})`)
  const lines: Line[] = []
  const details: Record<string, unknown> = {}
  for (const store of stores) {
    const http = await measure(ctx, store, 'http')
    const mqtt = await measure(ctx, store, 'mqtt')
    const { load } = mqtt.run
    const verified = (r: TransportRun) => (r.stored === r.acknowledged ? 'stored = acknowledged' : `STORED ${r.stored} ≠ ACKNOWLEDGED ${r.acknowledged}`)
    const note = `MQTT: ${verified(mqtt)}, server ${load.watched.server!.toFixed(2)} cores (${cpuPerReading(load).toFixed(2)} µs CPU/reading), generator ${load.cpu.toFixed(2)}, others ${load.others.toFixed(2)}, PUBACK p99 ${load.latency.p99.toFixed(1)} ms at full speed, ${perWrite(mqtt.writes)} readings per store write; ` +
      `HTTP: ${verified(http)}, server ${http.run.load.watched.server!.toFixed(2)} cores (${cpuPerReading(http.run.load).toFixed(2)} µs CPU/reading), generator ${http.run.load.cpu.toFixed(2)}, others ${http.run.load.others.toFixed(2)}, p99 ${http.run.load.latency.p99.toFixed(1)} ms, ${perWrite(http.writes)} readings per store write`
    lines.push(line(NAME, `readings/s over MQTT QoS 1 ÷ over HTTP (${mqtt.run.lanes} devices × ${mqtt.run.perRequest}/publish, ${store} store)`, load.readingsPerSecond, http.run.load.readingsPerSecond, 'rows/s', 1.0, 'target', note, statsOf(load, 'puback', mqtt.run.peakRssMiB)))
    lines.push(line(NAME, `server CPU per reading, MQTT ÷ HTTP (${store} store)`, cpuPerReading(load), cpuPerReading(http.run.load), 'µs', undefined, 'target'))
    if (mqtt.half) {
      lines.push(line(NAME, `PUBACK latency p99 at half the maximum rate (${store} store)`, mqtt.half.latency.p99, undefined, 'ms', undefined, 'target',
        `open loop at ${(mqtt.half.requestsPerSecond).toFixed(0)} publishes/s (${mqtt.half.late} late); p50 ${mqtt.half.latency.p50.toFixed(1)} ms, p95 ${mqtt.half.latency.p95.toFixed(1)} ms, max ${mqtt.half.latency.max.toFixed(1)} ms`))
    }
    details[store] = { mqtt: { load, half: mqtt.half, stored: mqtt.stored, acknowledged: mqtt.acknowledged, writes: mqtt.writes }, http: { load: http.run.load, stored: http.stored, acknowledged: http.acknowledged, writes: http.writes } }
  }
  return { lines, details }
}
