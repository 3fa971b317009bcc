// `bun run bench:plot [out.svg]`: each target line's ratio (ours ÷ baseline) across the runs recorded in
// bench/results.jsonl, one panel per line over time (lib/ratio-history.ts), written to bench/ratios.svg unless
// told. The committed picture is redrawn by hand when one wants it current; the log is the record.
import { writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { ROOT } from './lib/processes.ts'
import { ratioHistorySvg, ratioSeries } from './lib/ratio-history.ts'
import { readLog, RUN_LOG } from './lib/run-log.ts'

const args = process.argv.slice(2)
if (args.length > 1 || args[0]?.startsWith('-')) {
  console.error('usage: bun run bench:plot [out.svg]      (default bench/ratios.svg)')
  process.exit(2)
}
const out = args[0] ?? join(ROOT, 'bench', 'ratios.svg')
const runs = readLog(ROOT)
const series = ratioSeries(runs)
const starts = runs.map((r) => r.record.startedAt).sort()
const span = starts.length ? `${starts[0]!.slice(0, 10)} to ${starts[starts.length - 1]!.slice(0, 10)}` : 'no runs'
writeFileSync(out, ratioHistorySvg(series, 'Bench: ours ÷ baseline of every line with a target, run by run', `${runs.length} runs in ${RUN_LOG}, ${span} · each point one run (hover: its date, commit and measure) · drawn by bun run bench:plot`))
console.log(`wrote ${relative(process.cwd(), out) || out}: ${series.length} lines with a target, ${series.reduce((n, s) => n + s.points.length, 0)} points from ${runs.length} runs`)
