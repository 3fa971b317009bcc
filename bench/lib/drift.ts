// Drift: each line of a run against the same line in the last committed run that has it, so that a ratio that
// moved shows the day the change lands. Used by `bun run bench:compare [run]` (console) and by the Markdown
// report every `bun run bench` writes. Only ratios are compared: each baseline ran beside ours, so a ratio holds
// across machines and busy days where ours alone does not.
//
// Everything here is pure; the runs to compare with are records of the run log (run-log.ts: committedLog reads
// bench/results.jsonl at HEAD) or a test's.
import { cellsOf, type Line } from './report.ts'
import { RUN_LOG, type LoggedRun, type RecordLine, type RunRecord } from './run-log.ts'

/** A ratio that changed by more than this share of its earlier value has moved. */
export const DRIFT_THRESHOLD = 0.1

export interface Drift {
  /** The line of the run being checked. */
  line: RecordLine
  /** The same line in the most recent committed run before this one that has it with a ratio. */
  previous?: { line: RecordLine; run: LoggedRun }
  /** (ratio now − ratio before) ÷ ratio before; undefined when there is nothing to compare. */
  change?: number
  /** Set when |change| exceeds the threshold, judged by which way this line's ratio is better. */
  moved?: 'regression' | 'improvement'
}

const key = (l: RecordLine) => `${l.scenario}\u0000${l.measure}`
/** The measure with its numbers blanked: "ack latency p50 at 463 req/s" and "… at 516 req/s" are one measure. */
export const shape = (l: Line) => `${l.scenario}\u0000${l.measure.replace(/\d[\d,.]*/g, '#')}`

