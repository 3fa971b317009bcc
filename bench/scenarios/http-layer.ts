// The HTTP layer alone: our POST /sensors/readings and GET /sensors/ping against a server whose readings store
// discards (bench/servers/discarding-server.ts). The targets (issue 12's decision) compare server CPU per request
// with a bare Bun.serve that sends the same CONTRACT headers and parses the same JSON (the http-floor rung
// `bare-headers`, bench/servers/floor-server.ts): CPU per request does not depend on whether the generator, which
// shares the two cores, kept up. The bare Bun.serve without headers (bench/servers/bare-server.ts) stays as
// information, by requests per second. Same generator, same bodies, same lanes, one after the other.
import { medianBy, runLoad, statsOf, type LoadResult } from '../lib/load.ts'
import { BUN, ourServer, peakRssMiB, startServer, type Child } from '../lib/processes.ts'
import { line, needsLocalServer, type Scenario, type ScenarioContext } from '../lib/report.ts'
import { accountAndToken, cleanRedis, createDevices, freshDatabase, serverEnv } from '../lib/setup.ts'

const NAME = 'http-layer'
/** Readings per request unless --batch says otherwise. */
export const READINGS_PER_REQUEST = 10
/** Channels of the device; a bigger batch repeats them at later timestamps, as a real device would. */
export const CHANNELS = 10
/** Keep-alive connections unless --concurrency says otherwise. */
export const LANES = Number(process.env.BENCH_HTTP_LANES || 64)
/** Rounds in which the three servers take turns. */
const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS || 3)

