// A connection error raised on a socket no one listens to (an 'error' event without a listener) is logged and the
// process goes on; any other uncaught error still ends it with exit code 1. Run in a child process: the guard is
// process-wide.
import { expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const GUARD = join(import.meta.dir, '../../src/process-guard.ts')

async function run(body: string): Promise<{ code: number; stdout: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'hrs-guard-'))
  const script = join(dir, 'child.ts')
  writeFileSync(script, `import net from 'node:net'
import { keepServingThroughOrphanedConnectionErrors } from ${JSON.stringify(GUARD)}
keepServingThroughOrphanedConnectionErrors({ error: (message, fields) => console.log('logged:', message, JSON.stringify(fields)) })
${body}`)
  const child = Bun.spawn([process.execPath, script], { stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  const [code, stdout] = await Promise.all([child.exited, new Response(child.stdout).text()])
  clearTimeout(timer)
  return { code, stdout }
}

test('a refused connection on a socket without an error listener is logged, and the process serves on', async () => {
  // Port 1 on loopback: nothing listens there, so the connection is refused.
  const { code, stdout } = await run(`new net.Socket().connect(1, '127.0.0.1')
setTimeout(() => { console.log('alive'); process.exit(0) }, 500)`)
  expect(stdout).toContain('logged: connection error outside any request')
  expect(stdout).toContain('"code":"ECONNREFUSED"')
  expect(stdout).toContain('alive')
  expect(code).toBe(0)
})

test('any other uncaught error still ends the process with exit code 1', async () => {
  const { code, stdout } = await run(`setTimeout(() => { throw new Error('a real bug') }, 10)
setTimeout(() => { console.log('alive'); process.exit(0) }, 1000)`)
  expect(stdout).not.toContain('alive')
  expect(code).toBe(1)
})
