// What QuestDB's rollup views cost QuestDB per reading, without our API: `bun bench/questdb-view-cost.ts [rows]
// [rounds]` with BENCH_QUESTDB_HTTP and BENCH_QUESTDB_PG_URL pointing at a QuestDB with materialized views (8.3.1
// on), and BENCH_QUESTDB_PID its JVM's pid. Each round makes three fresh tables through our store (questdbStore: the
// table and its views) and keeps, in turn:
//   none          no views (dropped at once): the baseline;
//   table-minute  the layout before the one-second step: the minute view on the table, hours from minutes, days
//                 from hours;
//   chain         the views as the store makes them (VIEW_CHAIN: one second from the table, then minutes, hours, days).
// Into each it POSTs `rows` readings over ILP/HTTP as fast as QuestDB takes them (2,000 per request, 8 in flight,
// 128 devices × 4 channels, stamped with the clock as live readings are, so they fall in the current minute), and
// reads QuestDB's CPU from /proc from the first request until every view has refreshed from the table's last
// transaction and QuestDB has applied it. Prints QuestDB's CPU per reading and the readings per second to that point.
import { questdbStore } from '../ingest/stores/questdb.ts'
import { VIEW_CHAIN } from '../ingest/stores/questdb-rollups.ts'
import { loadConfig } from '../src/config.ts'
import { cpuWindow } from './lib/proc.ts'
import { count, dropTable, exec, QUESTDB_HTTP, QUESTDB_ILP, QUESTDB_PG_URL, waitForViews } from './lib/questdb.ts'

const rows = Number(process.argv[2] ?? 18_000_000)
const rounds = Number(process.argv[3] ?? 2)
const pid = Number(process.env.BENCH_QUESTDB_PID)
if (!pid) throw new Error('set BENCH_QUESTDB_PID to the QuestDB JVM\'s pid')
const PER_REQUEST = 2_000
const IN_FLIGHT = 8
const DEVICES = 128
const CHANNELS = 4

type Layout = 'none' | 'table-minute' | 'chain'

/** The minute view on the table and the two above it, as the store made them before VIEW_CHAIN. */
async function tableMinute(table: string): Promise<void> {
  const keys = 'ts, account_id, device_id, channel, metric, environment_id'
  await exec(`create materialized view ${table}_1m as (select ${keys}, count() cnt, sum(value) sum_v, min(value) min_v, max(value) max_v, last(value) last_v, last(ts) last_ts from ${table} sample by 1m) partition by day`)
  for (const [level, base] of [['1h', '1m'], ['1d', '1h']] as const) {
    await exec(`create materialized view ${table}_${level} as (select ${keys}, sum(cnt) cnt, sum(sum_v) sum_v, min(min_v) min_v, max(max_v) max_v, last(last_v) last_v, max(last_ts) last_ts from ${table}_${base} sample by ${level}) partition by ${level === '1d' ? 'month' : 'day'}`)
  }
}

/** Request `k`'s body: every device's channels in turn, each reading a distinct (device, channel, time). */
function body(table: string, k: number): string {
  const nowUs = Date.now() * 1000 + (k % 250) * 4
  let text = ''
  for (let j = 0; j < PER_REQUEST; j++) {
    const channel = Math.floor(j / DEVICES) % CHANNELS
    text += `${table},account_id=acct_bench,device_id=dev_${j % DEVICES},channel=c${channel},metric=m${channel},environment_id=env_bench value=${((k * 31 + j * 7) % 1000) / 10} ${nowUs + Math.floor(j / (DEVICES * CHANNELS))}\n`
  }
  return text
}

async function round(layout: Layout, n: number): Promise<void> {
  const table = `bench_view_cost_${layout.replace('-', '_')}_${n}_${Date.now().toString(36)}`
  const store = await questdbStore(loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table }))
  await store.close()
  if (layout !== 'chain') for (const level of [...VIEW_CHAIN].reverse()) await exec(`drop materialized view if exists ${table}_${level}`)
  if (layout === 'table-minute') await tableMinute(table)
  try {
    const window = cpuWindow({ questdb: [pid] })
    const started = performance.now()
    const inFlight = new Set<Promise<void>>()
    for (let k = 0; k * PER_REQUEST < rows; k++) {
      const sent: Promise<void> = fetch(`${QUESTDB_HTTP}/write?precision=u`, { method: 'POST', body: body(table, k) })
        .then(async (r) => { if (r.status !== 204) throw new Error(`QuestDB answered ${r.status}: ${await r.text()}`) })
        .finally(() => inFlight.delete(sent))
      inFlight.add(sent)
      if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight)
    }
    await Promise.all(inFlight)
    const writtenMs = performance.now() - started
    while ((await count(table)) < rows) await Bun.sleep(20)
    if (layout !== 'none') await waitForViews(table)
    const ms = performance.now() - started
    const cpu = window()
    const cpuSeconds = cpu.cores.questdb! * cpu.seconds
    console.log(`${layout.padEnd(12)} round ${n}: ${rows} readings written in ${writtenMs.toFixed(0)} ms, settled in ${ms.toFixed(0)} ms (${Math.round(rows / (ms / 1000)).toLocaleString('en-US')} readings/s); QuestDB ${((cpuSeconds * 1e6) / rows).toFixed(2)} µs CPU/reading`)
  } finally {
    await dropTable(table)
  }
}

for (let n = 1; n <= rounds; n++) for (const layout of ['none', 'table-minute', 'chain'] as const) await round(layout, n)
