// The command line of `bun run bench`: scenario names, then flags that override the BENCH_* environment (CI sets
// those) and per-run options the scenarios read from ctx.options. Any mistake is a UsageError: run.ts prints it
// with the usage text and exits 2, before anything starts.
import { parseArgs } from 'node:util'
import type { ScenarioOptions } from './report.ts'

export class UsageError extends Error {}

export interface BenchArgs {
  help: boolean
  /** Scenarios to run, in the order given (every scenario when the command names none). */
  scenarios: string[]
  seconds: number
  warmupSeconds: number
  generators: number
  options: ScenarioOptions
}

export function usage(known: string[]): string {
  return `usage: bun run bench [scenario ...] [options]        (npm run bench -- [scenario ...] [options])

Runs the named scenarios (all of them, in this order, when none is named), prints ours ÷ baseline for every
measure, appends the run's record to bench/results.jsonl (commit it to keep the run) and writes the full report
to bench/results/<date>-<commit>.json, .md and .svg (ignored by git).

scenarios: ${known.join(', ')}

options:
  --duration S          measured window of each load run, seconds (default 5, env BENCH_SECONDS)
  --warmup S            load before the window opens, seconds (default 2, env BENCH_WARMUP_SECONDS)
  --concurrency N       lanes (connections or devices) driving load, in scenarios that have lanes
  --batch N             readings per request (or items per page) in scenarios that batch
  --store sql|questdb   readings store, in scenarios that can use either
  --generators N        load generator processes per load run (default 1, env BENCH_GENERATORS)
  --target URL          load a deployment instead of a local server (needs --token); scenarios whose
                        baseline needs a local server skip themselves
  --token TOKEN         an API key (hrs_pat_…) of an account on the --target deployment (or env
                        BENCH_TOKEN, which keeps it out of shell history and the process list)
  -h, --help            this text

Compare two runs: bun run bench:compare <a> <b> (a commit, a date or a run's name in bench/results.jsonl)
Draw each target line's ratio over the recorded runs: bun run bench:plot`
}

const DECIMAL = /^\d+(\.\d+)?$/
const INTEGER = /^\d+$/

function seconds(flag: string, raw: string, allowZero: boolean): number {
  const n = Number(raw)
  if (!DECIMAL.test(raw) || !(allowZero ? n >= 0 : n > 0)) throw new UsageError(`${flag} must be a ${allowZero ? 'non-negative' : 'positive'} number of seconds, got "${raw}"`)
  return n
}

function count(flag: string, raw: string): number {
  const n = Number(raw)
  if (!INTEGER.test(raw) || n < 1) throw new UsageError(`${flag} must be a whole number ≥ 1, got "${raw}"`)
  return n
}

/** A flag's value, else the environment variable's (the older way to set it, which CI uses), else the default. */
function flagOrEnv(flag: [name: string, value: string | undefined], env: [name: string, value: string | undefined], fallback: number, parse: (name: string, raw: string) => number): number {
  if (flag[1] !== undefined) return parse(flag[0], flag[1])
  if (env[1] !== undefined && env[1] !== '') return parse(env[0], env[1])
  return fallback
}

export function parseBenchArgs(argv: string[], env: Record<string, string | undefined>, known: string[]): BenchArgs {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (error) {
    // parseArgs throws TypeErrors for unknown flags and missing values; they are the user's to fix.
    throw new UsageError((error as Error).message)
  }
  const { values, positionals } = parsed
  if (values.help) return { help: true, scenarios: [], seconds: 5, warmupSeconds: 2, generators: 1, options: {} }
  const unknown = positionals.filter((name) => !known.includes(name))
  if (unknown.length) throw new UsageError(`unknown scenario ${unknown.join(', ')}`)

  const generators = flagOrEnv(['--generators', values.generators], ['BENCH_GENERATORS', env.BENCH_GENERATORS], 1, count)
  const options: ScenarioOptions = {}
  if (values.concurrency !== undefined) {
    options.concurrency = count('--concurrency', values.concurrency)
    // runLoad gives every generator process a share of the lanes: each needs at least one.
    if (options.concurrency < generators) throw new UsageError(`--concurrency ${options.concurrency} is fewer lanes than --generators ${generators}`)
  }
  if (values.batch !== undefined) options.batch = count('--batch', values.batch)
  if (values.store !== undefined) {
    if (values.store !== 'sql' && values.store !== 'questdb') throw new UsageError(`--store must be sql or questdb, got "${values.store}"`)
    options.store = values.store
  }
  if (values.token !== undefined && values.target === undefined) throw new UsageError('--token goes with --target')
  if (values.target !== undefined) {
    const token = values.token ?? env.BENCH_TOKEN
    if (!token) throw new UsageError('--target needs --token or BENCH_TOKEN (an API key of an account on that deployment)')
    let url: URL
    try { url = new URL(values.target) } catch { throw new UsageError(`--target must be a URL, got "${values.target}"`) }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--target must be an http(s) URL, got "${values.target}"`)
    options.target = { baseUrl: values.target.replace(/\/+$/, ''), token }
  }

  return {
    help: false,
    scenarios: [...new Set(positionals)],
    seconds: flagOrEnv(['--duration', values.duration], ['BENCH_SECONDS', env.BENCH_SECONDS], 5, (name, raw) => seconds(name, raw, false)),
    warmupSeconds: flagOrEnv(['--warmup', values.warmup], ['BENCH_WARMUP_SECONDS', env.BENCH_WARMUP_SECONDS], 2, (name, raw) => seconds(name, raw, true)),
    generators,
    options,
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      concurrency: { type: 'string' },
      batch: { type: 'string' },
      store: { type: 'string' },
      generators: { type: 'string' },
      target: { type: 'string' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

/** The command as typed, for the reports: the BENCH_* variables set, the arguments, the token hidden. */
export function commandLine(argv: string[], env: Record<string, string | undefined>): string {
  const vars = ['BENCH_SECONDS', 'BENCH_WARMUP_SECONDS', 'BENCH_GENERATORS'].filter((k) => env[k]).map((k) => `${k}=${env[k]} `).join('')
  const args = argv.map((arg, i) => {
    if (argv[i - 1] === '--token') return '…'
    if (arg.startsWith('--token=')) return '--token=…'
    return /^[\w./:=@,+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`
  })
  return `${vars}bun run bench${args.length ? ` ${args.join(' ')}` : ''}`
}
