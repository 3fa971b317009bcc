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

const fmt = (n: number | undefined, digits = 0) => n === undefined || !Number.isFinite(n) ? '-' : n >= 10_000 ? Math.round(n).toLocaleString('en-US') : n.toFixed(digits)

export function verdict(l: Line): string {
  if (l.target === undefined || l.ratio === undefined) return 'info'
  return l.ratio >= l.target ? 'pass' : 'miss'
}

export function table(lines: Line[]): string {
  const rows = [['scenario', 'measure', 'ours', 'baseline', 'unit', 'ratio', 'target', 'result']]
  for (const l of lines) {
    rows.push([
      l.scenario, l.measure, fmt(l.ours, l.ours < 100 ? 1 : 0), fmt(l.baseline, (l.baseline ?? 0) < 100 ? 1 : 0), l.unit,
      l.ratio === undefined ? '-' : l.ratio.toFixed(2), l.target === undefined ? '-' : `≥ ${l.target}${l.kind === 'goal' ? ' (goal)' : ''}`, verdict(l),
    ])
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
  const out = rows.map((r) => r.map((cell, c) => (c >= 2 && c <= 3 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join('  ').trimEnd())
  out.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '))
  const notes = lines.filter((l) => l.note).map((l) => `  ${l.scenario} / ${l.measure}: ${l.note}`)
  return out.join('\n') + (notes.length ? `\n\nnotes:\n${notes.join('\n')}` : '')
}
