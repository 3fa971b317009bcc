// postgres.js as patched at install (patches/postgres+3.4.9.patch): a Postgres that goes away at the wrong moment
// must reach the queries that wait on it, never the process. Bun ends a process on an unhandled rejection, so a
// rejection no one can handle would take the server down. Run in a child process, as the server runs it.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The driver as this project resolves it, for the child to import. */
const POSTGRES = Bun.resolveSync('postgres', import.meta.dir)

/** A Postgres that authenticates every connection and closes it when the client sends its first query. */
let server: Server
let port = 0
const sockets = new Set<Socket>()
beforeAll(async () => {
  server = createServer((socket) => {
    sockets.add(socket)
    let authenticated = false
    socket.on('data', () => {
      if (authenticated) { socket.destroy(); return }
      authenticated = true
      // AuthenticationOk, then ReadyForQuery (idle): the driver's first query on a connection fetches array types.
      socket.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5a, 0, 0, 0, 5, 0x49]))
    })
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as { port: number }).port
})
afterAll(() => {
  for (const socket of sockets) socket.destroy()
  server.close()
})

async function run(body: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'hrs-pg-'))
  const script = join(dir, 'child.ts')
  writeFileSync(script, `import postgres from ${JSON.stringify(POSTGRES)}
const sql = postgres({ host: '127.0.0.1', port: ${port}, user: 'u', database: 'd', max: 1, connect_timeout: 1, backoff: () => 0.02, onnotice: () => {} })
${body}`)
  const child = Bun.spawn([process.execPath, script], { stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
  clearTimeout(timer)
  rmSync(dir, { recursive: true, force: true })
  return { code, stdout, stderr }
}

test('connections closed while the driver fetches its array types, then the pool ended: the process lives', async () => {
  // Every wait is bounded, so the child ends by itself whatever the driver does; only a crash changes its exit code.
  const { code, stdout, stderr } = await run(`const outcome = sql\`select 1\`.then(() => 'answered', (error) => 'refused ' + error.code)
await Bun.sleep(300)
sql.end({ timeout: 0 }).catch(() => {})
console.log('query:', await Promise.race([outcome, Bun.sleep(2_000).then(() => 'still waiting')]))
await Bun.sleep(200)
console.log('alive')
process.exit(0)`)
  expect({ code, stderr: stderr.slice(0, 500) }).toEqual({ code: 0, stderr: '' })
  expect(stdout).toContain('alive')
})
