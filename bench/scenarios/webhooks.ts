// Webhook delivery: events delivered per second to a fast local receiver (default dispatcher settings: 16
// attempts in flight per process, 2 per endpoint), and what a dead receiver costs the API: POST /animals
// latency for an account whose endpoint never answers, against one with no endpoint, interleaved in one run.
import { ourServer, peakRssMiB, startServer, type Child } from '../lib/processes.ts'
import { line, needsLocalServer, type LineStats, type Scenario } from '../lib/report.ts'
import { accountAndToken, cleanRedis, freshDatabase, serverEnv } from '../lib/setup.ts'

const NAME = 'webhooks'
const EVENTS = 2000
const WRITES = 400

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

export const webhooks: Scenario = async (ctx) => {
  // Its receivers listen on loopback, and its "no endpoint" baseline runs on a server it starts.
  if (ctx.options.target) return needsLocalServer()
  const database = await freshDatabase('webhooks')
  const env = serverEnv(database, { WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_POLL_MS: '20' })
  const arrivals: number[] = []
  const fast = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: async (r) => { await r.arrayBuffer(); arrivals.push(performance.now()); return new Response(null, { status: 204 }) } })
  // Accepts the connection and never answers: the worst receiver, held until the 15 s timeout.
  const dead = Bun.serve({ port: 0, hostname: '127.0.0.1', idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) })
  let server: Child | undefined
  try {
    const quiet = await accountAndToken(env)
    const deadOwner = await accountAndToken(env)
    server = await startServer('our server', ourServer('src/main.ts', 'our server'), env)
    const call = (token: string, method: string, path: string, body?: unknown) =>
      fetch(`${server!.baseUrl}/api/v1${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })

    // 1. Throughput: queue EVENTS test events as fast as 16 clients can, then time the deliveries.
    const endpoint = await (await call(quiet.token, 'POST', '/webhooks/endpoints', { url: `http://127.0.0.1:${fast.port}/hook`, enabled_events: ['animal.deleted'] })).json() // test events reach it whatever it subscribes; the timed writes do not
    ctx.log(`${NAME}: queueing ${EVENTS} events for a fast receiver…`)
    let next = 0
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < EVENTS) { next++; const r = await call(quiet.token, 'POST', `/webhooks/endpoints/${endpoint.id}/test`); if (r.status !== 202) throw new Error(`test event: ${r.status}`) }
    }))
    const deadline = Date.now() + 120_000
    while (arrivals.length < EVENTS && Date.now() < deadline) await Bun.sleep(50)
    if (arrivals.length < EVENTS) throw new Error(`only ${arrivals.length} of ${EVENTS} events arrived`)
    const perSecond = (EVENTS - 1) / ((arrivals[EVENTS - 1]! - arrivals[0]!) / 1000)

    // 2. Write latency with a dead receiver configured vs none, interleaved so both see the same machine.
    await call(deadOwner.token, 'POST', '/webhooks/endpoints', { url: `http://127.0.0.1:${dead.port}/hook`, enabled_events: ['*'] })
    ctx.log(`${NAME}: ${WRITES} animal writes each for an account with a dead receiver and one without…`)
    const timings = { none: [] as number[], dead: [] as number[] }
    for (let i = 0; i < WRITES; i++) {
      for (const [kind, who] of [['none', quiet], ['dead', deadOwner]] as const) {
        const started = performance.now()
        const r = await call(who.token, 'POST', '/animals', { name: `a${i}`, species_id: 'python-regius' })
        if (r.status !== 201) throw new Error(`POST /animals: ${r.status}`)
        await r.arrayBuffer()
        timings[kind].push(performance.now() - started)
      }
    }
    const none = timings.none.sort((a, b) => a - b)
    const slow = timings.dead.sort((a, b) => a - b)
    const rss = peakRssMiB(server.pid)
    // The writes are one client, one at a time: no load run, but their percentiles are ours (a non-201 throws above).
    const writeStats: LineStats = { p50: percentile(slow, 50), p95: percentile(slow, 95), p99: percentile(slow, 99), errors: 0, peakRssMiB: rss }
    return {
      lines: [
        line(NAME, `events delivered/s to a fast local receiver (${EVENTS} queued, one endpoint)`, perSecond, undefined, 'events/s', undefined, 'target', undefined, { peakRssMiB: rss }),
        line(NAME, 'POST /animals p50, dead receiver configured ÷ none', percentile(slow, 50), percentile(none, 50), 'ms', undefined, 'target', undefined, writeStats),
        line(NAME, 'POST /animals p99, dead receiver configured ÷ none', percentile(slow, 99), percentile(none, 99), 'ms', undefined, 'target', undefined, writeStats),
      ],
      details: { events: EVENTS, perSecond, writes: WRITES, peakRssMiB: rss, none: { p50: percentile(none, 50), p99: percentile(none, 99) }, dead: { p50: percentile(slow, 50), p99: percentile(slow, 99) } },
    }
  } finally {
    await server?.stop()
    fast.stop(true)
    dead.stop(true)
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}
