// Where our server's CPU goes on POST /sensors/readings and GET /sensors/ping, step by step, in process (no HTTP,
// no load generator): each line runs 30,000 requests, 64 in flight, and adds one step of the route to the line
// above; the last line is the whole route through Elysia (app.handle). `bun bench/http-steps.ts`; embedded
// database, a readings store that discards, group commit flushing every 1 ms as in http-layer. Figures are
// process CPU µs per request (process.cpuUsage()), noisy by ±2 µs on a shared machine: run it twice.
import { createAccount } from '../src/accounts.ts'
import { createApp } from '../src/app.ts'
import { createKey } from '../src/auth/keys.ts'
import { loadConfig } from '../src/config.ts'
import { createDeps } from '../src/deps.ts'
import { readBody } from '../src/http/checks/body-limits.ts'
import { parseJsonBody } from '../src/http/json-body.ts'
import { createPipeline } from '../src/http/pipeline.ts'
import { principalOf } from '../src/http/request.ts'
import { requestState } from '../src/http/request-state.ts'
import { RouteTable } from '../src/http/route-table.ts'
import { ulid } from '../src/ids.ts'
import { parseBatch } from '../ingest/parse.ts'
import type { DeviceInfo } from '../ingest/devices.ts'
import { discardingStore } from './servers/discarding-store.ts'

const REQUESTS = 30_000
const IN_FLIGHT = 64
const discarding = discardingStore().store
const config = loadConfig({}, { dataDir: 'memory://', demo: false, logLevel: 'warn', ingestFlushMs: 1, deviceRateLimitPerMinute: 1_000_000_000 })
const deps = await createDeps(config, { readings: () => discarding })
const app = createApp(deps)
const base = 'http://127.0.0.1'
const account = await createAccount(deps.database.db, { name: 'steps', plan: 'breeder' })
const { token } = await createKey(deps.database.db, { accountId: account.id, kind: 'personal', name: 'steps', scopes: ['sensors:write', 'sensors:read'] })
const deviceBody = JSON.stringify({ name: 'hub', channels: Array.from({ length: 10 }, (_, i) => ({ key: `c${i}`, metric: 'temperature' })) })
const created = await app.handle(new Request(`${base}/api/v1/sensors/devices`, { method: 'POST', body: deviceBody, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(deviceBody.length) } }))
const device = (await created.json()) as { key: string }

// The two loads of http-layer.
const ts = Date.now() - 3_600_000
const body = JSON.stringify({ readings: Array.from({ length: 10 }, (_, i) => ({ channel: `c${i}`, value: 20 + i / 10, ts })) })
const post = () => new Request(`${base}/api/v1/sensors/readings`, { method: 'POST', body, headers: { authorization: `Bearer ${device.key}`, 'content-type': 'application/json', 'content-length': String(body.length) } })
const ping = () => new Request(`${base}/api/v1/sensors/ping?key=${device.key}&t1=27.5&h1=61&t2=26.1&h2=58`)

/** The seven CONTRACT headers, as the bare server of http-layer makes them (bench/servers/floor-server.ts). */
let used = 0
const contractHeaders = () => {
  used++
  const now = Date.now()
  return { 'x-request-id': `req_${ulid(now)}`, 'api-version': '1', 'ratelimit-policy': '"default";q=1000000000;w=60', ratelimit: `"default";r=${used};t=1`, 'x-ratelimit-limit': '1000000000', 'x-ratelimit-remaining': String(used), 'x-ratelimit-reset': String(now) }
}

const table = new RouteTable(app.routes as any, '/api/v1')
const pipeline = createPipeline({ config, authenticator: deps.authenticator, rateLimiter: deps.rateLimiter, platform: deps.platform, routes: () => table })
const deviceOf = (request: Request) => deps.ingest.devices.get(principalOf(request).deviceId!) as DeviceInfo
await app.handle(post()) // fills the key and device caches
/** The handler Bun.serve's router calls for the route (the routes createApp gives Elysia's listen). */
const hotRoute = (path: string, method: string) => (app.config.serve as { routes: Record<string, Record<string, (r: Request) => Promise<Response>>> }).routes[path]![method]!

