// Ingest on the SQL store (Postgres): readings/s accepted-and-stored through our API (the real server, many
// devices posting 100 readings at a time) ÷ one `COPY` of the same rows into the same indexed table of another
// fresh database. At the end the stored row count must equal what the API acknowledged.
import { join } from 'node:path'
import type { CopyConfig } from '../baselines/pg-copy.ts'
import type { StoreConfig } from '../baselines/pg-store.ts'
import type { RowsSpec } from '../baselines/rows.ts'
import { childrenOf, COPY_SCRIPT, ingestSettings, migrated, othersOf, storedReadings, type BaselineResult } from '../lib/ingest.ts'
import { pidsNamed, runLoad, statsOf, type LoadResult } from '../lib/load.ts'
import { BUN, ROOT, ourServer, peakRssMiB, runForResult, startServer, type Child } from '../lib/processes.ts'
import { line, needsLocalServer, type Line, type Scenario, type ScenarioContext } from '../lib/report.ts'
import { accountAndToken, cleanRedis, createDevices, freshDatabase, metricOf, serverEnv } from '../lib/setup.ts'
import { loadConfig } from '../../src/config.ts'
import { check } from './http-layer.ts'

const NAME = 'ingest-postgres'
const STORE_SCRIPT = join(ROOT, 'bench', 'baselines', 'pg-store.ts')
/** Readings per request unless --batch says otherwise. */
export const READINGS_PER_REQUEST = Number(process.env.BENCH_READINGS_PER_REQUEST || 100)
export const CHANNELS = 10
/** Devices (one lane each) unless --concurrency says otherwise. */
export const LANES = Number(process.env.BENCH_INGEST_LANES || 128)

// Scenarios that build on this one import ingestSettings from here.
export { ingestSettings }

export interface IngestRun {
  load: LoadResult
  /** Devices (lanes) and readings per request the run used: --concurrency and --batch, or the defaults. */
  lanes: number
  perRequest: number
  accountId: string
  deviceIds: string[]
  keys: string[]
  tsBase: number
  peakRssMiB: number
  server: Child
}

/**
 * Starts our server, makes one device per lane, and drives closed-loop ingest at full speed: ctx.options
 * .concurrency devices (default LANES) posting ctx.options.batch readings per request (default READINGS_PER_REQUEST).
 */
export async function driveIngest(
  ctx: ScenarioContext, env: Record<string, string>, watch: Record<string, () => number[]>, label: string,
  /** Runs once the devices exist, before the load (e.g. the alert rules of ingest-alerts). */
  prepare?: (setup: { baseUrl: string; token: string; accountId: string; devices: { id: string; key: string }[] }) => Promise<void>,
  /** `mqtt`: the devices publish the same bodies at QoS 1 to the server's MQTT listener (env.MQTT_PORT) instead. */
  over: 'http' | 'mqtt' = 'http',
): Promise<IngestRun> {
  const lanes = ctx.options.concurrency ?? LANES
  const perRequest = ctx.options.batch ?? READINGS_PER_REQUEST
  const { accountId, token } = await accountAndToken(env)
  const server = await startServer('our server', ourServer('src/main.ts', label), env)
  const devices = await createDevices(server.baseUrl, token, lanes, CHANNELS)
  await prepare?.({ baseUrl: server.baseUrl, token, accountId, devices })
  const tsBase = Date.now() - 2 * 3_600_000
  ctx.log(`${label}: ${lanes} devices ${over === 'mqtt' ? 'publishing (MQTT, QoS 1)' : 'posting'} ${perRequest} readings per request, closed loop…`)
  // WORKERS > 1: the server pid is the supervisor; its workers are its children.
  const serverPids = () => [server.pid, ...childrenOf(server.pid)]
  const run = { lanes, perRequest, accountId, deviceIds: devices.map((d) => d.id), keys: devices.map((d) => d.key), tsBase, server }
  const load = await closedLoop(ctx, run, tsBase, watch, over, env.MQTT_PORT)
  const peak = Math.max(...serverPids().map(peakRssMiB))
  return { ...run, load, peakRssMiB: peak }
}

/**
 * The closed loop of driveIngest on a server it started: every device posting (or publishing) at full speed,
 * readings from `tsBase` on (another round on the same devices takes other time slots, or its readings would
 * replace the earlier ones).
 */
export async function closedLoop(
  ctx: ScenarioContext, run: Omit<IngestRun, 'load' | 'peakRssMiB'>, tsBase: number, watch: Record<string, () => number[]>,
  over: 'http' | 'mqtt' = 'http', mqttPort?: string,
): Promise<LoadResult> {
  const { server } = run
  const load = await runLoad({
    url: `${server.baseUrl}/api/v1/sensors/readings`, method: 'POST', lanes: run.lanes,
    warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, mode: 'closed', drainMs: 20_000,
    body: { kind: 'readings', perRequest: run.perRequest, channels: CHANNELS, tsBase },
    keys: run.keys, auth: 'header', countAccepted: true,
    mqtt: over === 'mqtt' ? { url: `mqtt://127.0.0.1:${mqttPort}`, deviceIds: run.deviceIds } : undefined,
  }, ctx.generators, { server: () => [server.pid, ...childrenOf(server.pid)], ...watch })
  check(load, over === 'mqtt' ? 'puback' : 202)
  return load
}

/**
 * The time-series store must be the fast one (issue 12): readings/s through the API into QuestDB ÷ into Postgres,
 * both from this invocation. Made by whichever of ingest-questdb and ingest-postgres runs second.
 */
