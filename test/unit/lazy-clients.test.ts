// The embedded default loads no client for a service it does not use: without REDIS_URL no ioredis, without
// INGEST_LOG no NATS client (src/kv/redis.ts and ingest/index.ts import them on demand). Checked in a process of
// its own, whose module registry holds only what building the service loaded.
import { expect, test } from 'bun:test'
import { resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '../..')
const SCRIPT = `
const { loadConfig } = await import('./src/config.ts')
const { createDeps } = await import('./src/deps.ts')
const { createApp } = await import('./src/app.ts')
const deps = await createDeps(loadConfig({ DATA_DIR: 'memory://', LOG_LEVEL: 'error' }))
createApp(deps)
console.log(JSON.stringify(Object.keys(require.cache)))
await deps.close()
process.exit(0)
`

test('building the embedded service loads neither ioredis nor the NATS client', async () => {
  const proc = Bun.spawn([process.execPath, '-e', SCRIPT], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdout: 'pipe', stderr: 'pipe' })
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  expect(code, stderr).toBe(0)
  const modules: string[] = JSON.parse(stdout.trim().split('\n').at(-1)!)
  // The check can fail: the service itself is in the list, and so are the clients it does use.
  expect(modules.some((m) => m.endsWith('/src/app.ts'))).toBe(true)
  expect(modules.some((m) => m.includes('/node_modules/@electric-sql/pglite/'))).toBe(true)
  expect(modules.filter((m) => m.includes('/node_modules/ioredis/'))).toEqual([])
  expect(modules.filter((m) => m.includes('/node_modules/@nats-io/'))).toEqual([])
}, 60_000)
