// What the records scenarios (animals-walk, activities, readings-query, mixed) share: the API they load (a server
// the bench starts, or a `--target` deployment), an account filled by the operator CLI's `demo`, calls and full
// list walks for setting up and verifying, plan runs on the load generator, and fixed answers on the bare server.
import { readFileSync } from 'node:fs'
import postgres from 'postgres'
import type { PlanStep, RequestPlan } from '../load/generator.ts'
import type { FixedAnswer } from '../servers/bare-server.ts'
import { pidsNamed, runLoad, type LoadResult, type Watch } from './load.ts'
import { BUN, ourServer, startServer, type Child } from './processes.ts'
import type { ScenarioContext } from './report.ts'
import { accountAndToken, cleanRedis, cli, freshDatabase, serverEnv, type FreshDatabase } from './setup.ts'

/** Where a scenario sends its requests: `baseUrl` without `/api/v1` (paths carry it). */
export interface Api { baseUrl: string; token: string }

export const API = '/api/v1'

export const localApi = (server: Child, token: string): Api => ({ baseUrl: server.baseUrl, token })

/** A `--target` deployment; its URL may be given with or without `/api/v1`. */
export function remoteApi(target: { baseUrl: string; token: string }): Api {
  return { baseUrl: target.baseUrl.replace(/\/+$/, '').replace(/\/api\/v1$/, ''), token: target.token }
}

export interface Answer { status: number; headers: Headers; text: string; json: any }

