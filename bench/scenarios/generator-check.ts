// Is our load generator (load/generator.ts: Bun fetch in its own process) a fair one? On a small machine the
// generator and the server share the cores, so a generator that burns more CPU per request than it must leaves
// the server less, and every ratio against the bare Bun.serve moves. The same loads on the bare server (GET
// /ping, and POST /readings with one fixed body), once from our generator and once from autocannon (the
// well-kept Node tool, load/autocannon.ts, run under Node): requests/s achieved, each generator's CPU per
// request, and the server's CPU. Same connections, same warm-up and window, loopback only, one process each.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { AutocannonConfig, AutocannonResult } from '../load/autocannon.ts'
import type { GeneratorConfig } from '../load/generator.ts'
import { runLoad, statsOf, type LoadResult } from '../lib/load.ts'
import { BUN, ROOT, forEachLine, startServer, type Child } from '../lib/processes.ts'
import { cpuWindow } from '../lib/proc.ts'
import { line, type Line, type Scenario, type ScenarioContext } from '../lib/report.ts'
import { check } from './http-layer.ts'

const NAME = 'generator-check'
const RUNNER = join(ROOT, 'bench', 'load', 'autocannon.ts')
const NODE_BUNDLE = join(ROOT, 'bench', 'results', 'tmp', 'autocannon-runner.mjs')
const DEFAULT_CONNECTIONS = 64
/** Readings in the POST body, as http-layer sends. */
const DEFAULT_READINGS = 10

/** The autocannon runner as one ES module for Node (Node 20 runs no TypeScript), autocannon left in node_modules. */
async function bundleForNode(): Promise<void> {
  mkdirSync(join(ROOT, 'bench', 'results', 'tmp'), { recursive: true })
  const build = Bun.spawn([BUN, 'build', RUNNER, '--target=node', '--external', 'autocannon', '--outfile', NODE_BUNDLE], { cwd: ROOT, stdout: 'ignore', stderr: 'pipe' })
  if ((await build.exited) !== 0) throw new Error(`bundling ${RUNNER} for Node failed: ${await new Response(build.stderr).text()}`)
}

interface AutocannonRun extends AutocannonResult {
  /** CPU over the measured run, cores, read from /proc: autocannon's process and the server's. */
  generatorCores: number
  serverCores: number
  /** Cores busy with anything else. */
  others: number
}

/** Runs autocannon in its own Node process and samples its CPU and the server's between its marks. */
async function runAutocannon(config: AutocannonConfig, server: Child): Promise<AutocannonRun> {
  const proc = Bun.spawn(['node', NODE_BUNDLE, JSON.stringify(config)], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH, HOME: process.env.HOME } })
  const timeout = setTimeout(() => proc.kill('SIGKILL'), (config.warmupSeconds + config.seconds) * 1000 + 30_000)
  let window: ReturnType<typeof cpuWindow> | undefined
  let cpu: ReturnType<ReturnType<typeof cpuWindow>> | undefined
  let result: AutocannonResult | undefined
  await forEachLine(proc.stdout as ReadableStream<Uint8Array>, (text) => {
    if (text === 'mark start') window = cpuWindow({ generator: [proc.pid], server: [server.pid] })
    else if (text === 'mark end') cpu = window?.()
    else if (text.startsWith('result ')) result = JSON.parse(text.slice('result '.length)) as AutocannonResult
  })
  const code = await proc.exited
  clearTimeout(timeout)
  if (!result || !cpu) throw new Error(`autocannon exited with ${code} and no result: ${await new Response(proc.stderr).text()}`)
  const generatorCores = cpu.cores.generator!, serverCores = cpu.cores.server!
  return { ...result, generatorCores, serverCores, others: Math.max(0, cpu.machineCores - generatorCores - serverCores) }
}

