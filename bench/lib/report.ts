// What scenarios hand back and how the run prints it: one line per measure with ours, the baseline measured in
// the same run, their ratio, the target, and whether it was met (informational: a bench never fails a build).
export interface Line {
  scenario: string
  measure: string
  ours: number
  baseline?: number
  unit: string
  /** ours ÷ baseline, or for "lower is better" measures without a baseline, undefined. */
  ratio?: number
  /** Ratio to reach (≥). Undefined for informational lines. */
  target?: number
  /** "target" lines are the targets; "goal" lines its softer goals. */
  kind?: 'target' | 'goal'
  note?: string
  /** What the load run behind `ours` saw (fill with statsOf from lib/load.ts where there is one). */
  stats?: LineStats
}

export interface LineStats {
  /** Latency of successful answers, ms. */
  p50?: number
  p95?: number
  p99?: number
  /** Answers that were not the expected status, plus failed requests. */
  errors?: number
  /** The server's peak resident memory over the scenario, MiB. */
  peakRssMiB?: number
  /** The server's CPU over the measured window, cores (1.0 = one core busy). */
  serverCores?: number
}

export interface ScenarioOutput {
  lines: Line[]
  details: Record<string, unknown>
  skipped?: string
}

export interface ScenarioContext {
  /** Length of each measured window, seconds. */
  seconds: number
  warmupSeconds: number
  /** Generator processes per load run. */
  generators: number
  log(message: string): void
  /** Outputs of the scenarios already run in this invocation (latency reads ingest-postgres's max rate). */
  earlier: Map<string, ScenarioOutput>
  /**
   * Per-run overrides from the command line (`--concurrency`, `--batch`, `--store`); a scenario uses those
   * that apply to it and its own defaults otherwise.
   */
  options: ScenarioOptions
}

export interface ScenarioOptions {
  /** Lanes (connections or devices) driving load. */
  concurrency?: number
  /** Readings per request, or items per page: the scenario's unit of batching. */
  batch?: number
  /** Which readings store the ingest and readings scenarios use. */
  store?: 'sql' | 'questdb'
  /**
   * A deployment to load instead of a server the bench starts (`--target URL --token hrs_pat_…`). Scenarios that
   * need a local server or store for their baseline skip themselves, saying so.
   */
  target?: { baseUrl: string; token: string }
}

export type Scenario = (ctx: ScenarioContext) => Promise<ScenarioOutput>

export function line(scenario: string, measure: string, ours: number, baseline: number | undefined, unit: string, target?: number, kind: 'target' | 'goal' = 'target', note?: string, stats?: LineStats): Line {
  return { scenario, measure, ours, baseline, unit, ratio: baseline ? ours / baseline : undefined, target: target, kind: target === undefined ? undefined : kind, note, stats }
}

/** A scenario's answer to `--target` when its baseline has to run on this machine beside a server it starts. */
export const needsLocalServer = (): ScenarioOutput => ({ lines: [], details: {}, skipped: 'needs a local server (its baseline runs here)' })

/** Big numbers with thousands separators, small ones with `digits` decimals; `absent` for none. */
export const fmt = (n: number | undefined, digits = 0, absent = '-') => n === undefined || !Number.isFinite(n) ? absent : n >= 10_000 ? Math.round(n).toLocaleString('en-US') : n.toFixed(digits)

/** One decimal below 100 (latencies of a few ms, ratios of counts), none above. */
const auto = (n: number | undefined, absent: string) => fmt(n, (n ?? 0) < 100 ? 1 : 0, absent)

export function verdict(l: Line): string {
  if (l.target === undefined || l.ratio === undefined) return 'info'
  return l.ratio >= l.target ? 'pass' : 'miss'
}

/** A line's figures as table cells, the same in the console, the Markdown report and bench:compare. */
export function cellsOf(l: Line, absent = '-') {
  const s = l.stats ?? {}
  return {
    scenario: l.scenario, measure: l.measure, ours: auto(l.ours, absent), baseline: auto(l.baseline, absent), unit: l.unit,
    ratio: l.ratio === undefined ? absent : l.ratio.toFixed(2),
    target: l.target === undefined ? absent : `≥ ${l.target}${l.kind === 'goal' ? ' (goal)' : ''}`,
    result: verdict(l),
    p50: auto(s.p50, absent), p95: auto(s.p95, absent), p99: auto(s.p99, absent),
    errors: s.errors === undefined ? absent : String(s.errors),
    peakRssMiB: fmt(s.peakRssMiB, 0, absent), serverCores: fmt(s.serverCores, 2, absent),
  }
}

/** Plain-text columns: the header, a rule under it, `right` columns right-aligned (numbers). */
export function textTable(rows: string[][], right: number[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
  const out = rows.map((r) => r.map((cell, c) => (right.includes(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join('  ').trimEnd())
  out.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '))
  return out.join('\n')
}

/**
 * The console report: one row per measure, then, for the lines with a load run behind them, its latency,
 * errors, memory and CPU in a second table (one wide table would not fit a terminal), then the notes.
 */
export function table(lines: Line[]): string {
  const rows = [['scenario', 'measure', 'ours', 'baseline', 'unit', 'ratio', 'target', 'result']]
  for (const l of lines) {
    const c = cellsOf(l)
    rows.push([c.scenario, c.measure, c.ours, c.baseline, c.unit, c.ratio, c.target, c.result])
  }
  let out = textTable(rows, [2, 3, 5])
  const withStats = lines.filter((l) => l.stats)
  if (withStats.length) {
    const statRows = [['scenario', 'measure', 'p50 ms', 'p95 ms', 'p99 ms', 'errors', 'peak RSS MiB', 'server cores']]
    for (const l of withStats) {
      const c = cellsOf(l)
      statRows.push([c.scenario, c.measure, c.p50, c.p95, c.p99, c.errors, c.peakRssMiB, c.serverCores])
    }
    out += `\n\nthe load behind the lines:\n${textTable(statRows, [2, 3, 4, 5, 6, 7])}`
  }
  const notes = lines.filter((l) => l.note).map((l) => `  ${l.scenario} / ${l.measure}: ${l.note}`)
  return out + (notes.length ? `\n\nnotes:\n${notes.join('\n')}` : '')
}
