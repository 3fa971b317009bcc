// `bun run bench:compare <a> <b>`: two bench runs side by side, line by line (matched on scenario and measure):
// ours in each, the change from a to b, each run's ratio to its own baseline, and p99 where the lines have it. The
// ratios are the figures to trust across machines or busy days: each baseline was measured beside ours in the
// same run, so it moves with the machine; ours alone does not.
//
// `bun run bench:compare [run]`: one run (the newest in bench/results.jsonl when none is given) against the last
// committed run of each of its lines: each ratio then and now, its change, and the lines that moved more than 10%
// (lib/drift.ts, which the Markdown report of every run uses too).
//
// A run is named by its record in bench/results.jsonl: part of its `report` name (`<date>-<commit>`, so a commit,
// a date or both: the newest record that matches), or `#N` for line N of the file; or by the path of a full
// report (bench/results/<date>-<commit>.json, on the machine that ran it). Measures that name a figure of their
// own run ("… at 463 req/s", "3603/batch") still match when that figure is the only difference and the pairing is
// unambiguous.
import { existsSync, readFileSync } from 'node:fs'
import { count, DRIFT_THRESHOLD, describeDrift, driftCounts, driftOf, higherIsBetter, pairLines } from './lib/drift.ts'
import { ROOT } from './lib/processes.ts'
import { cellsOf, textTable } from './lib/report.ts'
import { committedLog, readLog, RUN_LOG, toRecord, type LoggedRun, type RecordLine, type RunRecord, type RunSummary } from './lib/run-log.ts'

const USAGE = `usage: bun run bench:compare <a> <b>
       bun run bench:compare [run]

A run is part of its record's "report" name in ${RUN_LOG} (<date>-<commit>: a commit, a date, or both; the
newest record that matches), #N for line N of that file, or the path of a full report (bench/results/*.json).

With two runs: change is b against a. Units in ms and MiB are lower-is-better; the others higher-is-better.

With one, or none (the newest record in ${RUN_LOG}, committed or not): each line's ratio against the same line in
the most recent run recorded in ${RUN_LOG} as committed in git that ran before it, and the lines whose ratio moved
more than ${DRIFT_THRESHOLD * 100}% (a regression or an improvement, by which way the line's ratio is better).`

export class CompareError extends Error {}

/** A run as compare shows it: its record, and where it came from. */
export interface NamedRun {
  record: RunRecord
  source: string
}

const newest = (runs: LoggedRun[]) => runs.reduce((x, y) => (Date.parse(y.record.startedAt) > Date.parse(x.record.startedAt) ? y : x))
const named = (run: LoggedRun): NamedRun => ({ record: run.record, source: `${RUN_LOG}:${run.line}` })

/** The run `selector` names (see USAGE), or the newest in the log when there is no selector. */
export function selectRun(selector: string | undefined, log: LoggedRun[]): NamedRun {
  if (selector === undefined) {
    if (!log.length) throw new CompareError(`no runs in ${RUN_LOG}: run \`bun run bench\` first, or name a full report`)
    return named(newest(log))
  }
  if (/^#\d+$/.test(selector)) {
    const found = log.find((run) => run.line === Number(selector.slice(1)))
    if (!found) throw new CompareError(`${RUN_LOG} has no record on line ${selector.slice(1)}`)
    return named(found)
  }
  if (selector.endsWith('.json') && existsSync(selector)) {
    let report: RunSummary
    try { report = JSON.parse(readFileSync(selector, 'utf8')) } catch (error) { throw new CompareError(`${selector} is not JSON: ${(error as Error).message}`) }
    if (!Array.isArray(report?.lines) || !report.startedAt) throw new CompareError(`${selector} is not a bench report (no "lines")`)
    return { record: toRecord({ ...report, scenarios: report.scenarios ?? {} }), source: selector }
  }
  const matching = log.filter((run) => run.record.report.includes(selector))
  if (!matching.length) throw new CompareError(`no run in ${RUN_LOG} whose report name contains "${selector}", and no such file`)
  const run = named(newest(matching))
  return matching.length === 1 ? run : { ...run, source: `${run.source}, the newest of ${matching.length} matching "${selector}"` }
}

