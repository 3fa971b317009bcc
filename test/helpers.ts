// Test harness: each test file gets its own database (a fresh Postgres database when DATABASE_URL is set,
// an in-memory PGlite otherwise), its own Redis key prefix when REDIS_URL is set, a real server on loopback,
// and helpers that make a fresh account and key per test.
import postgres from 'postgres'
import { freePort } from '../bench/lib/processes.ts'
import { createAccount } from '../src/accounts.ts'
import { createApp } from '../src/app.ts'
import { createKey } from '../src/auth/keys.ts'
import type { Scope } from '../src/auth/scopes.ts'
import { loadConfig, type Config } from '../src/config.ts'
import { createDeps, type Deps, type DepsOptions } from '../src/deps.ts'
import { withFallback, type FallbackStore } from '../src/kv/fallback.ts'
import type { SharedStore } from '../src/kv/interface.ts'
import { memoryStore } from '../src/kv/memory.ts'
import { startMqttListener, type MqttListener } from '../ingest/mqtt.ts'
import type { Plan } from '../db/schema/index.ts'
import { VIEW_CHAIN } from '../ingest/stores/questdb-rollups.ts'

export const REAL_DATABASE_URL = process.env.DATABASE_URL || undefined
export const REAL_REDIS_URL = process.env.REDIS_URL || undefined
export const backendLabel = `${REAL_DATABASE_URL ? 'postgres' : 'pglite'}+${REAL_REDIS_URL ? 'redis' : 'memory'}`

