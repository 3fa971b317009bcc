// What encoding one reading of a batch costs in our ILP writer, in process, without QuestDB:
// `bun bench/ilp-encode.ts [seconds]`. The readings are the ingest scenarios' (bench/load/generator.ts: 128
// devices, 10 channels, 100 readings per request), 2000 to a batch as the QuestDB store's default batch; every
// series prefix is cached beforehand, as it is after a server's first batches. Compared, per reading:
//   text (string)  the writer before bytes: one string per batch (prefix + `${value} ${ts}\n`), then UTF-8
//                  encoded, as fetch does with a string body
//   v1 bytes       IlpBody, version 1: the value and timestamp as ASCII into one reused buffer, copied out
//   v2 bytes       IlpBody, version 2: the value as `==`, type byte and 8 bytes
// Each is run in turn for the same time, three rounds, and the best round is reported (the machine is shared).
import { IlpBody } from '../ingest/stores/ilp.ts'
import type { Reading } from '../ingest/stores/interface.ts'
import { SeriesPrefixes } from '../ingest/stores/questdb.ts'
import { readingsOf } from './load/generator.ts'

const seconds = Number(process.argv[2] ?? 1)
const BATCH = 2000
const DEVICES = 128
const readings: Reading[] = []
for (let k = 0; readings.length < BATCH * 10; k++) {
  for (let lane = 0; lane < DEVICES; lane++) {
    for (const r of readingsOf({ kind: 'readings', perRequest: 100, channels: 10, tsBase: Date.UTC(2026, 10, 20) }, lane, k, 1, DEVICES)) {
      readings.push({ accountId: 'acct_0123456789abcdef', deviceId: `sdev_${String(lane).padStart(20, '0')}`, channel: r.channel, metric: `metric_${r.channel}`, environmentId: 'env_0123456789abcdef', ts: r.ts, value: r.value })
    }
  }
}
const batches = Array.from({ length: readings.length / BATCH }, (_, i) => readings.slice(i * BATCH, (i + 1) * BATCH))

const TABLE = 'sensor_readings'
const textPrefixes = new Map<Reading, string>()
const bytePrefixes = new SeriesPrefixes(TABLE)
const decoder = new TextDecoder()
for (const r of readings) textPrefixes.set(r, decoder.decode(bytePrefixes.of(r)))

let sink = 0
const encoders: Record<string, (batch: Reading[]) => void> = {
  'text (string)': (batch) => {
    let body = ''
    // The prefix lookup stands in for the old string cache (a Map get per reading, as SeriesPrefixes does).
    for (const r of batch) body += textPrefixes.get(r)! + `${r.value} ${r.ts}\n`
    sink += Buffer.from(body).length
  },
  'v1 bytes': ((body) => (batch: Reading[]) => {
    for (const r of batch) body.row(bytePrefixes.of(r), r.value, r.ts)
    sink += body.take().length
  })(new IlpBody(1)),
  'v2 bytes': ((body) => (batch: Reading[]) => {
    for (const r of batch) body.row(bytePrefixes.of(r), r.value, r.ts)
    sink += body.take().length
  })(new IlpBody(2)),
}

const best: Record<string, number> = {}
for (let round = 0; round < 3; round++) {
  for (const [name, encode] of Object.entries(encoders)) {
    let n = 0
    const cpu0 = process.cpuUsage()
    const until = performance.now() + seconds * 1000
    while (performance.now() < until) {
      for (const batch of batches) encode(batch)
      n += readings.length
    }
    const cpu = process.cpuUsage(cpu0)
    const nsPerReading = ((cpu.user + cpu.system) * 1000) / n
    best[name] = Math.min(best[name] ?? Infinity, nsPerReading)
  }
}
const baseline = best['text (string)']!
for (const [name, ns] of Object.entries(best)) console.log(`${name.padEnd(14)} ${(ns / 1000).toFixed(3)} µs CPU per reading (${(ns / baseline).toFixed(2)}× text)`)
if (sink < 0) console.log(sink)