function change(a: RecordLine | undefined, b: RecordLine | undefined): string {
  if (!a) return 'only in b'
  if (!b) return 'only in a'
  if (a.unit !== b.unit) return `unit ${a.unit} → ${b.unit}`
  if (!a.ours) return '-'
  const pct = ((b.ours - a.ours) / Math.abs(a.ours)) * 100
  return `${pct >= 0 ? '+' : ''}${pct.toFixed(1)}%`
}

function describe(label: string, { record: r, source }: NamedRun): string {
  const options = Object.entries(r.options ?? {}).filter(([, v]) => v !== undefined).map(([k, v]) => `${k} ${v}`).join(', ')
  return `${label}: ${r.report} (${source})  ${r.startedAt}  commit ${r.commit}  ${r.machine.cores} cores, bun ${r.machine.bun}  ` +
    `${r.settings.seconds} s windows${options ? `  options: ${options}` : ''}\n   ${r.command}`
}

/** Two runs, line by line. */
export function compareRuns(a: NamedRun, b: NamedRun): string {
  const rows = [['scenario', 'measure', 'ours a', 'ours b', 'unit', 'change', 'ratio a', 'ratio b', 'p99 a', 'p99 b']]
  for (const [la, lb] of pairLines(a.record.lines, b.record.lines)) {
    const ca = la ? cellsOf(la) : undefined
    const cb = lb ? cellsOf(lb) : undefined
    const either = (ca ?? cb)!
    rows.push([
      either.scenario, (lb ?? la)!.measure, ca?.ours ?? '', cb?.ours ?? '', either.unit, change(la, lb),
      ca?.ratio ?? '', cb?.ratio ?? '', ca?.p99 ?? '', cb?.p99 ?? '',
    ])
  }
  return `${describe('a', a)}\n${describe('b', b)}\n\n${textTable(rows, [2, 3, 5, 6, 7, 8, 9])}\n\n` +
    'change: ours in b against ours in a (for ms and MiB lower is better). Across machines or loads, compare the ratios: each baseline ran beside ours.'
}

/** One run against the committed runs before it: the drift table. */
export function compareWithCommitted(now: NamedRun, committed: LoggedRun[]): string {
  const drift = driftOf(now.record, committed)
  const rows = [['scenario', 'measure', 'ratio then', 'ratio now', 'change', 'better', 'moved', 'compared with']]
  for (const d of drift) {
    const c = describeDrift(d)
    // Capitals, so that a regression stands out in a long table.
    const moved = d.moved === 'regression' ? 'REGRESSION' : c.moved
    rows.push([d.line.scenario, d.line.measure, c.before, c.now, c.change, d.line.ratio == null ? '' : higherIsBetter(d.line) ? 'higher' : 'lower', moved, d.previous?.run.record.report ?? ''])
  }
  const n = driftCounts(drift)
  return [
    `${describe('now', now)}\n`,
    `each line against the most recent run recorded in ${RUN_LOG} as committed at HEAD (${committed.length} runs) that ran before ${now.record.startedAt} and has it with a ratio\n`,
    textTable(rows, [2, 3, 4]),
    `\n${count(n.compared, 'line')} compared: ${n.moved} moved more than ${DRIFT_THRESHOLD * 100}% (${count(n.regressions, 'regression')}, ${count(n.improvements, 'improvement')}); ` +
    `${n.withoutCommittedRun} without an earlier committed run; ${n.withoutRatio} without a ratio to compare.`,
    'change: ratio now against ratio then (ours ÷ baseline, each measured in its own run). better: which way the ratio improves (lower for costs such as ms or µs without a target). A move this size can be noise: rerun before believing it.',
  ].join('\n')
}

/** The command: its output for `args` in the repository at `root`; a CompareError for a mistake. */
export function compareCommand(args: string[], root: string): string {
  if (args.length > 2) throw new CompareError(`expected at most two runs, got ${args.length} arguments`)
  const log = readLog(root)
  if (args.length === 2) return compareRuns(selectRun(args[0], log), selectRun(args[1], log))
  return compareWithCommitted(selectRun(args[0], log), committedLog(root))
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
    console.log(USAGE)
    process.exit(0)
  }
  try {
    console.log(compareCommand(args, ROOT))
  } catch (error) {
    if (!(error instanceof CompareError)) throw error
    console.error(`bench:compare: ${error.message}\n\n${USAGE}`)
    process.exit(2)
  }
}
