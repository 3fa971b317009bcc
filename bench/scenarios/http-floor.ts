// Where the HTTP-layer cost comes from: the same two loads as http-layer, on a ladder of servers from a bare
// Bun.serve to ours, each rung adding one thing (bench/servers/floor-server.ts):
//   bare Bun.serve → + the seven CONTRACT headers → + answering after a group commit's wait (nothing stored)
//   → Elysia alone → Elysia + the headers → our app (discarding store).
// Every rung is compared with the bare server measured in the same run. The rung "Elysia + the headers" does
// no authentication, no validation and no storage: it is the floor under any app on this stack that keeps the
// contract, and it bounds the http-layer ratios from above.
import type { LoadResult } from '../lib/load.ts'
import { BUN, ourServer, startServer, type Child } from '../lib/processes.ts'
import { line, needsLocalServer, type Line, type Scenario, type ScenarioContext } from '../lib/report.ts'
import { accountAndToken, cleanRedis, createDevices, freshDatabase, serverEnv } from '../lib/setup.ts'
import { CHANNELS, LANES, READINGS_PER_REQUEST, check, cpuPerRequest, ingestLoads } from './http-layer.ts'

const NAME = 'http-floor'

const RUNGS = [
  { floor: 'bare-headers', label: 'bare Bun.serve + the CONTRACT headers' },
  { floor: 'bare-headers-commit', label: 'bare Bun.serve + the CONTRACT headers + a group commit\'s wait' },
  { floor: 'elysia', label: 'Elysia alone' },
  { floor: 'elysia-headers', label: 'Elysia + the CONTRACT headers' },
] as const

export const httpFloor: Scenario = async (ctx: ScenarioContext) => {
  if (ctx.options.target) return needsLocalServer()
  const lanes = ctx.options.concurrency ?? LANES
  const readingsPerRequest = ctx.options.batch ?? READINGS_PER_REQUEST
  const database = await freshDatabase('floor')
  const env = serverEnv(database, { INGEST_FLUSH_MS: process.env.BENCH_HTTP_FLUSH_MS ?? '0' })
  const children: Child[] = []
  const start = async (name: string, argv: string[], childEnv: Record<string, string>) => {
    const child = await startServer(name, argv, childEnv)
    children.push(child)
    return child
  }
  try {
    const { token } = await accountAndToken(env)
    const ours = await start('discarding server', ourServer('bench/servers/discarding-server.ts', NAME), env)
    const [device] = await createDevices(ours.baseUrl, token, 1, CHANNELS)
    const { post, ping } = ingestLoads(ctx, device!.key, lanes, readingsPerRequest)
    const measure = async (label: string, server: Child, postPath: string, pingPath: string) => {
      ctx.log(`${NAME}: ${label}…`)
      const result = { label, post: await post(server, postPath), ping: await ping(server, pingPath) }
      check(result.post, 202); check(result.ping, 204)
      return result
    }

    const bare = await measure('bare Bun.serve', await start('bare server', [BUN, 'bench/servers/bare-server.ts'], {}), '/readings', '/ping')
    const rungs = []
    for (const rung of RUNGS) {
      const server = await start(rung.label, [BUN, 'bench/servers/floor-server.ts'], { FLOOR: rung.floor, FLUSH_MS: env.INGEST_FLUSH_MS! })
      rungs.push(await measure(rung.label, server, '/readings', '/ping'))
      await server.stop()
    }
    rungs.push(await measure('our app (discarding store)', ours, '/api/v1/sensors/readings', '/api/v1/sensors/ping'))

    const note = (r: LoadResult, b: LoadResult) =>
      `server CPU per request ${cpuPerRequest(r).toFixed(0)} µs / bare ${cpuPerRequest(b).toFixed(0)} µs (ratio ${(cpuPerRequest(b) / cpuPerRequest(r)).toFixed(2)}); ` +
      `server ${r.watched.server!.toFixed(2)} / ${b.watched.server!.toFixed(2)} cores; generator ${r.cpu.toFixed(2)} / ${b.cpu.toFixed(2)}; others ${r.others.toFixed(2)} / ${b.others.toFixed(2)}`
    const lines: Line[] = []
    for (const rung of rungs) {
      lines.push(line(NAME, `POST (${readingsPerRequest} readings) req/s: ${rung.label} ÷ bare`, rung.post.requestsPerSecond, bare.post.requestsPerSecond, 'req/s', undefined, 'target', note(rung.post, bare.post)))
      lines.push(line(NAME, `GET ping req/s: ${rung.label} ÷ bare`, rung.ping.requestsPerSecond, bare.ping.requestsPerSecond, 'req/s', undefined, 'target', note(rung.ping, bare.ping)))
    }
    return {
      lines,
      details: { lanes, readingsPerRequest, bare, rungs: rungs.map((r) => ({ label: r.label, post: r.post, ping: r.ping })) },
    }
  } finally {
    for (const child of children) await child.stop().catch(() => {})
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}
