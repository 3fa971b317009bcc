// `bun run bench [scenario…]`: runs the bench scenarios (all by default, in order), prints one line per measure
// with ours, the baseline measured in the same run, the ratio and the target, and writes the results to
// bench/results/<date>.json and bench/results/latest.json. Informational: it exits 0 whether targets are met
// or not (only a scenario that could not run at all makes it exit 1).
//
// Environment: BENCH_SECONDS (measured window per load run, default 5), BENCH_WARMUP_SECONDS (default 2),
// BENCH_GENERATORS (load generator processes per run, default 1). See bench/README.md.
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { loadAverage, ROOT } from './lib/processes.ts'
import { table, verdict, type Line, type ScenarioContext, type ScenarioOutput } from './lib/report.ts'
import { SCENARIOS } from './scenarios/index.ts'

const positive = (name: string, fallback: number) => {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!(n > 0)) throw new Error(`${name} must be a positive number, got "${raw}"`)
  return n
}

const requested = process.argv.slice(2)
const unknown = requested.filter((name) => !(name in SCENARIOS))
if (unknown.length) {
  console.error(`unknown scenario ${unknown.join(', ')}; known: ${Object.keys(SCENARIOS).join(', ')}`)
  process.exit(2)
}
const names = requested.length ? requested : Object.keys(SCENARIOS)

const started = Date.now()
const log = (message: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${message}`)
const ctx: ScenarioContext = {
  seconds: positive('BENCH_SECONDS', 5),
  warmupSeconds: positive('BENCH_WARMUP_SECONDS', 2),
  generators: positive('BENCH_GENERATORS', 1),
  log,
  earlier: new Map<string, ScenarioOutput>(),
  options: {},
}

const command = `${['BENCH_SECONDS', 'BENCH_WARMUP_SECONDS', 'BENCH_GENERATORS'].filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]} `).join('')}bun run bench${requested.length ? ` ${requested.join(' ')}` : ''}`
log(`${command}  (bun ${Bun.version}, ${cpus().length} cores, load average ${loadAverage()} before start)`)

const lines: Line[] = []
const outputs: Record<string, ScenarioOutput | { error: string }> = {}
let failed = false
for (const name of names) {
  log(`scenario ${name}`)
  const loadBefore = loadAverage()
  try {
    const output = await SCENARIOS[name]!(ctx)
    ctx.earlier.set(name, output)
    outputs[name] = output
    if (output.skipped) log(`${name} skipped: ${output.skipped}`)
    lines.push(...output.lines)
    output.details.loadAverageBefore = loadBefore
  } catch (error) {
    failed = true
    outputs[name] = { error: String((error as Error)?.stack ?? error) }
    log(`${name} FAILED: ${String((error as Error)?.stack ?? error)}`)
  }
}

console.log(`\n${table(lines)}\n`)
for (const [name, output] of Object.entries(outputs)) if ('skipped' in output && output.skipped) console.log(`${name}: skipped (${output.skipped})`)
const seconds = ((Date.now() - started) / 1000).toFixed(0)
console.log(`command: ${command}   (took ${seconds} s; load average now ${loadAverage()}; targets are informational)`)

const report = {
  command, startedAt: new Date(started).toISOString(), seconds: Number(seconds), bun: Bun.version, cores: cpus().length,
  settings: { seconds: ctx.seconds, warmupSeconds: ctx.warmupSeconds, generators: ctx.generators },
  lines: lines.map((l) => ({ ...l, result: verdict(l) })),
  scenarios: outputs,
}
const dir = join(ROOT, 'bench', 'results')
mkdirSync(dir, { recursive: true })
const stamp = new Date(started).toISOString().replace(/[:]/g, '-').replace(/\..*$/, '')
writeFileSync(join(dir, `${stamp}.json`), JSON.stringify(report, null, 2) + '\n')
writeFileSync(join(dir, 'latest.json'), JSON.stringify(report, null, 2) + '\n')
console.log(`results: bench/results/${stamp}.json (and bench/results/latest.json)`)
process.exit(failed ? 1 : 0)
