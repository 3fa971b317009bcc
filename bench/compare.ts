// `bun run bench:compare a.json b.json`: two bench results side by side, line by line (matched on scenario and
// measure): ours in each, the change from a to b, each run's ratio to its own baseline, and p99 where the
// lines have it. The ratios are the figures to trust across machines or busy days: each baseline was measured
// beside ours in the same run, so it moves with the machine; ours alone does not.
//
// Measures that name a figure of their own run ("… at 463 req/s", "3603/batch") still match when that figure is
// the only difference and the pairing is unambiguous.
import { existsSync, readFileSync } from 'node:fs'
import { basename } from 'node:path'
import { cellsOf, textTable } from './lib/report.ts'
import type { BenchReport, ReportLine } from './lib/results.ts'

const USAGE = `usage: bun run bench:compare <a.json> <b.json>

Compares two results files written by \`bun run bench\` (bench/results/*.json): change is b against a.
Units in ms and MiB are lower-is-better; the others higher-is-better.`

function fail(message: string): never {
  console.error(`bench:compare: ${message}\n\n${USAGE}`)
  process.exit(2)
}

function load(path: string): BenchReport {
  if (!existsSync(path)) fail(`no such file: ${path}`)
  let report: BenchReport
  try { report = JSON.parse(readFileSync(path, 'utf8')) } catch (error) { fail(`${path} is not JSON: ${(error as Error).message}`) }
  if (!Array.isArray(report?.lines)) fail(`${path} is not a bench results file (no "lines")`)
  return report
}

const key = (l: ReportLine) => `${l.scenario}\u0000${l.measure}`
/** The measure with its numbers blanked: "ack latency p50 at 463 req/s" and "… at 516 req/s" are one measure. */
const shape = (l: ReportLine) => `${l.scenario}\u0000${l.measure.replace(/\d[\d,.]*/g, '#')}`

/** Pairs of lines (one side missing when a line is in one file only): a's order, b's extra lines after their scenario's. */
export function pairLines(a: ReportLine[], b: ReportLine[]): [ReportLine | undefined, ReportLine | undefined][] {
  const unmatchedB = new Set(b)
  const partner: (ReportLine | undefined)[] = a.map((l) => {
    const match = b.find((m) => unmatchedB.has(m) && key(m) === key(l))
    if (match) unmatchedB.delete(match)
    return match
  })
  a.forEach((l, i) => {
    if (partner[i]) return
    const sameShapeA = a.filter((x, j) => !partner[j] && shape(x) === shape(l))
    const sameShapeB = [...unmatchedB].filter((x) => shape(x) === shape(l))
    // Only a one-to-one pairing is safe; otherwise the lines stay apart.
    if (sameShapeA.length === 1 && sameShapeB.length === 1) { partner[i] = sameShapeB[0]; unmatchedB.delete(sameShapeB[0]!) }
  })
  const pairs: [ReportLine | undefined, ReportLine | undefined][] = a.map((l, i) => [l, partner[i]])
  for (const extra of unmatchedB) {
    const after = pairs.findLastIndex(([x, y]) => (x ?? y)!.scenario === extra.scenario)
    pairs.splice(after === -1 ? pairs.length : after + 1, 0, [undefined, extra])
  }
  return pairs
}

function change(a: ReportLine | undefined, b: ReportLine | undefined): string {
  if (!a) return 'only in b'
  if (!b) return 'only in a'
  if (a.unit !== b.unit) return `unit ${a.unit} → ${b.unit}`
  if (!a.ours) return '-'
  const pct = ((b.ours - a.ours) / Math.abs(a.ours)) * 100
  return `${pct >= 0 ? '+' : ''}${pct.toFixed(1)}%`
}

function describe(label: string, path: string, r: BenchReport): string {
  const options = Object.entries(r.options ?? {}).filter(([, v]) => v !== undefined).map(([k, v]) => `${k} ${v}`).join(', ')
  return `${label}: ${basename(path)}  ${r.startedAt ?? ''}  commit ${r.commit ?? 'unknown'}  ${r.cores ?? '?'} cores, bun ${r.bun ?? '?'}  ` +
    `${r.settings ? `${r.settings.seconds} s windows` : ''}${options ? `  options: ${options}` : ''}\n   ${r.command ?? ''}`
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
    console.log(USAGE)
    process.exit(0)
  }
  if (args.length !== 2) fail(`expected two results files, got ${args.length} argument${args.length === 1 ? '' : 's'}`)
  const [pathA, pathB] = args as [string, string]
  const a = load(pathA)
  const b = load(pathB)

  const rows = [['scenario', 'measure', 'ours a', 'ours b', 'unit', 'change', 'ratio a', 'ratio b', 'p99 a', 'p99 b']]
  for (const [la, lb] of pairLines(a.lines, b.lines)) {
    const ca = la ? cellsOf(la) : undefined
    const cb = lb ? cellsOf(lb) : undefined
    const either = (ca ?? cb)!
    rows.push([
      either.scenario, (lb ?? la)!.measure, ca?.ours ?? '', cb?.ours ?? '', either.unit, change(la, lb),
      ca?.ratio ?? '', cb?.ratio ?? '', ca?.p99 ?? '', cb?.p99 ?? '',
    ])
  }
  console.log(`${describe('a', pathA, a)}\n${describe('b', pathB, b)}\n`)
  console.log(textTable(rows, [2, 3, 5, 6, 7, 8, 9]))
  console.log('\nchange: ours in b against ours in a (for ms and MiB lower is better). Across machines or loads, compare the ratios: each baseline ran beside ours.')
}
