// `bun run bench [scenario…] [--duration S] [--warmup S] [--concurrency N] [--batch N] [--store sql|questdb]
// [--generators N] [--target URL --token TOKEN]`: runs the bench scenarios (all by default, in order), prints one
// line per measure with ours, the baseline measured in the same run, the ratio and the target; appends the run's
// compact record to bench/results.jsonl (committed: lib/run-log.ts) and writes the full report to
// bench/results/<date>-<commit>.{json,md,svg} and latest.{json,md} (ignored by git). Informational: it exits 0
// whether targets are met or not; 1 when a scenario could not run at all; 2 for a mistake on the command line.
//
// BENCH_SECONDS, BENCH_WARMUP_SECONDS and BENCH_GENERATORS still work (CI sets them); the flags win over them.
// See bench/README.md.
import { mkdirSync } from 'node:fs'
import { cpus } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { commandLine, parseBenchArgs, usage, UsageError, type BenchArgs } from './lib/args.ts'
import { loadAverage, ROOT } from './lib/processes.ts'
import { progress } from './lib/progress.ts'
import { count, DRIFT_THRESHOLD, driftCounts, driftOf } from './lib/drift.ts'
import { gitRevision, writeResults } from './lib/results.ts'
import { appendRecord, committedLog, RUN_LOG, toRecord, type RunSummary } from './lib/run-log.ts'
import { table, type Line, type ScenarioContext, type ScenarioOutput } from './lib/report.ts'
import { SCENARIOS } from './scenarios/index.ts'

const argv = process.argv.slice(2)
const known = Object.keys(SCENARIOS)
let args: BenchArgs
try {
  args = parseBenchArgs(argv, process.env, known)
} catch (error) {
  if (!(error instanceof UsageError)) throw error
  console.error(`bench: ${error.message}\n\n${usage(known)}`)
  process.exit(2)
}
if (args.help) {
  console.log(usage(known))
  process.exit(0)
}

const names = args.scenarios.length ? args.scenarios : known
const started = Date.now()
// Taken before the scenarios run: the code they measure, not whatever HEAD is once they are done.
const commit = gitRevision(ROOT)
const command = commandLine(argv, process.env)
const loadBefore = loadAverage()
const say = progress(names.length, started)
const ctx: ScenarioContext = {
  seconds: args.seconds,
  warmupSeconds: args.warmupSeconds,
  generators: args.generators,
  log: (message) => say.status(message),
  earlier: new Map<string, ScenarioOutput>(),
  options: args.options,
}

say.print(`${command}  (bun ${Bun.version}, ${cpus().length} cores, load average ${loadBefore} before start)`)
if (args.options.target) say.print(`against ${args.options.target.baseUrl}: scenarios whose baseline needs a local server skip themselves`)

const lines: Line[] = []
const outputs: Record<string, ScenarioOutput | { error: string }> = {}
let failed = false
for (const [i, name] of names.entries()) {
  say.scenario(i + 1, name)
  const scenarioStarted = Date.now()
  const loadAtStart = loadAverage()
  try {
    const output = await SCENARIOS[name]!(ctx)
    ctx.earlier.set(name, output)
    outputs[name] = output
    lines.push(...output.lines)
    output.details.loadAverageBefore = loadAtStart
    const took = `${((Date.now() - scenarioStarted) / 1000).toFixed(0)} s`
    say.print(output.skipped ? `${name} skipped: ${output.skipped}` : `${name} done in ${took} (${output.lines.length} line${output.lines.length === 1 ? '' : 's'})`)
  } catch (error) {
    failed = true
    outputs[name] = { error: String((error as Error)?.stack ?? error) }
    say.print(`${name} FAILED: ${String((error as Error)?.stack ?? error)}`)
  }
}
say.stop()

console.log(`\n${lines.length ? table(lines) : 'no lines: every scenario was skipped or failed'}\n`)
for (const [name, output] of Object.entries(outputs)) if ('skipped' in output && output.skipped) console.log(`${name} skipped: ${output.skipped}`)
const seconds = Math.round((Date.now() - started) / 1000)
const loadAfter = loadAverage()
console.log(`command: ${command}   (took ${seconds} s; load average now ${loadAfter}; targets are informational)`)

const { target, ...localOptions } = args.options
const report: RunSummary = {
  command, startedAt: new Date(started).toISOString(), seconds, commit,
  bun: Bun.version, cores: cpus().length, cpu: cpus()[0]?.model, loadAverage: { before: loadBefore, after: loadAfter },
  settings: { seconds: ctx.seconds, warmupSeconds: ctx.warmupSeconds, generators: ctx.generators },
  // The token stays out of files that may be committed.
  options: { ...localOptions, target: target?.baseUrl },
  lines,
  scenarios: outputs,
}
const dir = join(ROOT, 'bench', 'results')
mkdirSync(dir, { recursive: true })
const record = toRecord(report)
const drift = driftOf(record, committedLog(ROOT))
const moved = driftCounts(drift)
if (moved.compared) {
  console.log(`since the last committed run: ${moved.moved ? `${count(moved.moved, 'ratio')} moved more than ${DRIFT_THRESHOLD * 100}% (${count(moved.regressions, 'regression')}); see the .md or bun run bench:compare` : `no ratio moved more than ${DRIFT_THRESHOLD * 100}%`}`)
}
// CI's smoke points BENCH_RUN_LOG elsewhere: its one-second windows are no reference, and its checkout stays clean.
const runLog = process.env.BENCH_RUN_LOG ? resolve(process.env.BENCH_RUN_LOG) : join(ROOT, RUN_LOG)
appendRecord(runLog, record)
const base = writeResults(dir, report, drift)
console.log(`recorded: one line appended to ${relative(ROOT, runLog)} ("report":"${record.report}")${runLog === join(ROOT, RUN_LOG) ? ': commit it to keep the run' : ''}`)
console.log(`full report: bench/results/${base}.{json,md,svg} (and latest.json, latest.md; ignored by git)`)
process.exit(failed ? 1 : 0)
