// Acknowledgement latency of POST /sensors/readings (Postgres store) at half of the maximum rate, from a paced
// open-loop generator (latency counts from each request's scheduled time), and the server's peak RSS (VmHWM).
// The maximum comes from ingest-postgres when it ran in this invocation, otherwise from a short probe here.
import { pidsNamed, runLoad, statsOf } from '../lib/load.ts'
import { peakRssMiB, resetPeakRss, type Child } from '../lib/processes.ts'
import { line, needsLocalServer, type Scenario } from '../lib/report.ts'
import { cleanRedis, freshDatabase, serverEnv } from '../lib/setup.ts'
import { check } from './http-layer.ts'
import { CHANNELS, driveIngest, ingestSettings, type IngestRun } from './ingest-postgres.ts'

const NAME = 'latency'
/** Requests allowed in flight before the open loop counts a request as late rather than queue it. */
export const MAX_IN_FLIGHT = 512

export const latency: Scenario = async (ctx) => {
  // Its rate is half of the maximum measured on a server it starts, and it reads that server's peak RSS.
  if (ctx.options.target) return needsLocalServer()
  const database = await freshDatabase('latency')
  const env = serverEnv(database, ingestSettings())
  let probe: IngestRun | undefined
  let server: Child | undefined
  try {
    const earlier = ctx.earlier.get('ingest-postgres')?.details.maxRequestsPerSecond as number | undefined
    // The probe also sets up the account, the devices and a running server; with an earlier maximum it is short.
    probe = await driveIngest({ ...ctx, seconds: earlier ? 1 : ctx.seconds, warmupSeconds: earlier ? 0.5 : ctx.warmupSeconds }, env, {}, `${NAME} (${earlier ? 'warm-up' : 'probing the maximum rate'})`)
    server = probe.server
    const max = earlier ?? probe.load.requestsPerSecond
    const rate = Math.max(1, Math.round(max / 2))
    ctx.log(`${NAME}: open loop at ${rate} req/s (half of ${max.toFixed(0)} req/s${earlier ? ', measured by ingest-postgres' : ''}), ${probe.perRequest} readings each…`)
    const keys = probe.keys
    // The peak so far is the probe's (full speed); from here on it is this run's.
    resetPeakRss(server.pid)
    const load = await runLoad({
      url: `${server.baseUrl}/api/v1/sensors/readings`, method: 'POST', lanes: MAX_IN_FLIGHT, mode: 'open', rate,
      warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, drainMs: 20_000,
      // Timestamps after the probe's: the same devices, new slots.
      body: { kind: 'readings', perRequest: probe.perRequest, channels: CHANNELS, tsBase: probe.tsBase + 3_600_000 },
      keys, auth: 'header', countAccepted: true,
    }, ctx.generators, { server: () => [server!.pid], postgres: () => pidsNamed('postgres') })
    check(load, 202)
    const rss = peakRssMiB(server.pid)
    const stats = statsOf(load, 202, rss)
    const note = `${load.requestsPerSecond.toFixed(0)} req/s answered of ${rate} scheduled (${load.late} late sends); server ${load.watched.server!.toFixed(2)} cores, postgres ${load.watched.postgres!.toFixed(2)}, others ${load.others.toFixed(2)}; max ${load.latency.max.toFixed(1)} ms over ${load.latency.count} answers; p99 per second: ${load.timeline.map((t) => t.p99.toFixed(0)).join(' ')} ms`
    return {
      lines: [
        line(NAME, `ack latency p50 at ${rate} req/s (½ max, ${probe.lanes} devices)`, load.latency.p50, undefined, 'ms', undefined, 'target', undefined, stats),
        line(NAME, `ack latency p99 at ${rate} req/s (½ max)`, load.latency.p99, undefined, 'ms', undefined, 'target', note, stats),
        line(NAME, 'peak RSS of our server (VmHWM) under load', rss, undefined, 'MiB'),
      ],
      details: { rate, maxRequestsPerSecond: max, maxFrom: earlier ? 'ingest-postgres' : 'probe', settings: ingestSettings(), load, peakRssMiB: rss },
    }
  } finally {
    await server?.stop()
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}
