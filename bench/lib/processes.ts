// Child processes for the bench (and for the tests that spawn the service, through test/process-helpers.ts):
// servers that print "listening on", one-shot scripts that print `result {json}`, and what /proc says about them
// (CPU time, peak RSS). Everything on loopback, every wait bounded.
import { join } from 'node:path'

export const ROOT = join(import.meta.dir, '..', '..')
export const BUN = process.execPath

/**
 * How to start one of our servers: `bun <script>`, or with BENCH_PROFILE=1 under Bun's CPU profiler, which
 * writes a .cpuprofile to bench/results/tmp/profiles/ when the server exits (after the scenario); count its
 * samples with `bun bench/profile-samples.ts <file>` (the Markdown profile weights samples by time, idle included).
 */
export function ourServer(script: string, label: string): string[] {
  if (process.env.BENCH_PROFILE !== '1') return [BUN, script]
  const dir = join(ROOT, 'bench', 'results', 'tmp', 'profiles')
  return [BUN, '--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${label.replace(/[^A-Za-z0-9_-]+/g, "-")}-${Date.now()}.cpuprofile`, script]
}

/**
 * A port nobody listens on right now, below the kernel's ephemeral range (32768 and up on Linux): a port the kernel
 * picked was once taken by an outgoing connection between this probe and the server's bind (CI's fleet scenario:
 * MQTT_PORT "already in use"), while a bench holds thousands of connections open.
 */
export function freePort(): number {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    try {
      Bun.serve({ hostname: '127.0.0.1', port, fetch: () => new Response() }).stop(true)
      return port
    } catch {
      // Taken: another.
    }
  }
  throw new Error('no free port found between 20000 and 32000')
}

/** One stop-the-world pause of the child's garbage collector, stamped when its line reached us. */
export interface GcPause { at: number; ms: number }

/**
 * Set in a child's env, JavaScriptCore logs every collection on stderr: its kind, the heap's size, and each pause
 * of the program ("p=…ms"). startServer keeps those lines out of the output and the pauses in gcPauses().
 */
export const GC_LOG_ENV = { BUN_JSC_logGC: '1' }
const GC_LINE = /^\[GC<|^GC END!|^Requesting GC /
const GC_PAUSE = / p=([\d.]+)ms/

export interface Child {
  proc: ReturnType<typeof Bun.spawn>
  pid: number
  port: number
  baseUrl: string
  output(): string
  /** Empty unless the child ran with GC_LOG_ENV. */
  gcPauses(): readonly GcPause[]
  stop(signal?: NodeJS.Signals): Promise<number>
}

/** Starts `argv` with PORT set and waits until it prints `readyText` ("listening on", for a server). */
export async function startServer(name: string, argv: string[], env: Record<string, string | undefined>, timeoutMs = 30_000, readyText = 'listening on'): Promise<Child> {
  const port = freePort()
  const proc = Bun.spawn(argv, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
    stdout: 'pipe', stderr: 'pipe',
  })
  let out = ''
  const gcPauses: GcPause[] = []
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) out += decoder.decode(chunk)
  }
  const collectGcLog = (stream: ReadableStream<Uint8Array>) => forEachLine(stream, (line) => {
    if (!GC_LINE.test(line)) { out += line + '\n'; return }
    const pause = GC_PAUSE.exec(line)
    if (pause) gcPauses.push({ at: Date.now(), ms: Number(pause[1]) })
  })
  const stderr = proc.stderr as ReadableStream<Uint8Array>
  const pumps = Promise.all([collect(proc.stdout as ReadableStream<Uint8Array>), env.BUN_JSC_logGC ? collectGcLog(stderr) : collect(stderr)])
  const deadline = Date.now() + timeoutMs
  while (!out.includes(readyText)) {
    if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode}: ${out}`)
    if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`${name} did not start within ${timeoutMs} ms: ${out}`) }
    await Bun.sleep(20)
  }
  return {
    proc, pid: proc.pid, port, baseUrl: `http://127.0.0.1:${port}`,
    output: () => out,
    gcPauses: () => gcPauses,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null) proc.kill(signal)
      const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000)
      const code = await proc.exited
      clearTimeout(timer)
      await pumps.catch(() => {})
      return code
    },
  }
}

/** Calls `onLine` with each line a child prints, as it prints it (for `mark start`/`mark end` and `result {json}`). */
export async function forEachLine(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder()
  let out = ''
  for await (const chunk of stream) {
    out += decoder.decode(chunk)
    let nl: number
    while ((nl = out.indexOf('\n')) !== -1) {
      onLine(out.slice(0, nl))
      out = out.slice(nl + 1)
    }
  }
}

/** Runs a process to its end (SIGKILL after `timeoutMs`) and returns its exit code and output. */
export async function runProcess(argv: string[], env: Record<string, string | undefined> = {}, timeoutMs = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(argv, { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/** Runs a one-shot script that prints `result {json}` and returns that JSON (and the pid it ran as). */
export async function runForResult<T>(name: string, argv: string[], env: Record<string, string | undefined> = {}, timeoutMs = 120_000): Promise<T> {
  const { code, stdout, stderr } = await runProcess(argv, env, timeoutMs)
  const line = stdout.split('\n').find((l) => l.startsWith('result '))
  if (code !== 0 || !line) throw new Error(`${name} failed (exit ${code}): ${stdout.slice(-2000)}\n${stderr.slice(-2000)}`)
  return JSON.parse(line.slice('result '.length)) as T
}

export { cpuMicros, cpuMs, loadAverage, machineTicks, peakRssMiB, resetPeakRss } from './proc.ts'
