// A private InfluxDB 1.x (Debian's `influxdb` package) for the bench's ingest peer: started on free loopback ports
// with a data directory of its own, one database `bench`, removed afterwards; every wait bounded.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './processes.ts'

export const INFLUXD = ['/usr/bin/influxd', '/usr/sbin/influxd', '/usr/local/bin/influxd'].find((p) => existsSync(p))

export interface Influx { readonly writeUrl: string; readonly pid: number; count(): Promise<number>; close(): Promise<void> }

export async function startInflux(): Promise<Influx> {
  if (!INFLUXD) throw new Error('influxd is not installed (apt-get install influxdb)')
  const dir = mkdtempSync(join(tmpdir(), 'hrs-influx-'))
  const http = freePort()
  const rpc = freePort()
  const config = join(dir, 'influxdb.conf')
  writeFileSync(config, [
    'reporting-disabled = true', `bind-address = "127.0.0.1:${rpc}"`,
    '[meta]', `  dir = "${join(dir, 'meta')}"`,
    '[data]', `  dir = "${join(dir, 'data')}"`, `  wal-dir = "${join(dir, 'wal')}"`, '  query-log-enabled = false',
    '[http]', `  bind-address = "127.0.0.1:${http}"`, '  log-enabled = false', '  auth-enabled = false',
    '[monitor]', '  store-enabled = false',
    '[continuous_queries]', '  enabled = false',
  ].join('\n'))
  const proc = Bun.spawn([INFLUXD!, '-config', config], { stdout: 'ignore', stderr: 'ignore' })
  const base = `http://127.0.0.1:${http}`
  const deadline = Date.now() + 30_000
  while (!(await fetch(`${base}/ping`).then((r) => r.status === 204, () => false))) {
    if (proc.exitCode !== null || Date.now() > deadline) { proc.kill('SIGKILL'); rmSync(dir, { recursive: true, force: true }); throw new Error('influxd did not start within 30 s') }
    await Bun.sleep(100)
  }
  const query = async (q: string) => (await fetch(`${base}/query?db=bench&q=${encodeURIComponent(q)}`, { method: 'POST' })).json() as Promise<any>
  await query('CREATE DATABASE bench')
  return {
    writeUrl: `${base}/write?db=bench&precision=ms`,
    pid: proc.pid,
    async count() {
      const body = await query('SELECT count(value) FROM readings')
      return Number(body?.results?.[0]?.series?.[0]?.values?.[0]?.[1] ?? 0)
    },
    async close() {
      proc.kill('SIGTERM')
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000)
      await proc.exited
      clearTimeout(timer)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