/** Our generator, then autocannon, with the same request on the bare server; two lines comparing them. */
async function compare(ctx: ScenarioContext, bare: Child, request: { label: string; path: string; method: 'GET' | 'POST'; body?: string; status: number }, connections: number): Promise<{ lines: Line[]; ours: LoadResult; autocannon: AutocannonRun }> {
  const url = bare.baseUrl + request.path
  const headers: Record<string, string> = request.body === undefined ? {} : { 'content-type': 'application/json' }
  ctx.log(`${NAME}: ${request.label}, ${connections} connections, our generator…`)
  const generator: Omit<GeneratorConfig, 'laneOffset' | 'totalLanes'> = {
    url, method: request.method, lanes: connections, warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, mode: 'closed', drainMs: 10_000,
    body: request.body === undefined ? { kind: 'none' } : { kind: 'fixed', text: request.body }, keys: [], auth: 'none', countAccepted: false,
  }
  // One generator process whatever BENCH_GENERATORS says: autocannon runs as one process too.
  const ours = await runLoad(generator, 1, { server: () => [bare.pid] })
  check(ours, request.status)
  ctx.log(`${NAME}: ${request.label}, ${connections} connections, autocannon…`)
  const autocannon = await runAutocannon({ url, method: request.method, headers, body: request.body, connections, warmupSeconds: ctx.warmupSeconds, seconds: ctx.seconds }, bare)
  const wrong = Object.keys(autocannon.statuses).filter((s) => s !== String(request.status))
  if (wrong.length || autocannon.okRequests === 0) throw new Error(`autocannon: expected only ${request.status} answers, got ${JSON.stringify(autocannon.statuses)}`)

  const oursPerRequest = (ours.cpu * 1e6) / ours.requestsPerSecond
  const autocannonPerRequest = (autocannon.generatorCores * 1e6) / autocannon.requestsPerSecond
  const serverPerRequest = (cores: number, rps: number) => ((cores * 1e6) / rps).toFixed(1)
  const rateNote = `server ${ours.watched.server!.toFixed(2)} cores (${serverPerRequest(ours.watched.server!, ours.requestsPerSecond)} µs/req) under ours / ${autocannon.serverCores.toFixed(2)} (${serverPerRequest(autocannon.serverCores, autocannon.requestsPerSecond)} µs/req) under autocannon; ` +
    `generator ${ours.cpu.toFixed(2)} / ${autocannon.generatorCores.toFixed(2)} cores; others ${ours.others.toFixed(2)} / ${autocannon.others.toFixed(2)}; ` +
    `autocannon p50 ${autocannon.latency.p50.toFixed(1)} ms, p97.5 ${autocannon.latency.p97_5.toFixed(1)}, p99 ${autocannon.latency.p99.toFixed(1)}`
  // Within 10% either way is the noise of a shared two-core machine, not a difference between the tools.
  const relative = oursPerRequest / autocannonPerRequest
  const cpuNote = `lower is better; ${relative > 1.1
    ? `autocannon is cheaper per request: our generator spends ${relative.toFixed(2)}× its CPU per request, so on a shared machine it leaves the server less CPU than autocannon would (ratios against the bare server flatter us)`
    : relative < 0.9
      ? `our generator is cheaper per request than autocannon (${relative.toFixed(2)}×): it takes no more of the shared cores from the server than the well-kept tool would`
      : `our generator and autocannon cost the same CPU per request within 10% (${relative.toFixed(2)}×): ours starves the server no more than autocannon would`}`
  const rateLine = line(NAME, `${request.label} req/s, ${connections} connections: our generator ÷ autocannon`, ours.requestsPerSecond, autocannon.requestsPerSecond, 'req/s', undefined, 'target', rateNote, statsOf(ours, request.status))
  const cpuLine = line(NAME, `${request.label} generator CPU per request: ours ÷ autocannon`, oursPerRequest, autocannonPerRequest, 'µs/req', undefined, 'target', cpuNote)
  return { lines: [rateLine, cpuLine], ours, autocannon }
}

export const generatorCheck: Scenario = async (ctx) => {
  // Always on this machine: it checks the generator, whatever deployment other scenarios load.
  if (!Bun.which('node')) return { lines: [], details: {}, skipped: 'autocannon runs under Node, and no `node` is on PATH' }
  const connections = ctx.options.concurrency ?? DEFAULT_CONNECTIONS
  const readings = ctx.options.batch ?? DEFAULT_READINGS
  await bundleForNode()
  let bare: Child | undefined
  try {
    bare = await startServer('bare server', [BUN, 'bench/servers/bare-server.ts'], {})
    const ts = Date.now() - 3_600_000
    const body = JSON.stringify({ readings: Array.from({ length: readings }, (_, i) => ({ channel: `c${i % 10}`, value: 20 + i / 10, ts: ts + Math.floor(i / 10) })) })
    const ping = await compare(ctx, bare, { label: 'GET /ping', path: '/ping?t1=27.5&h1=61', method: 'GET', status: 204 }, connections)
    const post = await compare(ctx, bare, { label: `POST /readings (${readings} readings)`, path: '/readings', method: 'POST', body, status: 202 }, connections)
    return {
      lines: [...ping.lines, ...post.lines],
      details: { connections, readingsPerRequest: readings, ping: { ours: ping.ours, autocannon: ping.autocannon }, post: { ours: post.ours, autocannon: post.autocannon } },
    }
  } finally {
    await bare?.stop()
  }
}
