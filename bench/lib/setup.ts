// What a scenario needs before load: a fresh Postgres database, an account and a personal token made with the
// operator CLI (no API needed), devices made through the API, and clean-up afterwards.
import postgres from 'postgres'
import { BUN, runForResult } from './processes.ts'

export const DATABASE_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres'
export const REDIS_URL = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379'

const suffix = () => `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`

export interface FreshDatabase { name: string; url: string; drop(): Promise<void> }

/**
 * A new, empty database on the bench's Postgres (dropped by drop(), whatever is still connected; kept, its name
 * printed, with BENCH_KEEP_DATABASE=1, to look into what a run left: query plans on its data).
 */
export async function freshDatabase(label: string): Promise<FreshDatabase> {
  const name = `hrs_bench_${label}_${suffix()}`.toLowerCase().replace(/[^a-z0-9_]/g, '_')
  const admin = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  try { await admin.unsafe(`create database ${name}`) } finally { await admin.end() }
  const url = new URL(DATABASE_URL)
  url.pathname = `/${name}`
  return {
    name, url: url.toString(),
    async drop() {
      if (process.env.BENCH_KEEP_DATABASE === '1') return console.error(`kept database ${name} (BENCH_KEEP_DATABASE=1): drop it when done`)
      const a = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
      try { await a.unsafe(`drop database if exists ${name} with (force)`) } finally { await a.end() }
    },
  }
}

/** The environment our server and CLI run with in a bench: real Postgres and Redis, limits out of the way. */
export function serverEnv(database: FreshDatabase, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: database.url, REDIS_URL, REDIS_PREFIX: `hrs_bench_${suffix()}:`, DEMO: '0', LOG_LEVEL: 'warn',
    // Rate limits are not what is measured: a bench device sends thousands of requests a second.
    DEVICE_RATE_LIMIT_PER_MINUTE: '1000000000', RATE_LIMIT_PER_MINUTE: '1000000',
    ...extra,
  }
}

export async function cli(args: string[], env: Record<string, string>): Promise<string> {
  const proc = Bun.spawn([BUN, 'src/cli.ts', ...args], { cwd: `${import.meta.dir}/../..`, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000)
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  if (code !== 0) throw new Error(`cli ${args.join(' ')} failed (${code}): ${stdout}${stderr}`)
  return stdout
}

/** Runs the migrations (the CLI opens the store, which migrates), then makes an account and an all-scopes token. */
export async function accountAndToken(env: Record<string, string>): Promise<{ accountId: string; token: string }> {
  const account = await cli(['accounts', 'create', '--name', 'bench'], env)
  const accountId = /account (acct_\w+)/.exec(account)?.[1]
  if (!accountId) throw new Error(`unexpected cli output: ${account}`)
  const key = await cli(['keys', 'create', accountId, '--name', 'bench', '--scopes', 'all'], env)
  const token = /(hrs_pat_\w+)/.exec(key)?.[1]
  if (!token) throw new Error(`unexpected cli output: ${key}`)
  return { accountId, token }
}

export const METRICS = ['temperature', 'humidity', 'illuminance', 'pressure', 'surface_temperature', 'water_temperature', 'uv_index', 'power']

/** Runs `task(0)` … `task(count - 1)`, at most `parallel` at a time (set-up through the API, bounded). */
export async function inParallel(count: number, parallel: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, async () => {
    while (next < count) await task(next++)
  }))
}

/**
 * `count` devices with channels c0…c<channels-1>, each mapped to a metric; returns their ids and keys, in order.
 * `parallel` creations at a time (a thousand devices one by one take a while).
 */
export async function createDevices(baseUrl: string, token: string, count: number, channels: number, parallel = 1): Promise<{ id: string; key: string }[]> {
  const devices = new Array<{ id: string; key: string }>(count)
  await inParallel(count, parallel, async (i) => {
    const res = await fetch(`${baseUrl}/api/v1/sensors/devices`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `bench device ${i}`, channels: Array.from({ length: channels }, (_, c) => ({ key: `c${c}`, metric: METRICS[c % METRICS.length] })) }),
    })
    if (res.status !== 201) throw new Error(`creating a device answered ${res.status}: ${await res.text()}`)
    const body = (await res.json()) as { id: string; key: string }
    devices[i] = { id: body.id, key: body.key }
  })
  return devices
}

/** The metric each channel maps to, as createDevices sets it (the store baselines write the same rows). */
export const metricOf = (channel: number) => METRICS[channel % METRICS.length]!

/** Removes what a run left in Redis under its prefix. */
export async function cleanRedis(prefix: string): Promise<void> {
  const { default: Redis } = await import('ioredis')
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await redis.connect()
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      cursor = next
      if (keys.length) await redis.del(...keys)
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
}

export { runForResult }
