// The full report of a run, for the machine that ran it: bench/results/ (ignored by git) gets <date>-<commit>.json
// (everything, each scenario's details included), .md (the table and notes, to read or paste into a review) and
// .svg (the picture), and latest.json / latest.md. What is committed is the run's compact record in the run log
// (run-log.ts, bench/results.jsonl), which this report's drift section is computed from.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { driftMarkdown, type Drift } from './drift.ts'
import { plotSvg } from './plot.ts'
import { cellsOf, verdict, type Line } from './report.ts'
import { reportName, resultStamp, RUN_LOG, type RunSummary } from './run-log.ts'

function git(root: string, args: string[]): string | undefined {
  try {
    const run = Bun.spawnSync(['git', ...args], { cwd: root, stdout: 'pipe', stderr: 'ignore' })
    return run.exitCode === 0 ? run.stdout.toString().trim() : undefined
  } catch {
    return undefined // no git on this machine
  }
}

/**
 * `git rev-parse --short HEAD`, with "-dirty" when tracked files differ from it (untracked ones do not count, nor
 * the run log, which earlier runs may have appended to), or "nocommit" outside a repository.
 */
export function gitRevision(root: string): string {
  const head = git(root, ['rev-parse', '--short', 'HEAD'])
  if (!head) return 'nocommit'
  const changes = git(root, ['status', '--porcelain', '--untracked-files=no', '--', '.', `:(exclude)${RUN_LOG}`])
  return changes ? `${head}-dirty` : head
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ')

export function markdownTable(lines: Line[]): string {
  const head = ['scenario', 'measure', 'ours', 'baseline', 'unit', 'ratio', 'target', 'result', 'p50 ms', 'p95 ms', 'p99 ms', 'errors', 'peak RSS MiB', 'server cores']
  const numeric = new Set(['ours', 'baseline', 'ratio', 'p50 ms', 'p95 ms', 'p99 ms', 'errors', 'peak RSS MiB', 'server cores'])
  const rows = lines.map((l) => {
    const c = cellsOf(l, '–')
    return [c.scenario, c.measure, c.ours, c.baseline, c.unit, c.ratio, c.target, c.result, c.p50, c.p95, c.p99, c.errors, c.peakRssMiB, c.serverCores]
  })
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map((h) => (numeric.has(h) ? '---:' : '---')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n')
}

function describeOptions(options: RunSummary['options']): string {
  const set = Object.entries(options ?? {}).filter(([, v]) => v !== undefined).map(([k, v]) => `${k} ${v}`)
  return set.length ? set.join(', ') : 'none (each scenario’s defaults)'
}

/** `drift`: driftOf(the run's record, committedLog(…)), for the section on what moved since the last committed run. */
export function markdownReport(report: RunSummary, svgName: string, drift: Drift[]): string {
  const out: string[] = []
  out.push(`# Bench results ${resultStamp(new Date(report.startedAt))} (${report.commit ?? 'commit unknown'})`, '')
  out.push(`- command: \`${report.command}\``)
  out.push(`- commit: ${report.commit ?? 'unknown'}`)
  const load = report.loadAverage ? `, load average ${report.loadAverage.before} before and ${report.loadAverage.after} after` : ''
  out.push(`- machine: ${report.cores} cores${report.cpu ? ` (${report.cpu})` : ''}, bun ${report.bun}${load}`)
  out.push(`- settings: ${report.settings.seconds} s measured per load run after ${report.settings.warmupSeconds} s of warm-up, ${report.settings.generators} generator process${report.settings.generators === 1 ? '' : 'es'}`)
  out.push(`- options: ${describeOptions(report.options)}`)
  out.push(`- took ${report.seconds} s, started ${report.startedAt}`)
  out.push(`- recorded: one line of ${RUN_LOG}, \`"report":"${reportName(report)}"\``, '')
  out.push(`![ours ÷ baseline per measure, and latency percentiles](${svgName})`, '')
  out.push('## Results', '')
  out.push(report.lines.length ? markdownTable(report.lines) : 'No lines: every scenario was skipped or failed.', '')
  out.push('Ratio is ours ÷ baseline, both measured in this run; targets are informational (a miss fails nothing). p50–p99, errors and server cores are those of the load run behind *ours*; – where a line has none.', '')
  if (report.lines.length) out.push(driftMarkdown(drift))
  const unfinished = Object.entries(report.scenarios).flatMap(([name, output]) =>
    'error' in output ? [`- \`${name}\`: FAILED: ${output.error.split('\n')[0]}`] : output.skipped ? [`- \`${name}\` skipped: ${output.skipped}`] : [])
  if (unfinished.length) out.push('## Skipped or failed', '', ...unfinished, '')
  const notes = report.lines.filter((l) => l.note)
  if (notes.length) {
    out.push('## Notes', '')
    for (const l of notes) out.push(`- **${l.scenario} / ${l.measure}**: ${l.note}`)
    out.push('')
  }
  return out.join('\n')
}

/** Writes the dated .json, .md and .svg and the latest.* copies into `dir`; returns the dated files' base name. */
export function writeResults(dir: string, report: RunSummary, drift: Drift[]): string {
  const base = reportName(report)
  const json = JSON.stringify({ ...report, lines: report.lines.map((l) => ({ ...l, result: verdict(l) })) }, null, 2) + '\n'
  const markdown = markdownReport(report, `${base}.svg`, drift)
  const svg = plotSvg(report.lines, `Bench ${resultStamp(new Date(report.startedAt))} · ${report.commit ?? 'commit unknown'}`, `${report.command} · ${report.cores} cores · bun ${report.bun}`)
  writeFileSync(join(dir, `${base}.json`), json)
  writeFileSync(join(dir, `${base}.md`), markdown)
  writeFileSync(join(dir, `${base}.svg`), svg)
  writeFileSync(join(dir, 'latest.json'), json)
  writeFileSync(join(dir, 'latest.md'), markdown)
  return base
}