const suffix = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`

/** A database of its own for one test file: created on the real server, or an in-memory/temp PGlite. */
export async function freshDatabase(): Promise<{ databaseUrl?: string; dataDir: string; drop(): Promise<void> }> {
  if (!REAL_DATABASE_URL) return { dataDir: 'memory://', drop: async () => {} }
  const name = `hrs_test_${suffix()}`
  const admin = postgres(REAL_DATABASE_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  await admin.end()
  const url = new URL(REAL_DATABASE_URL)
  url.pathname = `/${name}`
  return {
    databaseUrl: url.toString(),
    dataDir: 'memory://',
    async drop() {
      const a = postgres(REAL_DATABASE_URL!, { max: 1, onnotice: () => {} })
      await a.unsafe(`drop database if exists ${name} with (force)`)
      await a.end()
    },
  }
}

export interface TestEnv {
  deps: Deps
  app: ReturnType<typeof createApp>
  config: Config
  baseUrl: string
  /** The MQTT listener, when the overrides configure one (`mqtt: { port: 0 }` picks a free port). */
  mqtt: MqttListener | undefined
  /** Makes an account (Breeder plan unless told) and a personal key holding `scopes`. */
  account(options?: { plan?: Plan; allowlisted?: boolean; scopes?: readonly Scope[]; expiresAt?: Date }): Promise<{ accountId: string; keyId: string; token: string }>
  /** A request to the real server on loopback. `token` goes in Authorization; `body` objects are sent as JSON. */
  request(method: string, path: string, options?: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<Response>
  close(): Promise<void>
}

/** Every level of readings kept for ever. */
export const KEEP_FOREVER = Object.freeze({ rawDays: 0, minuteDays: 0, hourDays: 0, dayDays: 0 })

export async function createTestEnv(overrides: Partial<Config> = {}, options: DepsOptions = {}): Promise<TestEnv> {
  const database = await freshDatabase()
  // The port is chosen first, so PUBLIC_URL (which every absolute URL we answer is built on) can name it.
  const port = freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const config = loadConfig({}, {
    port, publicUrl: baseUrl,
    dataDir: database.dataDir, databaseUrl: database.databaseUrl, redisUrl: REAL_REDIS_URL,
    redisPrefix: `hrs_test_${suffix()}:`, testRoutes: true, logLevel: 'error',
    // Readings kept for ever unless a test says otherwise: many tests write readings at fixed past instants and
    // read them back raw (test/unit/readings-retention*.test.ts test retention itself).
    readingsRetention: KEEP_FOREVER,
    ...overrides,
  })
  const deps = await createDeps(config, options)
  const app = createApp(deps)
  app.listen({ port, hostname: '127.0.0.1' })
  const mqtt = config.mqtt ? await startMqttListener({ ...deps, config: { ...config, host: '127.0.0.1', mqtt: config.mqtt } }) : undefined
  return {
    deps, app, config, baseUrl, mqtt,
    async account(options = {}) {
      const account = await createAccount(deps.database.db, { name: `test ${suffix()}`, plan: options.plan ?? 'breeder', liveTestAllowlisted: options.allowlisted })
      const { key, token } = await createKey(deps.database.db, { accountId: account.id, kind: 'personal', name: 'test key', scopes: options.scopes ?? [], expiresAt: options.expiresAt })
      return { accountId: account.id, keyId: key.id, token }
    },
    request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers }
      if (options.token) headers.authorization = `Bearer ${options.token}`
      let body: RequestInit['body']
      if (typeof options.body === 'string' || options.body instanceof Uint8Array || options.body instanceof ReadableStream) body = options.body as RequestInit['body']
      else if (options.body !== undefined) { body = JSON.stringify(options.body); headers['content-type'] ??= 'application/json' }
      return fetch(baseUrl + path, { method, headers, body })
    },
    async close() {
      // The database is dropped whatever closing the rest met (a test may have closed part of it on purpose).
      try {
        await mqtt?.close()
        await app.stop(true)
        await deps.close()
      } finally {
        await database.drop()
      }
    },
  }
}

/** Drops a QuestDB readings table of a test's own, with the rollups our store makes for it (views from 8.3.1, tables on 7.4). */
export async function dropQuestdbTable(admin: { unsafe(query: string): Promise<unknown> }, table: string): Promise<void> {
  for (const name of [...VIEW_CHAIN].reverse().map((level) => `${table}_${level}`)) {
    await admin.unsafe(`drop materialized view if exists ${name}`).catch(async () => { await admin.unsafe(`drop table if exists ${name}`).catch(() => {}) })
  }
  await admin.unsafe(`drop table if exists ${table}`).catch(() => {})
}

/**
 * Whether QuestDB counts every commit to `table` as applied (wal_tables' writerTxn at its sequencerTxn). It does so a
 * moment after readers see a commit's rows: ApplyWal2TableJob commits, then runs the writer's housekeeping (TTL
 * eviction), then updates the count that wal_tables() and materialized_views()' base_table_txn read. A test that waits
 * only for the rows can meet a view that looks caught up, or a partition its TTL has not yet evicted.
 */
export async function questdbApplied(admin: { unsafe(query: string): Promise<unknown> }, table: string): Promise<boolean> {
  const [row] = (await admin.unsafe(`select writerTxn, sequencerTxn from wal_tables() where name = '${table}'`)) as { writerTxn: unknown; sequencerTxn: unknown }[]
  return !!row && Number(row.writerTxn) === Number(row.sequencerTxn)
}

export interface ReadingsStoreRun {
  name: 'SQL store' | 'QuestDB'
  /** Config for createTestEnv: nothing for the SQL store; QuestDB's address and a table of the test's own. */
  overrides: Partial<Config>
  /** Drops the QuestDB table (and its rollup views) after the run; nothing for the SQL store. */
  drop(): Promise<void>
}

/**
 * The readings stores an HTTP test runs against: the SQL store always, QuestDB too when QUESTDB_ILP and
 * QUESTDB_PG_URL point at a server (in a table named after `label`); says so on the console when QuestDB is skipped.
 */
export function readingsStores(label: string): ReadingsStoreRun[] {
  const ilp = process.env.QUESTDB_ILP || undefined
  const pgUrl = process.env.QUESTDB_PG_URL || undefined
  const runs: ReadingsStoreRun[] = [{ name: 'SQL store', overrides: {}, drop: async () => {} }]
  if (!ilp || !pgUrl) {
    console.log(`${label}.test: QuestDB runs skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run them against a QuestDB server`)
    return runs
  }
  const table = `hrs_test_${label.replace(/\W/g, '_')}_${suffix()}`
  runs.push({
    name: 'QuestDB', overrides: { questdbIlp: ilp, questdbPgUrl: pgUrl, questdbTable: table },
    async drop() {
      const admin = postgres(pgUrl, { max: 1, prepare: false, onnotice: () => {} })
      try { await dropQuestdbTable(admin, table) } finally { await admin.end() }
    },
  })
  return runs
}

/** Asserts a problem+json response and returns its body. */
export async function problem(response: Response, status: number, code: string): Promise<Record<string, any>> {
  const text = await response.text()
  if (response.status !== status) throw new Error(`expected ${status} ${code}, got ${response.status}: ${text}`)
  if (!response.headers.get('content-type')?.startsWith('application/problem+json')) throw new Error(`not problem+json: ${response.headers.get('content-type')}`)
  const body = JSON.parse(text)
  if (body.code !== code) throw new Error(`expected code ${code}, got ${body.code}: ${text}`)
  if (body.status !== status || typeof body.request_id !== 'string' || typeof body.title !== 'string' || !Array.isArray(body.errors)) {
    throw new Error(`incomplete problem body: ${text}`)
  }
  if (body.request_id !== response.headers.get('x-request-id')) throw new Error('request_id differs from X-Request-Id')
  return body
}

/** Polls `check` until it returns true or `timeoutMs` passes; returns the time it took. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, intervalMs = 20): Promise<number> {
  const start = performance.now()
  while (performance.now() - start < timeoutMs) {
    if (await check()) return performance.now() - start
    await Bun.sleep(intervalMs)
  }
  throw new Error(`condition not met within ${timeoutMs} ms`)
}

/** A deterministic shuffle: each concurrent writer in a test meets the same rows in an order of its own, as batches do. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items]
  let state = seed
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648
    const j = state % (i + 1)
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

/**
 * A process's view of a shared store (`redis`) it can be cut off from: `store` falls back to its own memory while
 * `reachable` is false (src/kv/fallback.ts), and goes back once a probe answers.
 */
export function cutOffShared(redis: SharedStore): { store: FallbackStore; reachable: boolean } {
  const view = { reachable: true } as { store: FallbackStore; reachable: boolean }
  const flaky = new Proxy(redis, { get: (target, key) => {
    const member = Reflect.get(target, key)
    return typeof member === 'function' ? (...args: unknown[]) => (view.reachable ? member.apply(target, args) : Promise.reject(new Error('unreachable'))) : member
  } }) as SharedStore
  view.store = withFallback(flaky, memoryStore(), { probeMs: 10, log: { warn() {}, info() {} } })
  return view
}
