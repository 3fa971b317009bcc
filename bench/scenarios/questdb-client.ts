// Why the official QuestDB client is slower than raw ILP: the same rows (BENCH_QDB_DIAG_ROWS, default 100 000)
// written from one process under Bun and under Node (its default undici transport and the Node http one), with
// other batch sizes, several senders, without awaiting each row, and with the client's per-character escaping
// replaced by a whole-string write. Every variant is compared with the stock configuration our store uses
// (Bun, Node http transport, one sender, 1000 rows per flush, each row awaited). Informational lines only.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { RowsSpec } from '../baselines/rows.ts'
import type { RawIlpConfig } from '../baselines/questdb-raw-ilp.ts'
import type { SenderConfig } from '../baselines/questdb-sender.ts'
import { BUN, ROOT, runForResult } from '../lib/processes.ts'
import { intoFreshTable, machineNote, QUESTDB_HTTP, QUESTDB_ILP, questdbAnswers, questdbJava, RAW_ILP, SENDER, type RawResult, type SenderResult } from '../lib/questdb.ts'
import { line, type Line, type Scenario } from '../lib/report.ts'
import { metricOf } from '../lib/setup.ts'

const NAME = 'questdb-client'
const NODE_BUNDLE = join(ROOT, 'bench', 'results', 'tmp', 'questdb-sender.mjs')

/** The sender baseline as one ES module for Node, the client left as an import of node_modules. */
async function bundleForNode(): Promise<boolean> {
  mkdirSync(join(ROOT, 'bench', 'results', 'tmp'), { recursive: true })
  const build = Bun.spawn([BUN, 'build', SENDER, '--target=node', '--external', '@questdb/nodejs-client', '--outfile', NODE_BUNDLE], { cwd: ROOT, stdout: 'ignore', stderr: 'pipe' })
  return (await build.exited) === 0
}

/** The writer's own CPU per row: unlike rows/s, it hardly moves when QuestDB or others take the cores. */
const cpuPerRow = (r: RawResult) => ((r.cpu * r.ms * 1000) / r.rows).toFixed(1)

const nodeAvailable = () => Bun.which('node') !== null

export const questdbClient: Scenario = async (ctx) => {
  // It measures the QuestDB client library against this machine's QuestDB, whatever deployment --target names.
  if (ctx.options.target) return { lines: [], details: {}, skipped: 'measures the QuestDB client against a local QuestDB, not a deployment' }
  if (!(await questdbAnswers())) return { lines: [], details: {}, skipped: `no QuestDB answers at ${QUESTDB_HTTP}` }
  const rows = Number(process.env.BENCH_QDB_DIAG_ROWS || 100_000)
  const spec: RowsSpec = {
    accountId: 'acct_bench', deviceIds: Array.from({ length: 32 }, (_, i) => `dev_bench_${String(i).padStart(4, '0')}aaaaaaaaaaaaaaaaaa`),
    perRequest: 100, channels: 10, tsBase: Date.now() - 2 * 3_600_000, rows, metrics: Array.from({ length: 10 }, (_, c) => metricOf(c)),
  }
  const node = nodeAvailable() && (await bundleForNode())
  const stock: Omit<SenderConfig, 'table' | 'spec'> = { ilp: QUESTDB_ILP, batch: 1000, senders: 1, awaitRows: true, patchEscape: false }
  type Variant = { label: string; runtime: 'bun' | 'node'; config: Omit<SenderConfig, 'table' | 'spec'> }
  const variants: Variant[] = [
    { label: 'client, Bun, http transport, 1000/flush (stock)', runtime: 'bun', config: stock },
    ...(node ? [
      { label: 'client, Node, undici transport', runtime: 'node' as const, config: stock },
      { label: 'client, Node, http transport', runtime: 'node' as const, config: { ...stock, ilp: `${QUESTDB_ILP};stdlib_http=on` } },
    ] : []),
    { label: 'client, Bun, 100/flush', runtime: 'bun', config: { ...stock, batch: 100 } },
    { label: 'client, Bun, 10000/flush', runtime: 'bun', config: { ...stock, batch: 10_000 } },
    { label: 'client, Bun, 2 senders in flight', runtime: 'bun', config: { ...stock, senders: 2 } },
    { label: 'client, Bun, init_buf_size=4 MiB', runtime: 'bun', config: { ...stock, ilp: `${QUESTDB_ILP};init_buf_size=4194304` } },
    { label: 'client, Bun, rows not awaited', runtime: 'bun', config: { ...stock, awaitRows: false } },
    { label: 'client, Bun, escaping patched', runtime: 'bun', config: { ...stock, patchEscape: true } },
    ...(node ? [{ label: 'client, Node, escaping patched', runtime: 'node' as const, config: { ...stock, patchEscape: true } }] : []),
  ]
  const results: Record<string, SenderResult | RawResult> = {}
  let reference: number | undefined
  const lines: Line[] = []
  for (const v of variants) {
    ctx.log(`${NAME}: ${v.label}…`)
    const argv = v.runtime === 'bun' ? [BUN, SENDER] : ['node', NODE_BUNDLE]
    const r = await intoFreshTable('diag', (t) => runForResult<SenderResult>(v.label, [...argv, JSON.stringify({ ...v.config, table: t, spec, watch: { questdb: questdbJava() } } satisfies SenderConfig)]))
    results[v.label] = r
    reference ??= r.rowsPerSecond
    lines.push(line(NAME, v.label, r.rowsPerSecond, reference, 'rows/s', undefined, 'target',
      `${cpuPerRow(r)} µs CPU/row, ${r.cpu.toFixed(2)} cores, ${machineNote(r)}; ${r.buildMs.toFixed(0)} ms building rows (${((r.buildMs * 1000) / r.rows).toFixed(1)} µs/row), ${r.flushMs.toFixed(0)} ms in ${r.flushes} flushes (slowest ${r.slowestFlushMs.toFixed(0)} ms)`))
  }
  for (const inFlight of [1, 2]) {
    const label = `raw ILP/HTTP POST, 1000/request, ${inFlight} in flight`
    ctx.log(`${NAME}: ${label}…`)
    const r = await intoFreshTable('diag', (t) => runForResult<RawResult>(label, [BUN, RAW_ILP, JSON.stringify({ http: QUESTDB_HTTP, table: t, spec, batch: 1000, inFlight, watch: { questdb: questdbJava() } } satisfies RawIlpConfig)]))
    results[label] = r
    lines.push(line(NAME, label, r.rowsPerSecond, reference, 'rows/s', undefined, 'target', `${cpuPerRow(r)} µs CPU/row, ${r.cpu.toFixed(2)} cores, ${machineNote(r)}; ${((r.ms * 1000) / r.rows).toFixed(1)} µs/row end to end`))
  }
  return { lines, details: { rows, node, results }, skipped: undefined }
}
