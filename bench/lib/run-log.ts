// The run log, bench/results.jsonl: what each `bun run bench` proved, one compact record per run on one line,
// appended by every run and committed like code. A record holds the commit, when, the machine, settings and
// options, and every line's figures (ours, baseline, ratio, target, verdict, the load's percentiles, the note), to
// four significant digits; the scenarios' details (per-second timelines, every load run's statuses) stay in the
// full reports that bench/results/ (ignored by git) keeps on the machine that ran them. `bench:compare`, the drift
// section of every report and `bench:plot` read this file. Evidence cites a record by its commit and start
// (`report`, e.g. 2026-11-29T07-04-11-e339a8a), which stays true when merges add lines around it.
//
// Branches append at the end of the same file, so .gitattributes merges it as a union (both sides' lines kept);
// readers order records by their start, never by their place in the file.
import { appendFileSync, existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { verdict, type Line, type LineStats, type ScenarioOutput } from './report.ts'

/** Repository-relative. */
export const RUN_LOG = 'bench/results.jsonl'

/** A line as recorded: a Line with its figures rounded and its pass/miss/info verdict spelled out. */
export interface RecordLine extends Line {
  result: string
}

export interface RunRecord {
  /** `git rev-parse --short HEAD` (with -dirty when tracked files differed), or "unknown" for the earliest runs. */
  commit: string
  startedAt: string
  /** How long the run took. */
  seconds: number
  command: string
  machine: { cores: number; cpu?: string; bun: string; loadAverage?: { before: number; after: number } }
  settings: { seconds: number; warmupSeconds: number; generators: number }
  /** ctx.options as given, the token left out. */
  options?: { concurrency?: number; batch?: number; store?: string; target?: string }
  lines: RecordLine[]
  /** Scenarios that skipped themselves, with why. */
  skipped?: Record<string, string>
  /** Scenarios that could not run, with the first line of their error. */
  failed?: Record<string, string>
  /** The full report's base name, `<date>-<commit>` (its .json, .md and .svg in bench/results/ where it ran). */
  report: string
}

/** A record as read from the log, with its line number there (1-based). */
export interface LoggedRun {
  line: number
  record: RunRecord
}

/** What `bun run bench` knows at its end: the record's fields with the full lines and every scenario's output. */
export interface RunSummary {
  command: string
  startedAt: string
  seconds: number
  commit?: string
  bun: string
  cores: number
  cpu?: string
  loadAverage?: { before: number; after: number }
  settings: RunRecord['settings']
  options?: RunRecord['options']
  lines: Line[]
  scenarios: Record<string, ScenarioOutput | { error: string }>
}

/** 2026-11-22T01-02-03: UTC, sortable, and free of the colons some file systems refuse. */
export const resultStamp = (at: Date) => at.toISOString().replace(/\.\d+Z$/, '').replace(/:/g, '-')

/** The full report's base name: `<date>-<commit>`. */
export const reportName = (run: { startedAt: string; commit?: string }) => `${resultStamp(new Date(run.startedAt))}-${run.commit ?? 'nocommit'}`

/** Four significant digits: finer than any run repeats, and a third of the characters. Integers stay whole. */
export const rounded = (n: number | undefined) => (n === undefined || Number.isInteger(n) || !Number.isFinite(n) ? n : Number(n.toPrecision(4)))

function roundedStats(stats: LineStats): LineStats {
  return Object.fromEntries(Object.entries(stats).map(([k, v]) => [k, rounded(v)]))
}

/** A Line as the log keeps it: no undefined fields, figures to four significant digits, its verdict. */
export function recordLine(l: Line): RecordLine {
  const out = { scenario: l.scenario, measure: l.measure, ours: rounded(l.ours)! } as RecordLine
  if (l.baseline !== undefined) out.baseline = rounded(l.baseline)
  out.unit = l.unit
  if (l.ratio !== undefined) out.ratio = rounded(l.ratio)
  if (l.target !== undefined) out.target = l.target
  if (l.kind !== undefined) out.kind = l.kind
  out.result = verdict(l)
  if (l.stats) out.stats = roundedStats(l.stats)
  if (l.note) out.note = l.note
  return out
}

/** The compact record of a run. */
export function toRecord(run: RunSummary): RunRecord {
  const skipped: Record<string, string> = {}
  const failed: Record<string, string> = {}
  for (const [name, output] of Object.entries(run.scenarios)) {
    if ('error' in output) failed[name] = output.error.split('\n')[0]!
    else if (output.skipped) skipped[name] = output.skipped
  }
  const machine: RunRecord['machine'] = { cores: run.cores, bun: run.bun }
  if (run.cpu) machine.cpu = run.cpu
  if (run.loadAverage) machine.loadAverage = run.loadAverage
  const options = Object.fromEntries(Object.entries(run.options ?? {}).filter(([, v]) => v !== undefined))
  return {
    commit: run.commit ?? 'unknown', startedAt: run.startedAt, seconds: run.seconds, command: run.command, machine,
    settings: run.settings,
    ...(Object.keys(options).length ? { options } : {}),
    lines: run.lines.map(recordLine),
    ...(Object.keys(skipped).length ? { skipped } : {}),
    ...(Object.keys(failed).length ? { failed } : {}),
    report: reportName(run),
  }
}

/** The records of a log's text, each with its line number; a line that is not a record throws, naming it. */
export function parseLog(text: string, source = RUN_LOG): LoggedRun[] {
  return text.split('\n').flatMap((raw, i) => {
    if (!raw.trim()) return []
    let record: RunRecord
    try { record = JSON.parse(raw) } catch (error) { throw new Error(`${source}:${i + 1} is not JSON: ${(error as Error).message}`) }
    if (!Array.isArray(record?.lines) || typeof record.startedAt !== 'string') throw new Error(`${source}:${i + 1} is not a bench record (no "lines" or "startedAt")`)
    return [{ line: i + 1, record }]
  })
}

/** The log as it is in the work tree (this run's record included once appended); none when there is no file. */
export function readLog(root: string): LoggedRun[] {
  const path = join(root, RUN_LOG)
  return existsSync(path) ? parseLog(readFileSync(path, 'utf8')) : []
}

/**
 * The log as committed at HEAD (`git show`), so that a scratch run appended but not committed is never what
 * another run is compared with. None outside a repository, or before the log's first commit.
 */
export function committedLog(root: string): LoggedRun[] {
  try {
    const shown = Bun.spawnSync(['git', 'show', `HEAD:${RUN_LOG}`], { cwd: root, stdout: 'pipe', stderr: 'ignore' })
    return shown.exitCode === 0 ? parseLog(shown.stdout.toString(), `${RUN_LOG} at HEAD`) : []
  } catch {
    return [] // no git on this machine
  }
}

/** Appends one record as one line to the log at `path` (bench/results.jsonl, or BENCH_RUN_LOG's file). */
export function appendRecord(path: string, record: RunRecord): void {
  // A hand-edited log may have lost its last newline: the record must still start a line of its own.
  const text = existsSync(path) ? readFileSync(path, 'utf8') : ''
  appendFileSync(path, (text && !text.endsWith('\n') ? '\n' : '') + JSON.stringify(record) + '\n')
}
