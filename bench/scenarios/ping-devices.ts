// GET /sensors/ping from many devices: BENCH_PING_DEVICES (default 1000) device keys taken in turn by the lanes
// (every request the next key), so the server's key and device caches hold them all, unlike http-layer's one
// device. Our app with the discarding store (servers/discarding-server.ts, as in http-layer) ÷ a bare Bun.serve
// answering the same GETs; and the server's peak RSS with that many devices cached.
import { pidsNamed, runLoad, statsOf, type LoadResult } from '../lib/load.ts'
import { BUN, ourServer, peakRssMiB, resetPeakRss, startServer, type Child } from '../lib/processes.ts'
import { line, needsLocalServer, type Scenario } from '../lib/report.ts'
import { accountAndToken, cleanRedis, createDevices, freshDatabase, inParallel, serverEnv } from '../lib/setup.ts'
import { check } from './http-layer.ts'

const NAME = 'ping-devices'
const DEVICES = Number(process.env.BENCH_PING_DEVICES || 1000)
const DEFAULT_LANES = 64
/** Requests in flight while setting up (device creations through the API, as a user would, and first pings). */
const SETUP_PARALLEL = 16
/** Two channels, as a small sensor sends them (the devices map c0…; t1 and h1 arrive unmapped, as in http-layer). */
const QUERY = 't1=27.5&h1=61'

export const pingDevices: Scenario = async (ctx) => {
  if (ctx.options.target) return needsLocalServer()
  const lanes = ctx.options.concurrency ?? DEFAULT_LANES
  const database = await freshDatabase('ping_devices')
  // As in http-layer: the group-commit wait would otherwise set the rate, not the HTTP layer.
  const env = serverEnv(database, { INGEST_FLUSH_MS: process.env.BENCH_HTTP_FLUSH_MS ?? '0' })
  let ours: Child | undefined
  let bare: Child | undefined
  try {
    const { token } = await accountAndToken(env)
    ours = await startServer('discarding server', ourServer('bench/servers/discarding-server.ts', NAME), env)
    const since = (t: number) => `${((performance.now() - t) / 1000).toFixed(1)} s`
    const created = performance.now()
    const keys = (await createDevices(ours.baseUrl, token, DEVICES, 2, SETUP_PARALLEL)).map((d) => d.key)
    ctx.log(`${NAME}: ${DEVICES} devices created in ${since(created)} (${SETUP_PARALLEL} at a time)`)
    // Every device pings once before the load: the window then measures a fleet the server already knows (keys
    // and devices cached), not first sightings, each a database read, which a short warm-up would not get through.
    const primed = performance.now()
    await inParallel(DEVICES, SETUP_PARALLEL, async (i) => {
      const res = await fetch(`${ours!.baseUrl}/api/v1/sensors/ping?key=${keys[i]}&${QUERY}`)
      if (res.status !== 204) throw new Error(`a first ping answered ${res.status}: ${await res.text()}`)
    })
    ctx.log(`${NAME}: every device's first ping answered in ${since(primed)}`)
    bare = await startServer('bare server', [BUN, 'bench/servers/bare-server.ts'], {})

    const ping = (server: Child, path: string) => runLoad({
      url: `${server.baseUrl}${path}?${QUERY}`, method: 'GET', body: { kind: 'none' }, keys, auth: 'query', rotateKeys: true, countAccepted: false,
      lanes, warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, mode: 'closed', drainMs: 10_000,
    }, ctx.generators, { server: () => [server.pid], postgres: () => pidsNamed('postgres') })
    // From here the peak is the load's (set-up, which creates the devices through the API, is not measured).
    const setupPeak = peakRssMiB(ours.pid)
    resetPeakRss(ours.pid)
    ctx.log(`${NAME}: GET /sensors/ping from ${DEVICES} devices in turn, ${lanes} lanes, on our server…`)
    const oursPing = await ping(ours, '/api/v1/sensors/ping')
    const rss = peakRssMiB(ours.pid)
    ctx.log(`${NAME}: the same GETs on a bare Bun.serve…`)
    const barePing = await ping(bare, '/ping')
    check(oursPing, 204); check(barePing, 204)

    const perRequest = (r: LoadResult) => ((r.watched.server! * 1e6) / r.requestsPerSecond).toFixed(1)
    const rateNote = `each device pinged every ${((DEVICES / oursPing.requestsPerSecond) * 1000).toFixed(0)} ms on average; ` +
      `server CPU per request ours ${perRequest(oursPing)} µs / bare ${perRequest(barePing)} µs; server ${oursPing.watched.server!.toFixed(2)} / ${barePing.watched.server!.toFixed(2)} cores; ` +
      // Postgres works for our server even with a discarding store: last-seen write-back for every device seen.
      `postgres ${oursPing.watched.postgres!.toFixed(2)} / ${barePing.watched.postgres!.toFixed(2)} cores; generator ${oursPing.cpu.toFixed(2)} / ${barePing.cpu.toFixed(2)}; others ${oursPing.others.toFixed(2)} / ${barePing.others.toFixed(2)}; ` +
      `bare p50 ${barePing.latency.p50.toFixed(1)} ms, p95 ${barePing.latency.p95.toFixed(1)}, p99 ${barePing.latency.p99.toFixed(1)}`
    return {
      lines: [
        line(NAME, `GET /sensors/ping req/s, ${DEVICES} devices in turn over ${lanes} lanes ÷ bare Bun.serve`, oursPing.requestsPerSecond, barePing.requestsPerSecond, 'req/s', undefined, 'target', rateNote, statsOf(oursPing, 204, rss)),
        line(NAME, `peak RSS of our server (discarding store), ${DEVICES} devices cached`, rss, undefined, 'MiB', undefined, 'target', `peak during set-up (creating the devices, their first pings): ${setupPeak.toFixed(0)} MiB`),
      ],
      details: { devices: DEVICES, lanes, query: QUERY, flushMs: env.INGEST_FLUSH_MS, oursPing, barePing, peakRssMiB: rss, setupPeakRssMiB: setupPeak },
    }
  } finally {
    await ours?.stop()
    await bare?.stop()
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}