export function pathRatioLine(ctx: ScenarioContext, ours: { questdb?: number; postgres?: number }): Line | undefined {
  const questdb = ours.questdb ?? (ctx.earlier.get('ingest-questdb')?.details.readingsPerSecond as number | undefined)
  const postgres = ours.postgres ?? (ctx.earlier.get('ingest-postgres')?.details.readingsPerSecond as number | undefined)
  if (questdb === undefined || postgres === undefined) return undefined
  return line('ingest-questdb', 'readings/s via API: QuestDB path ÷ Postgres path (same devices and batches)', questdb, postgres, 'rows/s', 1.5, 'target',
    `both through our server, closed loop, measured in this invocation by ingest-questdb and ingest-postgres`)
}

export const ingestPostgres: Scenario = async (ctx) => {
  // COPY, its baseline, goes into this machine's Postgres: our server has to write into the same one.
  if (ctx.options.target) return needsLocalServer()
  const ours = await freshDatabase('pg_ours')
  const copyDb = await freshDatabase('pg_copy')
  const storeDb = await freshDatabase('pg_store')
  const env = serverEnv(ours, ingestSettings())
  let run: IngestRun | undefined
  try {
    run = await driveIngest(ctx, env, { postgres: () => pidsNamed('postgres') }, NAME)
    const { load } = run
    await run.server.stop()
    const { stored, batches } = await storedReadings(ours.url)
    const meanBatch = Math.max(1, Math.round(stored / Math.max(1, batches)))

    const spec: RowsSpec = {
      accountId: run.accountId, deviceIds: run.deviceIds, perRequest: run.perRequest, channels: CHANNELS,
      tsBase: run.tsBase, rows: load.totalReadings, metrics: Array.from({ length: CHANNELS }, (_, c) => metricOf(c)),
    }
    ctx.log(`${NAME}: COPY of the same ${spec.rows} rows into a fresh database…`)
    await migrated(copyDb)
    const copy = await runForResult<BaselineResult>('COPY baseline', [BUN, COPY_SCRIPT, JSON.stringify({ databaseUrl: copyDb.url, spec } satisfies CopyConfig)])
    const inFlight = loadConfig(env).ingestFlushConcurrency
    ctx.log(`${NAME}: the same rows through the SQL store's write() alone (${meanBatch} rows per batch, ${inFlight} in flight)…`)
    await migrated(storeDb)
    const direct = await runForResult<BaselineResult>('store baseline', [BUN, STORE_SCRIPT, JSON.stringify({ databaseUrl: storeDb.url, spec, batch: meanBatch, inFlight } satisfies StoreConfig)])

    const verified = stored === load.totalReadings && copy.stored === copy.rows && direct.stored === direct.rows
    const note = `${stored === load.totalReadings ? 'stored = acknowledged' : 'STORED ≠ ACKNOWLEDGED'} (${stored} rows stored, ${load.totalReadings} acknowledged incl. warm-up, in ${batches} INSERTs, mean ${meanBatch} rows); ` +
      `during load: server ${load.watched.server!.toFixed(2)} cores (${((load.watched.server! * 1e6) / load.readingsPerSecond).toFixed(1)} µs CPU/reading), postgres ${load.watched.postgres!.toFixed(2)} (${((load.watched.postgres! * 1e6) / load.readingsPerSecond).toFixed(1)} µs/reading), generator ${load.cpu.toFixed(2)}, others ${load.others.toFixed(2)}; ` +
      `COPY: client ${copy.cpu.toFixed(2)} cores, its backend ${copy.backendCpu.toFixed(2)} (${((copy.backendCpu * 1e6) / copy.rowsPerSecond).toFixed(1)} µs/row), others ${othersOf(copy).toFixed(2)}, ${copy.ms.toFixed(0)} ms; ` +
      `${load.requestsPerSecond.toFixed(0)} req/s, p99 ${load.latency.p99.toFixed(1)} ms`
    const stats = statsOf(load, 202, run.peakRssMiB)
    return {
      lines: [
        line(NAME, `readings/s via API (${run.lanes} devices × ${run.perRequest}/req) ÷ COPY`, load.readingsPerSecond, copy.rowsPerSecond, 'rows/s', 0.8, 'target', note, stats),
        line(NAME, `readings/s via API ÷ store write() alone (${meanBatch}/batch, ${inFlight} in flight)`, load.readingsPerSecond, direct.rowsPerSecond, 'rows/s', undefined, 'target',
          `store alone: client ${direct.cpu.toFixed(2)} cores, backends ${direct.backendCpu.toFixed(2)} cores (${((direct.backendCpu * 1e6) / direct.rowsPerSecond).toFixed(1)} µs/row), others ${othersOf(direct).toFixed(2)}, ${direct.ms.toFixed(0)} ms; store alone ÷ COPY = ${(direct.rowsPerSecond / copy.rowsPerSecond).toFixed(2)}`, stats),
        line(NAME, 'peak RSS of our server at max rate', run.peakRssMiB, undefined, 'MiB'),
        ...[pathRatioLine(ctx, { postgres: load.readingsPerSecond })].filter((l): l is Line => l !== undefined),
      ],
      details: {
        readingsPerSecond: load.readingsPerSecond,
        lanes: run.lanes, readingsPerRequest: run.perRequest, settings: ingestSettings(), load, stored, acknowledged: load.totalReadings, verified,
        batches, meanBatch, copy, storeAlone: direct, peakRssMiB: run.peakRssMiB,
        maxRequestsPerSecond: load.requestsPerSecond,
      },
    }
  } finally {
    await run?.server.stop()
    await ours.drop()
    await copyDb.drop()
    await storeDb.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}

export type { LoadResult }
