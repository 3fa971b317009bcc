// The QuestDB baseline of issue 4: the same rows written straight to QuestDB with the official client
// (@questdb/nodejs-client) from one process, flushing every `batch` rows, each flush one ILP/HTTP request, with
// `senders` flushes in flight (one sender each). Built row by row exactly as ingest/stores/questdb.ts does.
// Runs under Bun (`bun bench/baselines/questdb-sender.ts <json>`) and, bundled by the bench with the client
// left external, under Node, so the two runtimes can be compared on the same code.
//
// `patchEscape` replaces the client's per-character writeEscaped with a whole-string write when the string
// needs no escaping (diagnosis only: it shows how much of the client's cost is that loop).
import { Sender } from '@questdb/nodejs-client'
import { cpuWindow } from '../lib/proc.ts'
import { makeRows, type Row, type RowsSpec } from './rows.ts'

export interface SenderConfig {
  ilp: string
  table: string
  spec: RowsSpec
  batch: number
  senders: number
  /** Await each row's at() as the store does (true), or only the flush. */
  awaitRows: boolean
  patchEscape: boolean
  /** Processes whose CPU to report over the timed window (QuestDB's JVM). */
  watch?: Record<string, number[]>
}

function patchWriteEscaped(sender: Sender) {
  let proto = Object.getPrototypeOf((sender as unknown as { buffer: object }).buffer)
  while (proto && !Object.prototype.hasOwnProperty.call(proto, 'writeEscaped')) proto = Object.getPrototypeOf(proto)
  if (!proto || proto.__benchPatched) return
  const original = proto.writeEscaped as (data: string, quoted?: boolean) => void
  const special = /[ ,=\n\r"\\]/
  proto.writeEscaped = function (this: { buffer: Buffer; position: number }, data: string, quoted = false) {
    if (special.test(data)) return original.call(this, data, quoted)
    this.position += this.buffer.write(data, this.position)
  }
  proto.__benchPatched = true
}

/**
 * QUESTDB_ILP for the official client as a baseline: flushed only when told, Node's http transport under Bun
 * (its undici one does not work there), and text ILP (protocol_version=1) unless chosen: what our writer sends,
 * and what QuestDB 7.4 needs, since without it the client asks /settings, gets `{}` and fails with a TypeError.
 */
function clientConfig(ilp: string, runtime: 'bun' | 'node' = 'bun'): string {
  let config = ilp.replace(/;?$/, ';')
  if (!/auto_flush=/.test(config)) config += 'auto_flush=off;'
  if (!/stdlib_http=/.test(config) && runtime === 'bun') config += 'stdlib_http=on;'
  if (!/protocol_version=/.test(config)) config += 'protocol_version=1;'
  return config
}

/** Where the time went: building rows into the sender's buffer, and waiting for flush() (the HTTP request). */
const spent = { buildMs: 0, flushMs: 0, flushes: 0, slowestFlushMs: 0 }

async function writeBatch(sender: Sender, table: string, rows: Row[], from: number, to: number, awaitRows: boolean) {
  const t0 = performance.now()
  for (let i = from; i < to; i++) {
    const r = rows[i]!
    sender.table(table).symbol('account_id', r.accountId).symbol('device_id', r.deviceId).symbol('channel', r.channel).symbol('metric', r.metric)
    const row = sender.floatColumn('value', r.value).at(r.ts, 'ms')
    if (awaitRows) await row
  }
  const t1 = performance.now()
  await sender.flush()
  const t2 = performance.now()
  spent.buildMs += t1 - t0
  spent.flushMs += t2 - t1
  spent.flushes++
  spent.slowestFlushMs = Math.max(spent.slowestFlushMs, t2 - t1)
}

const main = async () => {
  const config = JSON.parse(process.argv[2]!) as SenderConfig
  const rows = makeRows(config.spec)
  const runtime = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined' ? 'bun' : 'node'
  const senderConfig = clientConfig(config.ilp, runtime)
  const senders = await Promise.all(Array.from({ length: config.senders }, () => Sender.fromConfig(senderConfig)))
  if (config.patchEscape) patchWriteEscaped(senders[0]!)

  const window = cpuWindow(config.watch ?? {})
  const cpu0 = process.cpuUsage()
  const started = performance.now()
  let next = 0
  await Promise.all(senders.map(async (sender) => {
    for (;;) {
      const from = next
      if (from >= rows.length) return
      next = Math.min(rows.length, from + config.batch)
      await writeBatch(sender, config.table, rows, from, next, config.awaitRows)
    }
  }))
  const ms = performance.now() - started
  const cpu = process.cpuUsage(cpu0)
  const machine = window()
  await Promise.all(senders.map((s) => s.close()))
  console.log(`result ${JSON.stringify({ runtime, rows: rows.length, ms, rowsPerSecond: (rows.length / ms) * 1000, cpu: (cpu.user + cpu.system) / 1000 / ms, ...spent, machineCores: machine.machineCores, watchedCores: machine.cores, config: senderConfig })}`)
  process.exit(0)
}

await main()
