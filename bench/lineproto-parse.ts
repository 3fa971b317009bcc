// The two bodies' parse in one process, no server: `bun bench/lineproto-parse.ts [json|lp|lp-parse …]`. JSON is
// what POST /api/v1/sensors/readings does to its body (parseJsonBody, then parseBatch against the device); line
// protocol what /api/v2/write does (parseLineProtocol with the handler's SeriesCache, then linesToReadings);
// lp-parse the parse alone. The bodies are the ingest-lineproto scenario's (bench/load/generator.ts: 100 readings,
// 16 devices taking turns, channels c0…c9 mapped). CPU time per reading (the process's, so the garbage
// collector's threads count) over `N` bodies (20,000), in 5 passes taking turns (the first 2 warm up): where
// bench/lineproto-cpu.ts says how the whole request compares, this says whether the parse is the difference (run
// it under `bun --cpu-prof` for the functions).
import { parseLineProtocol, SeriesCache } from '../ingest/influx/line-protocol.ts'
import { linesToReadings } from '../ingest/influx/write.ts'
import { parseBatch } from '../ingest/parse.ts'
import { parseJsonBody } from '../src/http/json-body.ts'
import { medianBy } from './lib/load.ts'
import { readingsJson, readingsLineProtocol, readingsOf } from './load/generator.ts'

const N = Number(process.env.N || 20_000)
const DEVICES = 16
const PER_REQUEST = 100
const BODIES = 256
const channels = new Map(Array.from({ length: 10 }, (_, c) => [`c${c}`, { metric: 'temperature', environmentId: null }]))
const devices = Array.from({ length: DEVICES }, (_, i) => ({ id: `dev_${i}`, accountId: 'acct_bench', channels, unmapped: new Set<string>(), configuration: [] }))
const tsBase = Date.now() - 3_600_000
const bodies = (kind: 'json' | 'lp') => Array.from({ length: BODIES }, (_, k) => {
  const lane = k % DEVICES
  const readings = readingsOf({ kind: 'readings', perRequest: PER_REQUEST, channels: 10, tsBase }, lane, k, 1, DEVICES)
  return kind === 'lp' ? readingsLineProtocol(`d${lane}`, readings) : readingsJson(readings)
})
const json = bodies('json')
const lp = bodies('lp')
const cache = new SeriesCache()
let parsed = 0
const RUNS: Record<string, (i: number) => void> = {
  json: (i) => { parsed += parseBatch((parseJsonBody(json[i % BODIES]!) as { readings: unknown[] }).readings, devices[i % DEVICES]!, Date.now()).readings.length },
  lp: (i) => { const body = lp[i % BODIES]!; parsed += linesToReadings(body, parseLineProtocol(body, 'ms', cache), devices[i % DEVICES]!, Date.now()).parsed.readings.length },
  'lp-parse': (i) => { parsed += parseLineProtocol(lp[i % BODIES]!, 'ms', cache).points.length },
}
const kinds = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(RUNS)
const times: Record<string, number[]> = {}
for (let pass = 0; pass < 5; pass++) {
  for (const kind of kinds) {
    const run = RUNS[kind]
    if (!run) throw new Error(`unknown kind ${kind}: json, lp or lp-parse`)
    const started = process.cpuUsage()
    for (let i = 0; i < N; i++) run(i)
    const used = process.cpuUsage(started)
    if (pass >= 2) (times[kind] ??= []).push((used.user + used.system) / (N * PER_REQUEST))
  }
}
if (parsed !== 5 * kinds.length * N * PER_REQUEST) throw new Error(`parsed ${parsed} readings, expected ${5 * kinds.length * N * PER_REQUEST}`)
const median = (values: number[]) => medianBy(values, (value) => value)
console.log(kinds.map((kind) => `${kind} ${median(times[kind]!).toFixed(3)} µs`).join(', '), `per reading (medians of 3 passes of ${N} bodies)`)