/** Pairs of lines (one side missing when a line is in one file only): a's order, b's extra lines after their scenario's. */
export function pairLines(a: RecordLine[], b: RecordLine[]): [RecordLine | undefined, RecordLine | undefined][] {
  const unmatchedB = new Set(b)
  const partner: (RecordLine | undefined)[] = a.map((l) => {
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
  const pairs: [RecordLine | undefined, RecordLine | undefined][] = a.map((l, i) => [l, partner[i]])
  for (const extra of unmatchedB) {
    const after = pairs.findLastIndex(([x, y]) => (x ?? y)!.scenario === extra.scenario)
    pairs.splice(after === -1 ? pairs.length : after + 1, 0, [undefined, extra])
  }
  return pairs
}

/** Units of cost (time, memory, CPU per unit of work): less of ours, so a smaller ours ÷ baseline, is better. */
const COST_UNITS = new Set(['ms', 'µs', 'µs/req', 'MiB', 'KiB', 'B'])

/** Lines whose unit says the wrong thing about their ratio. */
const DIRECTION_EXCEPTIONS: { scenario: string; measure: RegExp; higherIsBetter: boolean }[] = [
  // history puts the one-shot SQL's time in ours and the API's in baseline, so that its ratio is higher-is-better.
  { scenario: 'history', measure: /÷ API$/, higherIsBetter: true },
  // fleet's reconnect storm counts refused connections: fewer is better.
  { scenario: 'fleet', measure: /^reconnect storm: refused/, higherIsBetter: false },
]

/**
 * Which way a line's ratio (ours ÷ baseline) is better. A line with a target is met at ratio ≥ target (verdict in
 * report.ts), so higher; otherwise a cost unit (ms, µs, KiB…) is lower-is-better and the rest (rates, counts) higher.
 */
export function higherIsBetter(l: Line): boolean {
  if (l.target !== undefined) return true
  const exception = DIRECTION_EXCEPTIONS.find((e) => e.scenario === l.scenario && e.measure.test(l.measure))
  if (exception) return exception.higherIsBetter
  return !COST_UNITS.has(l.unit)
}

const hasRatio = (l: RecordLine | undefined): l is RecordLine & { ratio: number } => l?.ratio != null && Number.isFinite(l.ratio)

/**
 * For each line of `report` with a ratio, the same line (pairLines' rules) in the most recent of `committed` that
 * started before `report` and has it with a ratio; runs that started at the same time or later never count, so a
 * committed run is not compared with itself.
 */
export function previousLines(report: RunRecord, committed: LoggedRun[]): Map<RecordLine, { line: RecordLine; run: LoggedRun }> {
  const started = Date.parse(report.startedAt)
  const earlier = committed
    .filter((run) => Date.parse(run.record.startedAt) < started)
    .sort((x, y) => Date.parse(y.record.startedAt) - Date.parse(x.record.startedAt))
  const found = new Map<RecordLine, { line: RecordLine; run: LoggedRun }>()
  const wanted = new Set<RecordLine>(report.lines.filter(hasRatio))
  for (const run of earlier) {
    if (!wanted.size) break
    // All of the report's lines take part, so that the numbers-blanked fallback sees what pairLines always sees.
    for (const [before, now] of pairLines(run.record.lines, report.lines)) {
      // A ratio of 0 before (nothing refused, say) gives no share to move by: look further back.
      if (now && wanted.has(now) && hasRatio(before) && before.ratio !== 0) { found.set(now, { line: before, run }); wanted.delete(now) }
    }
  }
  return found
}

/** Every line of `report` with its committed predecessor, the ratio's change and whether it moved past `threshold`. */
export function driftOf(report: RunRecord, committed: LoggedRun[], threshold = DRIFT_THRESHOLD): Drift[] {
  const previous = previousLines(report, committed)
  return report.lines.map((line) => {
    const before = previous.get(line)
    if (!before || !hasRatio(line)) return { line, previous: before }
    const change = (line.ratio - before.line.ratio!) / Math.abs(before.line.ratio!)
    // The epsilon keeps a change of exactly the threshold (1.1 ÷ 1 − 1 is 0.10000000000000009) inside it.
    if (Math.abs(change) <= threshold + 1e-9) return { line, previous: before, change }
    const better = higherIsBetter(line) ? change > 0 : change < 0
    return { line, previous: before, change, moved: better ? 'improvement' : 'regression' }
  })
}

/** How many lines were compared, moved which way, had no earlier committed run, or had no ratio. */
export function driftCounts(drift: Drift[]) {
  const moved = drift.filter((d) => d.moved)
  return {
    compared: drift.filter((d) => d.change !== undefined).length,
    moved: moved.length,
    regressions: moved.filter((d) => d.moved === 'regression').length,
    improvements: moved.filter((d) => d.moved === 'improvement').length,
    withoutCommittedRun: drift.filter((d) => hasRatio(d.line) && !d.previous).length,
    withoutRatio: drift.filter((d) => !hasRatio(d.line)).length,
  }
}

/** "3 lines", "1 line" */
export const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`

/** "+12.3%" */
export const percent = (change: number) => `${change >= 0 ? '+' : ''}${(change * 100).toFixed(1)}%`

/** A line's ratio as the tables show it. */
export const ratioCell = (l: Line | undefined) => (l ? cellsOf(l).ratio : '-')

/** What a drift says in a sentence's worth of cells: ratio before → now, change, verdict. */
export function describeDrift(d: Drift): { before: string; now: string; change: string; moved: string } {
  const now = ratioCell(d.line)
  if (!hasRatio(d.line)) return { before: '-', now, change: 'no ratio', moved: '' }
  if (!d.previous) return { before: '-', now, change: 'no committed run', moved: '' }
  return { before: ratioCell(d.previous.line), now, change: d.change === undefined ? '-' : percent(d.change), moved: d.moved ?? '' }
}

/** The section of the Markdown report: lines that moved more than the threshold since the last committed run. */
export function driftMarkdown(drift: Drift[], threshold = DRIFT_THRESHOLD): string {
  const pct = `${Math.round(threshold * 100)}%`
  const out = [`## Moved more than ${pct} since the last committed run`, '']
  const counts = driftCounts(drift)
  if (!counts.compared) {
    out.push(`No committed run shares its lines (records in ${RUN_LOG} at HEAD that ran before this one), so there is nothing to compare with.`, '')
    return out.join('\n')
  }
  const others = counts.withoutCommittedRun ? `; ${counts.withoutCommittedRun} ${counts.withoutCommittedRun === 1 ? 'line has' : 'lines have'} no earlier committed run` : ''
  if (!counts.moved) {
    out.push(`None of the ${count(counts.compared, 'line')} compared moved more than ${pct}${others}.`, '')
    return out.join('\n')
  }
  const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ')
  out.push('| scenario | measure | ratio before → now | change | moved | compared with |', '| --- | --- | ---: | ---: | --- | --- |')
  for (const d of drift.filter((d) => d.moved)) {
    const c = describeDrift(d)
    const run = d.previous!.run
    out.push(`| ${[d.line.scenario, d.line.measure, `${c.before} → ${c.now}`, c.change, c.moved, run.record.report].map(cell).join(' | ')} |`)
  }
  out.push('', `${counts.moved} of the ${count(counts.compared, 'line')} compared moved (${count(counts.regressions, 'regression')})${others}. Each line is compared with the most recent run recorded in ${RUN_LOG} as committed at HEAD that ran before this one and has it with a ratio (named by its start and commit); change is ratio now against ratio before, and whether it is a regression follows which way the line's ratio is better (lower for costs such as ms or µs without a target, higher otherwise). A move this size can be noise: rerun before believing it.`, '')
  return out.join('\n')
}
