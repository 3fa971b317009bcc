// Drives load from one or more generator processes (bench/load/generator.ts) and samples, over the measured
// window, the CPU of the processes under test and of the whole machine: that is how the report tells whether
// the server, the store or the generator was the bottleneck.
import { readdirSync, readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import type { GeneratorConfig, GeneratorResult, PlanResult } from '../load/generator.ts'
import { BUN, ROOT, cpuMs, forEachLine, machineTicks } from './processes.ts'
import type { LineStats } from './report.ts'

export const GENERATOR = join(ROOT, 'bench', 'load', 'generator.ts')

/** Pids of every process whose command name is `comm` (e.g. all Postgres backends). */
export function pidsNamed(comm: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try { if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm) pids.push(Number(entry)) } catch { /* gone */ }
  }
  return pids
}

export interface LoadResult extends GeneratorResult {
  /** Per watched name: CPU cores used over the window (1.0 = one core busy). */
  cpu: number
  watched: Record<string, number>
  /** The whole machine's busy fraction over the window (1.0 = every core busy). */
  machine: number
  /** Cores busy with anything else (another test run, the bench's own parent…): noise when well above 0. */
  others: number
  generators: number
  /** Each generator process's CPU over the window, in cores. */
  generatorCpu: number[]
  /** Requests (or readings) per second over the window. */
  requestsPerSecond: number
  readingsPerSecond: number
}

export type Watch = Record<string, () => number[]>

const sumCpu = (pids: number[]) => pids.reduce((sum, pid) => { const ms = cpuMs(pid); return Number.isFinite(ms) ? sum + ms : sum }, 0)

/**
 * Runs `base` split over `processes` generator processes (lanes, and the open-loop rate, divided between them)
 * and merges what they report.
 */
export async function runLoad(base: Omit<GeneratorConfig, 'laneOffset' | 'totalLanes'>, processes: number, watch: Watch = {}): Promise<LoadResult> {
  const totalLanes = base.lanes
  const per = Math.ceil(totalLanes / processes)
  let windowStart: { at: number; machine: ReturnType<typeof machineTicks>; watched: Record<string, number> } | undefined
  let windowEnd: typeof windowStart
  const sample = () => ({ at: performance.now(), machine: machineTicks(), watched: Object.fromEntries(Object.entries(watch).map(([name, pids]) => [name, sumCpu(pids())])) })

  const children = Array.from({ length: processes }, (_, i) => {
    const config: GeneratorConfig = {
      ...base, lanes: Math.min(per, totalLanes - i * per), laneOffset: i * per, totalLanes,
      rate: base.rate === undefined ? undefined : base.rate / processes,
    }
    const proc = Bun.spawn([BUN, GENERATOR, JSON.stringify(config)], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH, HOME: process.env.HOME } })
    const timeout = setTimeout(() => proc.kill('SIGKILL'), base.warmupMs + base.durationMs + base.drainMs + 30_000)
    const done = (async () => {
      let result: GeneratorResult | undefined
      await forEachLine(proc.stdout as ReadableStream<Uint8Array>, (line) => {
        if (i === 0 && line === 'mark start') windowStart = sample()
        else if (i === 0 && line === 'mark end') windowEnd = sample()
        else if (line.startsWith('result ')) result = JSON.parse(line.slice(7))
      })
      const code = await proc.exited
      clearTimeout(timeout)
      if (!result) throw new Error(`load generator ${i} exited with ${code} and no result: ${await new Response(proc.stderr).text()}`)
      return result
    })()
    return done
  })
  const results = await Promise.all(children)
  if (!windowStart || !windowEnd) throw new Error('the load generator never marked its window')
  const seconds = (windowEnd.at - windowStart.at) / 1000
  const merged: GeneratorResult = {
    statuses: {}, requests: 0, okRequests: 0, readings: 0, totalReadings: 0, totalOkRequests: 0, late: 0,
    windowMs: base.durationMs, cpu: 0,
    latency: results[0]!.latency, firstError: results.find((r) => r.firstError)?.firstError, timeline: results[0]!.timeline,
  }
  for (const r of results) {
    for (const [status, n] of Object.entries(r.statuses)) merged.statuses[status] = (merged.statuses[status] ?? 0) + n
    merged.requests += r.requests; merged.okRequests += r.okRequests; merged.readings += r.readings
    merged.totalReadings += r.totalReadings; merged.totalOkRequests += r.totalOkRequests; merged.late += r.late
    merged.cpu += r.cpu
  }
  // Percentiles of merged processes: the worst process's figure (an upper bound; with one process it is exact).
  if (results.length > 1) {
    const worst = (k: 'p50' | 'p90' | 'p95' | 'p99' | 'max') => Math.max(...results.map((r) => r.latency[k]))
    merged.latency = { p50: worst('p50'), p90: worst('p90'), p95: worst('p95'), p99: worst('p99'), max: worst('max'), count: results.reduce((n, r) => n + r.latency.count, 0) }
  }
  if (results[0]!.plan) merged.plan = mergePlans(results.map((r) => r.plan!))
  const ws = windowStart, we = windowEnd
  const watched = Object.fromEntries(Object.keys(watch).map((name) => [name, (we.watched[name]! - ws.watched[name]!) / 1000 / seconds]))
  const machine = (we.machine.busy - ws.machine.busy) / (we.machine.total - ws.machine.total)
  return {
    ...merged,
    watched, machine,
    others: Math.max(0, machine * cpus().length - Object.values(watched).reduce((a, b) => a + b, 0) - merged.cpu),
    generators: processes,
    generatorCpu: results.map((r) => r.cpu),
    requestsPerSecond: merged.okRequests / (base.durationMs / 1000),
    readingsPerSecond: merged.readings / (base.durationMs / 1000),
  }
}

