// `bun run bench:compare a.json b.json`: two bench results side by side, line by line (matched on scenario and
// measure): ours in each, the change from a to b, each run's ratio to its own baseline, and p99 where the
// lines have it. The ratios are the figures to trust across machines or busy days: each baseline was measured
// beside ours in the same run, so it moves with the machine; ours alone does not.
//
// `bun run bench:compare [file.json]`: one results file (the newest in bench/results when none is given) against
// the last committed run of each of its lines: each ratio then and now, its change, and the lines that moved more
// than 10% (lib/drift.ts, which the Markdown report of every run uses too).
//
// Measures that name a figure of their own run ("… at 463 req/s", "3603/batch") still match when that figure is
// the only difference and the pairing is unambiguous.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { count, DRIFT_THRESHOLD, describeDrift, driftCounts, driftOf, fileName, higherIsBetter, pairLines } from './lib/drift.ts'
import { ROOT } from './lib/processes.ts'
import { cellsOf, textTable } from './lib/report.ts'
import { committedRuns, type BenchReport, type ReportLine } from './lib/results.ts'

const USAGE = `usage: bun run bench:compare <a.json> <b.json>
       bun run bench:compare [file.json]

With two results files written by \`bun run bench\` (bench/results/*.json): change is b against a.
Units in ms and MiB are lower-is-better; the others higher-is-better.

With one, or none (the newest results file in bench/results, committed or not): each line's ratio against the
same line in the most recent results file committed in git that ran before it, and the lines whose ratio moved
more than ${DRIFT_THRESHOLD * 100}% (a regression or an improvement, by which way the line's ratio is better).`

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

/** The results file in bench/results that started last (latest.json is a copy of one of them). */
function newestResults(): string {
  const dir = join(ROOT, 'bench', 'results')
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'latest.json') : []
  if (!files.length) fail('no results files in bench/results: run `bun run bench` first, or name one')
  const startedAt = (f: string) => { try { return Date.parse(JSON.parse(readFileSync(join(dir, f), 'utf8')).startedAt) || 0 } catch { return 0 } }
  const newest = files.map((f) => ({ f, at: startedAt(f) })).reduce((x, y) => (y.at > x.at ? y : x))
  return join(dir, newest.f)
}

function compareWithCommitted(path: string): void {
  const report = load(path)
  const committed = committedRuns(ROOT)
  const drift = driftOf(report, committed)
  const rows = [['scenario', 'measure', 'ratio then', 'ratio now', 'change', 'better', 'moved', 'compared with']]
  for (const d of drift) {
    const c = describeDrift(d)
    const run = d.previous?.run
    // Capitals, so that a regression stands out in a long table.
    const moved = d.moved === 'regression' ? 'REGRESSION' : c.moved
    rows.push([d.line.scenario, d.line.measure, c.before, c.now, c.change, d.line.ratio == null ? '' : higherIsBetter(d.line) ? 'higher' : 'lower', moved, run ? fileName(run.file) : ''])
  }
  console.log(`${describe('now', path, report)}\n`)
  console.log(`each line against the most recent results file committed in git (bench/results at HEAD, ${committed.length} files) that ran before ${report.startedAt} and has it with a ratio\n`)
  console.log(textTable(rows, [2, 3, 4]))
  const n = driftCounts(drift)
  console.log(`\n${count(n.compared, 'line')} compared: ${n.moved} moved more than ${DRIFT_THRESHOLD * 100}% (${count(n.regressions, 'regression')}, ${count(n.improvements, 'improvement')}); ` +
    `${n.withoutCommittedRun} without an earlier committed run; ${n.withoutRatio} without a ratio to compare.`)
  console.log('change: ratio now against ratio then (ours ÷ baseline, each measured in its own run). better: which way the ratio improves (lower for costs such as ms or µs without a target). A move this size can be noise: rerun before believing it.')
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
    console.log(USAGE)
    process.exit(0)
  }
  if (args.length > 2) fail(`expected at most two results files, got ${args.length} arguments`)
  if (args.length < 2) {
    compareWithCommitted(args[0] ?? newestResults())
    process.exit(0)
  }
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
