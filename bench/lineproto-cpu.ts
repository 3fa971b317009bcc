// Server CPU per reading, line protocol beside JSON: `bun bench/lineproto-cpu.ts`. The ingest-lineproto scenario
// gives it only as an informational line of a loaded run (2.5 µs line protocol against 1.8 µs JSON, 2026-12-06),
// moved by QuestDB and the other processes on the box; this isolates the server's own cost of the two doors.
// Our server as the bench runs it (bench/servers/discarding-server.ts: the real app, a readings store that discards)
// on the embedded defaults (PGlite in a temporary directory, no Redis), one device per lane made through the API
// with channels c0…c9 mapped, as the scenario's. Each lane sends the scenario's bodies (bench/load/generator.ts:
// 100 readings a request, `readings,device=d<n>,channel=c<k> value=… <ms>` to /api/v2/write?precision=ms, or the
// same readings as JSON to /api/v1/sensors/readings), keep-alive, one request in flight per lane. Segments of
// `LPCPU_REQUESTS` requests alternate JSON, line protocol, then line protocol, JSON, … for `LPCPU_ROUNDS` pairs
// (16; the first 4 warm up); each segment's server CPU (/proc's schedstat, every thread) per reading is compared
// with its pair's.
// `LPCPU_KIND=json|lp` sends one kind only: with BENCH_PROFILE=1 the server runs under Bun's CPU profiler, and
// `bun bench/profile-samples.ts bench/results/tmp/profiles/<file>` says where one door's time goes.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readingsJson, readingsLineProtocol, readingsOf } from './load/generator.ts'
import { medianBy } from './lib/load.ts'
import { cpuMicros, ourServer, startServer } from './lib/processes.ts'
import { accountAndToken, createDevices } from './lib/setup.ts'

const REQUESTS = Number(process.env.LPCPU_REQUESTS || 2000)
const ROUNDS = Number(process.env.LPCPU_ROUNDS || 16)
const LANES = Number(process.env.LPCPU_LANES || 16)
const KINDS = (process.env.LPCPU_KIND ? [process.env.LPCPU_KIND] : ['json', 'lp']) as Kind[]
// JavaScriptCore was still compiling in the third pair: its JIT threads took 0.2–0.6 µs per reading of a segment
// there (schedstat by thread), against 0.01–0.08 from the fifth on.
const WARMUP_ROUNDS = 4
const PER_REQUEST = 100
const CHANNELS = 10
type Kind = 'json' | 'lp'

const median = (values: number[]) => medianBy(values, (value) => value)

const dataDir = mkdtempSync(join(tmpdir(), 'hrs-lpcpu-'))
// The embedded defaults: no DATABASE_URL or REDIS_URL. Limits out of the way, as serverEnv sets them.
const env = { DATA_DIR: dataDir, DEMO: '0', LOG_LEVEL: 'warn', DEVICE_RATE_LIMIT_PER_MINUTE: '1000000000', RATE_LIMIT_PER_MINUTE: '1000000' }
// The CLI makes the account before the server opens the same PGlite directory (one process at a time).
const { token } = await accountAndToken(env)
const server = await startServer('lineproto-cpu', ourServer('bench/servers/discarding-server.ts', 'lineproto-cpu'), env)
try {
  const devices = await createDevices(server.baseUrl, token, LANES, CHANNELS, 4)
  const tsBase = Date.now() - 3_600_000
  const sent: Record<Kind, number> = { json: 0, lp: 0 }
  const url: Record<Kind, string> = { json: `${server.baseUrl}/api/v1/sensors/readings`, lp: `${server.baseUrl}/api/v2/write?org=bench&bucket=bench&precision=ms` }
  const expected: Record<Kind, number> = { json: 202, lp: 204 }

  /** Request `k` of `lane`: the generator's readings, each kind on its own timestamps (k counts per kind). */
  const requestFor = (kind: Kind, lane: number, k: number): RequestInit => {
    const readings = readingsOf({ kind: 'readings', perRequest: PER_REQUEST, channels: CHANNELS, tsBase: tsBase + (kind === 'lp' ? 1_800_000 : 0) }, lane, k, 1, LANES)
    return {
      method: 'POST', keepalive: true,
      headers: { authorization: `Bearer ${devices[lane]!.key}`, 'content-type': kind === 'lp' ? 'text/plain; charset=utf-8' : 'application/json' },
      body: kind === 'lp' ? readingsLineProtocol(`d${lane}`, readings) : readingsJson(readings),
    }
  }

  /** Server CPU µs per reading over one segment of `kind`. */
  const segment = async (kind: Kind): Promise<number> => {
    let next = 0
    const before = cpuMicros(server.pid)
    await Promise.all(Array.from({ length: LANES }, async (_, lane) => {
      while (next < REQUESTS) {
        next++
        const answer = await fetch(url[kind], requestFor(kind, lane, sent[kind]++))
        const text = await answer.text()
        if (answer.status !== expected[kind]) throw new Error(`${kind}: ${answer.status} ${text}`)
      }
    }))
    return (cpuMicros(server.pid) - before) / (REQUESTS * PER_REQUEST)
  }

  const costs: Record<Kind, number[]> = { json: [], lp: [] }
  const differences: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? [...KINDS].reverse() : KINDS
    const cost: Partial<Record<Kind, number>> = {}
    for (const kind of order) cost[kind] = await segment(kind)
    if (round < WARMUP_ROUNDS) continue
    for (const kind of KINDS) costs[kind].push(cost[kind]!)
    if (KINDS.length === 2) differences.push(cost.lp! - cost.json!)
    console.log(`round ${round + 1}: ${KINDS.map((kind) => `${kind} ${cost[kind]!.toFixed(3)}`).join(', ')} µs/reading`)
  }
  const what = `${REQUESTS} requests × ${PER_REQUEST} readings a segment, ${LANES} lanes, ${ROUNDS - WARMUP_ROUNDS} rounds`
  console.log(`server CPU per reading (medians; ${what}): ${KINDS.map((kind) => `${kind === 'lp' ? 'line protocol' : 'JSON'} ${median(costs[kind]).toFixed(3)} µs`).join(', ')}`)
  if (differences.length) {
    const cheaper = differences.filter((d) => d < 0).length
    console.log(`line protocol − JSON by round: median ${median(differences).toFixed(3)} µs; line protocol cheaper in ${cheaper} of ${differences.length} rounds`)
  }
} finally {
  await server.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
process.exit(0)