export const httpLayer: Scenario = async (ctx: ScenarioContext) => {
  // The bare Bun.serve baseline has to run on the same machine as the server it is compared with.
  if (ctx.options.target) return needsLocalServer()
  const lanes = ctx.options.concurrency ?? LANES
  const readingsPerRequest = ctx.options.batch ?? READINGS_PER_REQUEST
  const database = await freshDatabase('http')
  const env = serverEnv(database, {
    // The flush wait is group commit's latency, not the HTTP layer's cost; the default (10 ms) holds every
    // request that long even with a store that answers at once, so lanes, not the server, would set the rate.
    // 0 writes each event-loop turn's readings together without waiting for more (ingest/batcher.ts); until
    // 2026-11-28 this was 1 ms, the least a timer waits, which cost about 3 µs more per request (bench/README.md).
    INGEST_FLUSH_MS: process.env.BENCH_HTTP_FLUSH_MS ?? '0',
  })
  let ours: Child | undefined
  let bare: Child | undefined
  let bareHeaders: Child | undefined
  try {
    const { token } = await accountAndToken(env)
    ours = await startServer('discarding server', ourServer('bench/servers/discarding-server.ts', 'http-layer'), env)
    const [device] = await createDevices(ours.baseUrl, token, 1, CHANNELS)
    bare = await startServer('bare server', [BUN, 'bench/servers/bare-server.ts'], {})
    bareHeaders = await startServer('bare server + CONTRACT headers', [BUN, 'bench/servers/floor-server.ts'], { FLOOR: 'bare-headers' })

    const { post, ping } = ingestLoads(ctx, device!.key, lanes, readingsPerRequest)
    // The servers take turns, round after round, so that a drift of the machine's speed (runs of one commit on one
    // server moved by a third within minutes) lands on all of them; each side's figure is its median round.
    const runs: Record<'oursPost' | 'headersPost' | 'barePost' | 'oursPing' | 'headersPing' | 'barePing', LoadResult[]> =
      { oursPost: [], headersPost: [], barePost: [], oursPing: [], headersPing: [], barePing: [] }
    for (let round = 1; round <= ROUNDS; round++) {
      ctx.log(`${NAME}: round ${round} of ${ROUNDS}: POST /sensors/readings (${readingsPerRequest} readings, ${lanes} lanes) on our server, then the bare Bun.serve with and without the CONTRACT headers…`)
      runs.oursPost.push(await post(ours, '/api/v1/sensors/readings'))
      runs.headersPost.push(await post(bareHeaders, '/readings'))
      runs.barePost.push(await post(bare, '/readings'))
      ctx.log(`${NAME}: round ${round} of ${ROUNDS}: GET /sensors/ping, the same three servers…`)
      runs.oursPing.push(await ping(ours, '/api/v1/sensors/ping'))
      runs.headersPing.push(await ping(bareHeaders, '/ping'))
      runs.barePing.push(await ping(bare, '/ping'))
    }
    const rss = peakRssMiB(ours.pid)
    for (const [name, list] of Object.entries(runs)) for (const run of list) check(run, name.endsWith('Post') ? 202 : 204)
    // The target lines compare server CPU per request; the informational ones requests per second.
    const byCpu = (list: LoadResult[]) => medianBy(list, cpuPerRequest)
    const byRate = (list: LoadResult[]) => medianBy(list, (r) => r.requestsPerSecond)
    const [oursPost, headersPost, oursPing, headersPing] = [byCpu(runs.oursPost), byCpu(runs.headersPost), byCpu(runs.oursPing), byCpu(runs.headersPing)]
    const rounds = (ours: LoadResult[], baseline: LoadResult[]) =>
      `; median of ${ROUNDS} rounds taking turns; by round, CPU per request ${ours.map((r) => cpuPerRequest(r).toFixed(0)).join('/')} µs / ${baseline.map((r) => cpuPerRequest(r).toFixed(0)).join('/')} µs, the median rounds above`
    // Server CPU per answered request does not depend on whether the generator, which shares the two cores, kept up.
    const cpuNote = (o: LoadResult, b: LoadResult) =>
      `server CPU per request ours ${cpuPerRequest(o).toFixed(0)} µs / bare ${cpuPerRequest(b).toFixed(0)} µs (ratio ${(cpuPerRequest(b) / cpuPerRequest(o)).toFixed(2)}); ` +
      `server ${o.watched.server!.toFixed(2)} / ${b.watched.server!.toFixed(2)} cores; generator ${o.cpu.toFixed(2)} / ${b.cpu.toFixed(2)} cores (${o.generators} process${o.generators > 1 ? 'es' : ''})` +
      `${b.cpu >= 0.9 * b.generators ? ' — the generator was saturated against the bare server, so the ratio flatters us' : ''}; ` +
      `others ${o.others.toFixed(2)} / ${b.others.toFixed(2)} cores; p99 ${o.latency.p99.toFixed(1)} / ${b.latency.p99.toFixed(1)} ms`
    // Requests per server CPU-second: the inverse of CPU per request, so that higher is better like every ratio.
    const perCpuSecond = (r: LoadResult) => 1e6 / cpuPerRequest(r)
    const [oursPostRate, barePostRate, oursPingRate, barePingRate] = [byRate(runs.oursPost), byRate(runs.barePost), byRate(runs.oursPing), byRate(runs.barePing)]
    return {
      lines: [
        line(NAME, `POST /sensors/readings (${readingsPerRequest} readings) requests per server CPU-second ÷ bare + headers`, perCpuSecond(oursPost), perCpuSecond(headersPost), 'req/CPU-s', 0.7, 'target', cpuNote(oursPost, headersPost) + rounds(runs.oursPost, runs.headersPost), statsOf(oursPost, 202, rss)),
        line(NAME, 'GET /sensors/ping requests per server CPU-second ÷ bare + headers', perCpuSecond(oursPing), perCpuSecond(headersPing), 'req/CPU-s', 0.6, 'target', cpuNote(oursPing, headersPing) + rounds(runs.oursPing, runs.headersPing), statsOf(oursPing, 204, rss)),
        line(NAME, `POST /sensors/readings req/s (${readingsPerRequest} readings) ÷ bare`, oursPostRate.requestsPerSecond, barePostRate.requestsPerSecond, 'req/s', undefined, 'target', cpuNote(oursPostRate, barePostRate)),
        line(NAME, 'GET /sensors/ping req/s ÷ bare', oursPingRate.requestsPerSecond, barePingRate.requestsPerSecond, 'req/s', undefined, 'target', cpuNote(oursPingRate, barePingRate)),
      ],
      details: { lanes, readingsPerRequest, flushMs: env.INGEST_FLUSH_MS, rounds: ROUNDS, runs, oursPeakRssMiB: rss },
    }
  } finally {
    await ours?.stop()
    await bare?.stop()
    await bareHeaders?.stop()
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}

/** Server CPU seconds per answered request, in µs: it does not depend on whether the generator kept up. */
export const cpuPerRequest = (r: LoadResult) => (r.watched.server! * 1e6) / r.requestsPerSecond

/**
 * The two loads every HTTP-layer comparison drives, the same against each server: a POST of `readingsPerRequest`
 * readings (JSON, key in the header) and a GET ping with four channels (key in the query string).
 */
export function ingestLoads(ctx: ScenarioContext, key: string, lanes: number, readingsPerRequest: number) {
  const ts = Date.now() - 3_600_000
  const body = JSON.stringify({ readings: Array.from({ length: readingsPerRequest }, (_, i) => ({ channel: `c${i % CHANNELS}`, value: 20 + i / 10, ts: ts + Math.floor(i / CHANNELS) })) })
  const common = { lanes, warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, mode: 'closed' as const, drainMs: 10_000 }
  return {
    post: (server: Child, path: string) => runLoad({
      ...common, url: server.baseUrl + path, method: 'POST', body: { kind: 'fixed', text: body },
      keys: [key], auth: 'header', countAccepted: true,
    }, ctx.generators, { server: () => [server.pid] }),
    ping: (server: Child, path: string) => runLoad({
      ...common, url: `${server.baseUrl}${path}?t1=27.5&h1=61&t2=26.1&h2=58`, method: 'GET', body: { kind: 'none' },
      keys: [key], auth: 'query', countAccepted: false,
    }, ctx.generators, { server: () => [server.pid] }),
  }
}

/** A run whose answers were not what the endpoint should give measured something else: say so loudly. */
export function check(result: LoadResult, status: number | 'puback') {
  const wrong = Object.entries(result.statuses).filter(([s]) => s !== String(status))
  if (wrong.length || result.okRequests === 0) throw new Error(`expected only ${status} answers, got ${JSON.stringify(result.statuses)}: ${result.firstError ?? ''}`)
}