async function measure(name: string, make: () => Request, handle: (request: Request) => unknown) {
  for (let round = 0; round < 2; round++) { // the first round warms up
    const start = process.cpuUsage()
    for (let i = 0; i < REQUESTS; i += IN_FLIGHT) await Promise.all(Array.from({ length: IN_FLIGHT }, () => handle(make())))
    const used = process.cpuUsage(start)
    if (round === 1) console.log(`${name.padEnd(72)} ${((used.user + used.system) / REQUESTS).toFixed(1).padStart(5)} µs`)
  }
}

const answer = (request: Request, accepted: number, rejected: unknown[]) => Response.json({ accepted, rejected }, { status: 202, headers: requestState(request).headers })
console.log('POST /sensors/readings, 10 readings')
await measure('bare: request.json(), Response.json with the seven headers', post, async (r) => { const b = (await r.json()) as { readings: unknown[] }; return Response.json({ accepted: b.readings.length, rejected: [] }, { status: 202, headers: contractHeaders() }) })
await measure('ours, step 0: request.text(), Response.json with the request\'s headers', post, async (r) => { requestState(r); await r.text(); return answer(r, 10, []) })
await measure('+ the pipeline (request id, key, rate limit, route, authorize, 413/415)', post, async (r) => { pipeline.run(r); await r.text(); return answer(r, 10, []) })
await measure('+ the JSON gate and JSON.parse', post, async (r) => { pipeline.run(r); parseJsonBody(await readBody(r)); return answer(r, 10, []) })
await measure('+ parseBatch', post, async (r) => {
  pipeline.run(r)
  const b = parseJsonBody(await readBody(r)) as { readings: unknown[] }
  const p = parseBatch(b.readings, deviceOf(r), Date.now())
  return answer(r, p.readings.length, p.rejected)
})
// A stand-in for the batcher: the requests of each millisecond await one promise that a timer settles.
let tick: Promise<void> | undefined
const nextTick = () => (tick ??= new Promise<void>((resolve) => setTimeout(() => { tick = undefined; resolve() }, 1)))
await measure('+ awaiting a 1 ms timer instead (a stand-in for the group commit)', post, async (r) => {
  pipeline.run(r)
  const b = parseJsonBody(await readBody(r)) as { readings: unknown[] }
  const p = parseBatch(b.readings, deviceOf(r), Date.now())
  await nextTick()
  return answer(r, p.readings.length, p.rejected)
})
await measure('+ awaiting the group commit (instead of the timer)', post, async (r) => {
  pipeline.run(r)
  const b = parseJsonBody(await readBody(r)) as { readings: unknown[] }
  const device = deviceOf(r)
  const p = parseBatch(b.readings, device, Date.now())
  await deps.ingest.batcher.add(p.readings)
  deps.ingest.devices.seen(device, p.unmapped)
  return answer(r, p.readings.length, p.rejected)
})
await measure('the route through Elysia (app.handle: all of the above, schema, metrics)', post, (r) => app.handle(r))
await measure('the hot route the server answers it with (http/hot-path.ts)', post, hotRoute('/api/v1/sensors/readings', 'POST'))

console.log('GET /sensors/ping, 4 channels')
await measure('bare: 204 with the seven headers', ping, () => new Response(null, { status: 204, headers: contractHeaders() }))
await measure('ours, step 0: 204 with the request\'s headers', ping, (r) => new Response(null, { status: 204, headers: requestState(r).headers }))
await measure('+ the pipeline', ping, (r) => { pipeline.run(r); return new Response(null, { status: 204, headers: requestState(r).headers }) })
await measure('the route through Elysia (app.handle)', ping, (r) => app.handle(r))
await measure('the hot route the server answers it with (http/hot-path.ts)', ping, hotRoute('/api/v1/sensors/ping', 'GET'))
await deps.close()
