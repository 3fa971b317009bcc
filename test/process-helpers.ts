// Starting the real service (src/main.ts) or the CLI as child processes, on loopback, bounded in time.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

export interface ServerProcess {
  proc: ReturnType<typeof Bun.spawn>
  baseUrl: string
  /** Everything the process printed to stdout so far. */
  stdout(): string
  stop(signal?: NodeJS.Signals): Promise<number>
}

export const tempDataDir = () => mkdtempSync(join(tmpdir(), 'hrs-test-'))
const freePort = () => 20_000 + Math.floor(Math.random() * 20_000)

/** Starts `bun src/main.ts` with `env` and waits until it prints that it listens. */
export async function startServer(env: Record<string, string | undefined>, timeoutMs = 20_000): Promise<ServerProcess> {
  const port = freePort()
  const proc = Bun.spawn([process.execPath, 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
    stdout: 'pipe', stderr: 'inherit',
  })
  let out = ''
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  const pump = (async () => { for (;;) { const { done, value } = await reader.read(); if (done) return; out += decoder.decode(value) } })()
  const deadline = Date.now() + timeoutMs
  while (!out.includes('listening on')) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}: ${out}`)
    if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`server did not start: ${out}`) }
    await Bun.sleep(25)
  }
  return {
    proc,
    baseUrl: `http://127.0.0.1:${port}`,
    stdout: () => out,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null) proc.kill(signal)
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000)
      const code = await proc.exited
      clearTimeout(timer)
      await pump.catch(() => {})
      return code
    },
  }
}

/** Runs the operator CLI and returns its exit code and output. */
export async function runCli(args: string[], env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([process.execPath, 'src/cli.ts', ...args], {
    cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', ...env }, stdout: 'pipe', stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000)
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  return { code, stdout, stderr }
}
