// The HTTP layer alone: our POST /sensors/readings and GET /sensors/ping against a server whose readings store
// discards (bench/servers/discarding-server.ts), ÷ a bare Bun.serve doing the least the same request needs
// (bench/servers/bare-server.ts). Same generator, same bodies, same lanes, one after the other.
import { runLoad, statsOf, type LoadResult } from '../lib/load.ts'
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

export const httpLayer: Scenario = async (ctx: ScenarioContext) => {
  // The bare Bun.serve baseline has to run on the same machine as the server it is compared with.
  if (ctx.options.target) return needsLocalServer()
  const lanes = ctx.options.concurrency ?? LANES
  const readingsPerRequest = ctx.options.batch ?? READINGS_PER_REQUEST
  const database = await freshDatabase('http')
  const env = serverEnv(database, {
    // The flush wait is group commit's latency, not the HTTP layer's cost; the default (10 ms) holds every
    // request that long even with a store that answers at once, so lanes, not the server, would set the rate.
    INGEST_FLUSH_MS: process.env.BENCH_HTTP_FLUSH_MS ?? '1',
  })
  let ours: Child | undefined
  let bare: Child | undefined
  try {
    const { token } = await accountAndToken(env)
    ours = await startServer('discarding server', ourServer('bench/servers/discarding-server.ts', 'http-layer'), env)
    const [device] = await createDevices(ours.baseUrl, token, 1, CHANNELS)
    bare = await startServer('bare server', [BUN, 'bench/servers/bare-server.ts'], {})

    const { post, ping } = ingestLoads(ctx, device!.key, lanes, readingsPerRequest)
    ctx.log(`${NAME}: POST /sensors/readings (${readingsPerRequest} readings, ${lanes} lanes) on our server…`)
    const oursPost = await post(ours, '/api/v1/sensors/readings')
    ctx.log(`${NAME}: the same POST on a bare Bun.serve…`)
    const barePost = await post(bare, '/readings')
    ctx.log(`${NAME}: GET /sensors/ping on our server…`)
    const oursPing = await ping(ours, '/api/v1/sensors/ping')
    ctx.log(`${NAME}: the same GET on a bare Bun.serve…`)
    const barePing = await ping(bare, '/ping')
    const rss = peakRssMiB(ours.pid)

    check(oursPost, 202); check(barePost, 202); check(oursPing, 204); check(barePing, 204)
    // Server CPU per answered request does not depend on whether the generator kept up: the fairer comparison
    // on a machine where the generator and the server share two cores.
    const cpuNote = (o: LoadResult, b: LoadResult) =>
      `server CPU per request ours ${cpuPerRequest(o).toFixed(0)} µs / bare ${cpuPerRequest(b).toFixed(0)} µs (ratio ${(cpuPerRequest(b) / cpuPerRequest(o)).toFixed(2)}); ` +
      `server ${o.watched.server!.toFixed(2)} / ${b.watched.server!.toFixed(2)} cores; generator ${o.cpu.toFixed(2)} / ${b.cpu.toFixed(2)} cores (${o.generators} process${o.generators > 1 ? 'es' : ''})` +
      `${b.cpu >= 0.9 * b.generators ? ' — the generator was saturated against the bare server, so the ratio flatters us' : ''}; ` +
      `others ${o.others.toFixed(2)} / ${b.others.toFixed(2)} cores; p99 ${o.latency.p99.toFixed(1)} / ${b.latency.p99.toFixed(1)} ms`
    return {
      lines: [
        line(NAME, `POST /sensors/readings req/s (${readingsPerRequest} readings)`, oursPost.requestsPerSecond, barePost.requestsPerSecond, 'req/s', 0.7, 'target', cpuNote(oursPost, barePost), statsOf(oursPost, 202, rss)),
        line(NAME, 'GET /sensors/ping req/s', oursPing.requestsPerSecond, barePing.requestsPerSecond, 'req/s', 0.6, 'target', cpuNote(oursPing, barePing), statsOf(oursPing, 204, rss)),
      ],
      details: { lanes, readingsPerRequest, flushMs: env.INGEST_FLUSH_MS, oursPost, barePost, oursPing, barePing, oursPeakRssMiB: rss },
    }
  } finally {
    await ours?.stop()
    await bare?.stop()
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
export function check(result: LoadResult, status: number) {
  const wrong = Object.entries(result.statuses).filter(([s]) => s !== String(status))
  if (wrong.length || result.okRequests === 0) throw new Error(`expected only ${status} answers, got ${JSON.stringify(result.statuses)}: ${result.firstError ?? ''}`)
}