/** Plan figures of several generator processes: counts added, percentiles the worst process's (as above). */
function mergePlans(plans: PlanResult[]): PlanResult {
  if (plans.length === 1) return plans[0]!
  const out: PlanResult = { steps: {}, totalErrors: 0, walks: {}, idempotency: { acknowledged: 0, replays: 0 } }
  for (const plan of plans) {
    out.totalErrors += plan.totalErrors
    out.idempotency.acknowledged += plan.idempotency.acknowledged
    out.idempotency.replays += plan.idempotency.replays
    for (const [name, step] of Object.entries(plan.steps)) {
      const into = out.steps[name] ??= { statuses: {}, answered: 0, tolerated: 0, errors: 0, latency: { ...step.latency, count: 0 } }
      for (const [status, n] of Object.entries(step.statuses)) into.statuses[status] = (into.statuses[status] ?? 0) + n
      into.answered += step.answered; into.tolerated += step.tolerated; into.errors += step.errors
      for (const k of ['p50', 'p90', 'p95', 'p99', 'max'] as const) into.latency[k] = Math.max(into.latency[k], step.latency[k])
      into.latency.count += step.latency.count
    }
    for (const [name, walk] of Object.entries(plan.walks)) {
      const into = out.walks[name] ??= { completed: 0, itemsMin: Infinity, itemsMax: 0, pagesMax: 0 }
      if (walk.completed) into.itemsMin = Math.min(into.itemsMin, walk.itemsMin)
      into.completed += walk.completed; into.itemsMax = Math.max(into.itemsMax, walk.itemsMax); into.pagesMax = Math.max(into.pagesMax, walk.pagesMax)
    }
  }
  for (const walk of Object.values(out.walks)) if (!walk.completed) walk.itemsMin = 0
  return out
}

/** The item whose `value` is the median of the items' (the lower middle one for an even count): rounds taking turns. */
export function medianBy<T>(items: readonly T[], value: (item: T) => number): T {
  return [...items].sort((a, b) => value(a) - value(b))[Math.floor((items.length - 1) / 2)]!
}

/**
 * The figures a report line shows for a load run: latency percentiles, errors (answers other than `okStatus`),
 * and the server's CPU (needs a `server` watch) and peak RSS when known.
 */
export function statsOf(load: LoadResult, okStatus: number | 'puback', peakRssMiB?: number): LineStats {
  const errors = Object.entries(load.statuses).filter(([status]) => status !== String(okStatus)).reduce((n, [, count]) => n + count, 0)
  return { p50: load.latency.p50, p95: load.latency.p95, p99: load.latency.p99, errors, peakRssMiB, serverCores: load.watched.server }
}

/**
 * statsOf for a plan run: errors as the plan judged them (a tolerated 412 is not one), latency of the whole mix
 * or, given `step`, of that step alone.
 */
export function planStatsOf(load: LoadResult, peakRssMiB?: number, step?: string): LineStats {
  if (!load.plan) throw new Error('planStatsOf needs a plan run')
  const s = step === undefined ? undefined : load.plan.steps[step]
  const latency = s ? s.latency : load.latency
  const errors = s ? s.errors : Object.values(load.plan.steps).reduce((n, x) => n + x.errors, 0)
  return { p50: latency.p50, p95: latency.p95, p99: latency.p99, errors, peakRssMiB, serverCores: load.watched.server }
}
