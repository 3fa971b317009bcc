// QuestDB's CPU per reading for our rows, ILP version 1 (text) against version 2 (binary doubles), without our API:
// `bun bench/ilp-questdb-cpu.ts [rows] [views|no-views]` with BENCH_QUESTDB_HTTP, BENCH_QUESTDB_ILP and
// BENCH_QUESTDB_PG_URL pointing at a QuestDB that offers version 2 (9.x), and BENCH_QUESTDB_PID its JVM's pid.
// Each round makes a fresh table through our store (questdbStore: the table, and its rollup views unless
// `no-views`, which drops them at once), writes the ingest scenarios' readings (128 devices × 10 channels,
// 100 per request) through the store's write() in 1880-reading batches, 4 in flight (the store's defaults), and
// reads QuestDB's CPU from /proc from the first request until every row is visible (its WAL applied, and with
// views their refresh left to run on). Versions alternate, 1 2 1 2, on tables of their own.
import { questdbStore } from '../ingest/stores/questdb.ts'
import type { Reading } from '../ingest/stores/interface.ts'
import { loadConfig } from '../src/config.ts'
import { cpuWindow } from './lib/proc.ts'
import { count, dropTable, exec, QUESTDB_ILP, QUESTDB_PG_URL, waitForViews } from './lib/questdb.ts'
import { readingsOf } from './load/generator.ts'
import { VIEW_CHAIN } from '../ingest/stores/questdb-rollups.ts'

const rows = Number(process.argv[2] ?? 400_000)
const views = process.argv[3] !== 'no-views'
const pid = Number(process.env.BENCH_QUESTDB_PID)
if (!pid) throw new Error('set BENCH_QUESTDB_PID to the QuestDB JVM\'s pid')
const BATCH = 1880
const IN_FLIGHT = 4
const DEVICES = 128

const readings: Reading[] = []
for (let k = 0; readings.length < rows; k++) {
  for (let lane = 0; lane < DEVICES && readings.length < rows; lane++) {
    for (const r of readingsOf({ kind: 'readings', perRequest: 100, channels: 10, tsBase: Date.UTC(2026, 10, 20) }, lane, k, 1, DEVICES)) {
      readings.push({ accountId: 'acct_bench', deviceId: `sdev_${lane}`, channel: r.channel, metric: `metric_${r.channel}`, environmentId: 'env_bench', ts: r.ts, value: r.value })
    }
  }
}

for (const version of [1, 2, 1, 2] as const) {
  const table = `bench_ilp_cpu_v${version}_${Date.now().toString(36)}`
  const store = await questdbStore(loadConfig({}, { questdbIlp: `${QUESTDB_ILP.replace(/;?$/, ';')}protocol_version=${version};`, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table }))
  if (!views) for (const level of [...VIEW_CHAIN].reverse()) await exec(`drop materialized view if exists ${table}_${level}`)
  try {
    const window = cpuWindow({ questdb: [pid] })
    const cpu0 = process.cpuUsage()
    const started = performance.now()
    let next = 0
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (next < readings.length) {
        const from = next
        next = Math.min(readings.length, from + BATCH)
        await store.write(readings.slice(from, next))
      }
    }))
    const sentMs = performance.now() - started
    const cpu = process.cpuUsage(cpu0)
    while ((await count(table)) < readings.length) await Bun.sleep(50)
    if (views) await waitForViews(table)
    const w = window()
    const questdbUs = (w.cores.questdb! * w.seconds * 1e6) / readings.length
    console.log(`v${version}${views ? ' (views)' : ''}: ${readings.length} readings sent in ${sentMs.toFixed(0)} ms (${((readings.length / sentMs) * 1000).toFixed(0)}/s), visible after ${(w.seconds * 1000).toFixed(0)} ms; QuestDB ${questdbUs.toFixed(2)} µs CPU per reading; this process ${(((cpu.user + cpu.system)) / readings.length).toFixed(2)} µs; machine ${w.machineCores.toFixed(2)} cores busy`)
  } finally {
    await store.close()
    await dropTable(table)
  }
}