/** One API call with the scenario's token; throws unless it answers `expect`. */
export async function call(api: Api, method: string, path: string, options: { body?: unknown; expect?: number; headers?: Record<string, string> } = {}): Promise<Answer> {
  const res = await fetch(api.baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${api.token}`, ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(60_000),
  })
  const text = await res.text()
  const expect = options.expect ?? (method === 'POST' ? 201 : 200)
  if (res.status !== expect) throw new Error(`${method} ${path} answered ${res.status} (expected ${expect}): ${text.slice(0, 500)}`)
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined }
}

/** Every item of a list, following `next_cursor` from the first page to the last (parsed: for checks, not load). */
export async function walkList<T = any>(api: Api, path: string): Promise<{ items: T[]; pages: number; firstPage: string }> {
  const items: T[] = []
  let pages = 0
  let firstPage = ''
  let cursor: string | null = null
  do {
    const answer: Answer = await call(api, 'GET', cursor ? `${path}${path.includes('?') ? '&' : '?'}cursor=${cursor}` : path)
    if (!pages) firstPage = answer.text
    pages++
    items.push(...(answer.json.data as T[]))
    cursor = answer.json.has_more ? answer.json.next_cursor : null
    if (pages > 100_000) throw new Error(`${path}: no end after ${pages} pages`)
  } while (cursor)
  return { items, pages, firstPage }
}

/**
 * A new account filled by the operator CLI's `demo` (about 300 animals and 21 000 activities, 300 environments
 * and so on: a breeder's collection with 18 months of history), and an all-scopes token for it.
 */
export async function demoAccount(env: Record<string, string>): Promise<{ accountId: string; token: string }> {
  const account = await accountAndToken(env)
  await cli(['demo', account.accountId], env)
  return account
}

/**
 * The Postgres backends serving one database (their process title names it), read when called: the store's CPU
 * in a scenario's notes, without the backends of anything else running on the machine.
 */
export function backendsOf(databaseName: string): () => number[] {
  const title = ` ${databaseName} `
  return () => pidsNamed('postgres').filter((pid) => {
    try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(title) } catch { return false }
  })
}

/** A count from the scenario's own database (verification only). */
export async function countRows(databaseUrl: string, query: string, params: (string | number)[] = []): Promise<number> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql.unsafe<{ n: number }[]>(query, params)
    return Number(row!.n)
  } finally {
    await sql.end()
  }
}

/**
 * Animals a scenario may write to on a remote target, where the account's own animals are not the bench's to
 * change: made here (named "bench …"), deleted again by deleteAnimals.
 */
export async function benchAnimals(api: Api, count: number, label: string): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const answer = await call(api, 'POST', `${API}/animals`, { body: { name: `bench ${label} ${i + 1}`, species_id: 'python-regius', tags: ['bench'] } })
    ids.push(answer.json.id)
  }
  return ids
}

export async function deleteAnimals(api: Api, ids: string[]): Promise<void> {
  for (const id of ids) await call(api, 'DELETE', `${API}/animals/${id}`, { expect: 204 }).catch(() => {})
}

/** Activity bodies for POST /activities, `{id}` standing for the animal (the generator fills it in). */
export const FEEDING = JSON.stringify({ animal_id: '{id}', type: 'feeding', details: { prey: 'mouse', size: 'adult', count: 1, state: 'frozen_thawed', accepted: true } })
export const WEIGHING = JSON.stringify({ animal_id: '{id}', type: 'weight', details: { grams: 1234 } })
/** The item marker of an animals page: each animal holds `"id":"anm_` once (dam_id and sire_id read `_id":`). */
export const ANIMAL_MARKER = '"id":"anm_'

/** A closed-loop plan run of `lanes` lanes against `baseUrl` with the scenario's windows and generators. */
export function runPlan(ctx: ScenarioContext, baseUrl: string, token: string, lanes: number, steps: PlanStep[], watch: Watch = {}): Promise<LoadResult> {
  const plan: RequestPlan = { steps }
  return runLoad({
    url: baseUrl, method: 'GET', lanes, warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, mode: 'closed', drainMs: 20_000,
    body: { kind: 'none' }, keys: [token], auth: 'header', countAccepted: false, plan,
  }, ctx.generators, watch)
}

/** A plan run that saw an answer it should not have (over the whole run), or no answer at all, measured something else. */
export function checkPlan(load: LoadResult, label: string): void {
  const plan = load.plan!
  const wrong = Object.entries(plan.steps).filter(([, s]) => s.errors > 0).map(([name, s]) => `${name} ${JSON.stringify(s.statuses)}`)
  if (wrong.length || plan.totalErrors > 0 || load.okRequests === 0) {
    throw new Error(`${label}: unexpected answers (${plan.totalErrors} over the whole run) ${wrong.join('; ') || JSON.stringify(load.statuses)}: ${load.firstError ?? ''}`)
  }
}

/** Registers fixed answers on the bare server (bench/servers/bare-server.ts). */
export async function serveFixed(bare: Child, answers: FixedAnswer[]): Promise<void> {
  for (const answer of answers) {
    const res = await fetch(`${bare.baseUrl}/_fixed`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer) })
    if (res.status !== 204) throw new Error(`the bare server refused a fixed answer: ${res.status}`)
  }
}

/** A latency for a note: ms with one decimal, or "-" when there was none (NaN, which JSON turns into null). */
export const ms = (value: number | null | undefined) => (typeof value === 'number' && Number.isFinite(value) ? `${value.toFixed(1)} ms` : '-')

/** Server CPU per answered request (µs): comparable even when the generator, not the server, set the rate. */
export const cpuPerRequest = (load: LoadResult) => (load.watched.server! * 1e6) / load.requestsPerSecond

/** "server x cores (y µs/request) / bare …; generator …; others …" for a line's note. */
export function cpuNote(ours: LoadResult, bare: LoadResult | undefined): string {
  if (!bare) return `${ours.watched.server === undefined ? '' : `server ${ours.watched.server.toFixed(2)} cores, `}generator ${ours.cpu.toFixed(2)} cores, others ${ours.others.toFixed(2)}`
  return `server CPU per request ours ${cpuPerRequest(ours).toFixed(0)} µs / bare ${cpuPerRequest(bare).toFixed(0)} µs; ` +
    `server ${ours.watched.server!.toFixed(2)} / ${bare.watched.server!.toFixed(2)} cores; generator ${ours.cpu.toFixed(2)} / ${bare.cpu.toFixed(2)} cores` +
    `${bare.cpu >= 0.9 * bare.generators ? ' (saturated against the bare server: the ratio flatters us)' : ''}; others ${ours.others.toFixed(2)} / ${bare.others.toFixed(2)}`
}

/** Lanes and page size from the run's options, with the scenario's defaults. */
export function lanesOf(ctx: ScenarioContext, fallback: number): number {
  return Math.max(1, Math.round(ctx.options.concurrency ?? fallback))
}

/**
 * `--batch` as a page size, held to the API's bounds (1…max): one `--batch` serves every scenario of a run, and
 * one meant as readings per request may exceed a list's limit. The lines name the page size used.
 */
export function pageSizeOf(ctx: ScenarioContext, fallback: number, max: number): number {
  return Math.min(max, Math.max(1, Math.round(ctx.options.batch ?? fallback)))
}

/** What a records scenario runs against: with a remote target only `api`; locally also what the bench started. */
export interface RecordsRun {
  api: Api
  local?: {
    database: FreshDatabase
    accountId: string
    /** Our server: `bun src/main.ts` on the scenario's database. */
    server: Child
    /** The bare Bun.serve baseline, when asked for. */
    bare?: Child
    /** CPU to sample over the measured window: our server's, and that of the Postgres backends of its database. */
    watch: Watch
  }
}

/**
 * Runs `body` against a `--target` deployment, or else against our server on a fresh database with a new account
 * (filled by `demo` when asked) and, when asked, a bare server beside it; stops and drops all of it afterwards.
 */
export async function onRecordsServer<T>(ctx: ScenarioContext, label: string, options: { demo: boolean; bare: boolean; env?: Record<string, string> }, body: (run: RecordsRun) => Promise<T>): Promise<T> {
  if (ctx.options.target) return body({ api: remoteApi(ctx.options.target) })
  const database = await freshDatabase(label)
  const env = serverEnv(database, options.env)
  let server: Child | undefined
  let bare: Child | undefined
  try {
    ctx.log(`${label}: a new account${options.demo ? ' filled by the CLI\'s demo' : ''} and our server…`)
    const { accountId, token } = options.demo ? await demoAccount(env) : await accountAndToken(env)
    server = await startServer('our server', ourServer('src/main.ts', label), env)
    if (options.bare) bare = await startServer('bare server', [BUN, 'bench/servers/bare-server.ts'], {})
    const pid = server.pid
    return await body({ api: localApi(server, token), local: { database, accountId, server, bare, watch: { server: () => [pid], postgres: backendsOf(database.name) } } })
  } finally {
    await server?.stop()
    await bare?.stop()
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}
