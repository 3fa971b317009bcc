// Two versions of the ingest hot routes in one process, taking turns: `bun bench/hot-path-ab.ts <other checkout>`
// compares the app of another checkout (A: a worktree at the commit before a change, with node_modules) with this
// one's (B). Each builds its app as src/main.ts does (createDeps, createApp) with a readings store that discards,
// on one fresh database and Redis prefix; their Bun.serve route handlers (src/http/hot-path.ts) are called directly
// with Requests made here, 64 at a time, no sockets. Segments of `BENCH_AB_SEGMENT` batches alternate A B, B A, …
// for `BENCH_AB_SEGMENTS` pairs (the first 4 pairs warm up), and each segment's CPU time per request is compared
// with its pair's. Why: the http-layer scenario's rounds, one server after another, moved by a third within minutes
// on this box, so a change of 1–2 µs per request never showed; here the machine's drift lands on both sides of each
// pair. What it measures is the hot routes' JavaScript plus making each Request and Response, not the HTTP server:
// a figure for a change to our code, not a ratio against a bare server. `BENCH_AB_READINGS` sets the POST's
// readings (10), `BENCH_AB_KIND` one of post, ping or mqtt (all three). mqtt: each side's MQTT listener on a
// loopback port, 64 devices on connections of our own (bench/lib/mqtt-wire.ts, the load generator's client)
// publishing the POST's body at QoS 1, one publish in flight each; the client's CPU and both ends' socket writes
// are in the figure, the same on both sides.
import { accountAndToken, cleanRedis, freshDatabase, serverEnv } from './lib/setup.ts'
import { resolve } from 'node:path'
import { discardingStore } from './servers/discarding-store.ts'
import { connectDevice, type WireConnection } from './lib/mqtt-wire.ts'

const other = process.argv[2]
if (!other) {
  console.error('usage: bun bench/hot-path-ab.ts <other checkout>   (A: that checkout, B: this one)')
  process.exit(2)
}
// Absolute: a relative path would be read against this file's folder by import().
const ROOTS = { A: resolve(other), B: resolve(import.meta.dir, '..') }
const READINGS = Number(process.env.BENCH_AB_READINGS || 10)
const SEGMENT = Number(process.env.BENCH_AB_SEGMENT || 100)
const PAIRS = Number(process.env.BENCH_AB_SEGMENTS || 40)
const WARMUP_PAIRS = 4
const LANES = 64
const KINDS = (process.env.BENCH_AB_KIND ? [process.env.BENCH_AB_KIND] : ['post', 'ping', 'mqtt']) as Kind[]
type Kind = 'post' | 'ping' | 'mqtt'
type Handler = (request: Request) => Promise<Response>

const BASE = 'http://127.0.0.1/api/v1'
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const ts = Date.now() - 3_600_000
const body = JSON.stringify({ readings: Array.from({ length: READINGS }, (_, i) => ({ channel: `c${i % 10}`, value: 20 + i / 10, ts: ts + Math.floor(i / 10) })) })

const database = await freshDatabase('hot_path_ab')
const env = serverEnv(database, { INGEST_FLUSH_MS: '0' })
interface Side { post: Handler; ping: Handler; key: string; devices: { connection: WireConnection; topic: string }[]; close(): Promise<void> }
const sides: Record<'A' | 'B', Side> = {} as never
try {
  // loadConfig reads the environment: the same settings the http-layer scenario gives its server.
  Object.assign(process.env, env)
  const { token } = await accountAndToken(env)
  for (const side of ['A', 'B'] as const) {
    const root = ROOTS[side]
    const { createApp } = await import(`${root}/src/app.ts`)
    const { loadConfig } = await import(`${root}/src/config.ts`)
    const { createDeps } = await import(`${root}/src/deps.ts`)
    const deps = await createDeps(loadConfig(), { readings: () => discardingStore().store })
    const app = createApp(deps)
    const routes = app.config.serve.routes
    const createDevice = async (name: string) => {
      const created = await app.handle(new Request(`${BASE}/sensors/devices`, {
        method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name, channels: Array.from({ length: 10 }, (_, i) => ({ key: `c${i}` })) }),
      }))
      return await created.json() as { id: string; key: string }
    }
    const { key } = await createDevice(`device ${side}`)
    const devices: Side['devices'] = []
    let closeMqtt = async () => {}
    if (KINDS.includes('mqtt')) {
      const { startMqttListener } = await import(`${root}/ingest/mqtt.ts`)
      const config = loadConfig()
      const listener = await startMqttListener({ ...deps, config: { ...config, mqtt: { port: 0, tlsPort: undefined, tlsCertFile: undefined, tlsKeyFile: undefined } } })
      closeMqtt = () => listener.close()
      for (let lane = 0; lane < LANES; lane++) {
        const device = await createDevice(`mqtt ${side} ${lane}`)
        devices.push({ connection: await connectDevice(`mqtt://127.0.0.1:${listener.port}`, `lane${lane}`, device.key), topic: `devices/${device.id}/readings` })
      }
    }
    sides[side] = {
      post: routes['/api/v1/sensors/readings'].POST, ping: routes['/api/v1/sensors/ping'].GET, key, devices,
      close: async () => { for (const device of devices) device.connection.close(); await closeMqtt(); await deps.close() },
    }
  }

  const requestFor = (kind: Kind, key: string) => kind === 'post'
    ? new Request(`${BASE}/sensors/readings`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(body.length) }, body })
    : new Request(`${BASE}/sensors/ping?key=${key}&t1=27.5&h1=61&t2=26.1&h2=58`)

  /** CPU µs per request over one segment of one side. */
  const segment = async (side: 'A' | 'B', kind: Kind) => {
    const started = process.cpuUsage()
    if (kind === 'mqtt') {
      const { devices } = sides[side]
      for (let batch = 0; batch < SEGMENT; batch++) {
        const codes = await Promise.all(devices.map((device) => device.connection.publish(device.topic, body)))
        for (const code of codes) if (code < 0 || code >= 0x80) throw new Error(`${side} mqtt: PUBACK 0x${code.toString(16)}`)
      }
      const used = process.cpuUsage(started)
      return (used.user + used.system) / (SEGMENT * LANES)
    }
    const { key } = sides[side]
    const handler = sides[side][kind]
    const expected = kind === 'post' ? 202 : 204
    for (let batch = 0; batch < SEGMENT; batch++) {
      const answers = await Promise.all(Array.from({ length: LANES }, () => handler(requestFor(kind, key))))
      for (const answer of answers) if (answer.status !== expected) throw new Error(`${side} ${kind}: ${answer.status} ${await answer.text()}`)
    }
    const used = process.cpuUsage(started)
    return (used.user + used.system) / (SEGMENT * LANES)
  }

  for (const kind of KINDS) {
    const a: number[] = [], b: number[] = [], differences: number[] = []
    for (let pair = 0; pair < PAIRS; pair++) {
      const order = pair % 2 ? (['B', 'A'] as const) : (['A', 'B'] as const)
      const cost: Partial<Record<'A' | 'B', number>> = {}
      for (const side of order) cost[side] = await segment(side, kind)
      if (pair < WARMUP_PAIRS) continue
      a.push(cost.A!); b.push(cost.B!); differences.push(cost.B! - cost.A!)
    }
    const cheaper = differences.filter((d) => d < 0).length
    const what = kind === 'post' ? `POST /sensors/readings (${READINGS} readings)` : kind === 'mqtt' ? `MQTT QoS 1 publish (${READINGS} readings)` : 'GET /sensors/ping'
    console.log(`${what}: A ${median(a).toFixed(2)} µs, B ${median(b).toFixed(2)} µs of CPU per request (medians); B − A by pair: median ${median(differences).toFixed(2)} µs, B cheaper in ${cheaper} of ${differences.length} pairs`)
  }
} finally {
  for (const side of Object.values(sides)) await side.close()
  await database.drop()
  await cleanRedis(env.REDIS_PREFIX!)
}
process.exit(0)
