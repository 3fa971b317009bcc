// The published OpenAPI document checked by an independent validator: Stoplight's Prism (`prism proxy --errors`)
// sits between the clients and a real server on loopback and validates every request against the document
// (parameters, bodies, security schemes) and every response (status, headers, body). A violation makes Prism
// answer with its own problem (`https://stoplight.io/prism/errors#…`) and an `sl-violations` header; each
// exchange below is checked for both, and Prism's log for any refused request.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import createClient from 'openapi-fetch'
import type { Scope } from '../../src/auth/scopes.ts'
import type { paths } from '../../clients/typescript/src/api.ts'
import { createTestEnv, type TestEnv } from '../helpers.ts'

const PRISM = join(import.meta.dir, '..', '..', 'node_modules', '.bin', 'prism')
const START_TIMEOUT_MS = 60_000

interface Prism { url: string; log: () => string; stop(): Promise<void> }

/** Starts `prism proxy --errors` on a free loopback port in front of `upstream`; the reason it could not, otherwise. */
async function startPrism(document: string, upstream: string): Promise<Prism | string> {
  if (!(await Bun.file(PRISM).exists())) return `${PRISM} is missing (npm install adds @stoplight/prism-cli)`
  const port = 30_000 + Math.floor(Math.random() * 20_000)
  let proc: ReturnType<typeof Bun.spawn>
  try {
    proc = Bun.spawn([PRISM, 'proxy', '--errors', '-h', '127.0.0.1', '-p', String(port), document, upstream], { stdout: 'pipe', stderr: 'pipe' })
  } catch (error) {
    return `prism could not be spawned: ${(error as Error).message}`
  }
  let log = ''
  const decoder = new TextDecoder()
  const pump = async (stream: ReadableStream<Uint8Array>) => { for await (const chunk of stream) log += decoder.decode(chunk) }
  const pumped = Promise.all([pump(proc.stdout as ReadableStream<Uint8Array>), pump(proc.stderr as ReadableStream<Uint8Array>)])
  const stop = async () => {
    proc.kill()
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000)
    await proc.exited
    clearTimeout(timer)
    await pumped.catch(() => {})
  }
  const deadline = Date.now() + START_TIMEOUT_MS
  while (!log.includes('Prism is listening')) {
    if (proc.exitCode !== null) return `prism exited with ${proc.exitCode} before listening: ${log.slice(-2000)}`
    if (Date.now() > deadline) { await stop(); return `prism did not listen within ${START_TIMEOUT_MS} ms: ${log.slice(-2000)}` }
    await Bun.sleep(100)
  }
  return { url: `http://127.0.0.1:${port}`, log: () => log, stop }
}

const SCOPES: readonly Scope[] = ['activities:read', 'activities:write', 'animals:read', 'animals:write', 'sensors:read', 'sensors:write']

const env: TestEnv = await createTestEnv({ testRoutes: false })
const documentFile = join(mkdtempSync(join(tmpdir(), 'hrs-prism-')), 'openapi.json')
writeFileSync(documentFile, await (await fetch(`${env.baseUrl}/api/v1/openapi.json`)).text())
const prism = await startPrism(documentFile, env.baseUrl)
if (typeof prism === 'string') console.warn(`prism-proxy.test: SKIPPED, Prism cannot start here: ${prism}`)
afterAll(async () => {
  if (typeof prism !== 'string') await prism.stop()
  await env.close()
})

/** Every exchange through Prism, for the final check. */
const exchanges: string[] = []

/** A fetch through Prism that fails on any violation Prism reports. */
async function viaPrism(input: string | Request, init?: RequestInit): Promise<Response> {
  const proxy = prism as Prism
  const request = typeof input === 'string' ? new Request(proxy.url + input, init) : input
  const response = await fetch(request)
  const text = await response.clone().text()
  const what = `${request.method} ${new URL(request.url).pathname} → ${response.status}`
  exchanges.push(what)
  expect({ what, violations: response.headers.get('sl-violations') }).toEqual({ what, violations: null })
  expect({ what, prismError: text.includes('stoplight.io/prism/errors') ? text : null }).toEqual({ what, prismError: null })
  return response
}

const typedClient = (headers: Record<string, string>) => createClient<paths>({ baseUrl: (prism as Prism).url, headers, fetch: viaPrism })

function ok<D>(result: { data?: D; error?: unknown; response: Response }, what: string): D {
  if (result.data === undefined) throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`)
  return result.data
}

describe.skipIf(typeof prism === 'string')('through the Prism validating proxy', () => {
  test('the typed-client first flow (bearer token): /me, animals made, paged, read, patched; activities with Idempotency-Key', async () => {
    const key = await env.account({ scopes: SCOPES })
    const client = typedClient({ authorization: `Bearer ${key.token}` })
    expect(ok(await client.GET('/api/v1/me'), 'GET /me').key.id).toBe(key.keyId)
    const created: string[] = []
    for (const name of ['Ada', 'Basil', 'Cleo']) {
      created.push(ok(await client.POST('/api/v1/animals', { body: { name, species_id: 'python-regius', sex: 'female', tags: ['prism'] } }), 'POST /animals').id)
    }
    const listed: string[] = []
    let cursor: string | undefined
    for (let pages = 0; pages < 5; pages++) {
      const page = ok(await client.GET('/api/v1/animals', { params: { query: { limit: 2, cursor, species_id: 'python-regius' } } }), 'GET /animals')
      listed.push(...page.data.map((a) => a.id))
      if (!page.has_more) break
      cursor = page.next_cursor ?? undefined
    }
    expect(listed.sort()).toEqual([...created].sort())
    const animalId = created[0]!
    const read = await client.GET('/api/v1/animals/{id}', { params: { path: { id: animalId } } })
    ok(read, 'GET /animals/{id}')
    ok(await client.PATCH('/api/v1/animals/{id}', {
      params: { path: { id: animalId }, header: { 'if-match': read.response.headers.get('etag')! } },
      body: { morph: 'banana' },
    }), 'PATCH /animals/{id}')
    ok(await client.GET('/api/v1/activity-types', { params: { query: { limit: 200 } } }), 'GET /activity-types')
    const weigh = () => client.POST('/api/v1/activities', {
      params: { header: { 'idempotency-key': crypto.randomUUID().slice(0, 8) + '-weight' } },
      body: { animal_id: animalId, type: 'weight', occurred_at: new Date(Date.now() - 3_600_000).toISOString(), details: { grams: 1520 } },
    })
    ok(await weigh(), 'POST /activities')
    const idempotent = { 'idempotency-key': `${crypto.randomUUID()}-feeding` }
    const feeding = { animal_id: animalId, type: 'feeding', occurred_at: new Date(Date.now() - 7_200_000).toISOString(), details: { prey: 'mouse', count: 1, accepted: true } }
    ok(await client.POST('/api/v1/activities', { params: { header: idempotent }, body: feeding }), 'POST /activities (first)')
    const replay = await client.POST('/api/v1/activities', { params: { header: idempotent }, body: feeding })
    expect(replay.response.headers.get('idempotent-replayed')).toBe('true')
    ok(await client.GET('/api/v1/activities', { params: { query: { animal_id: animalId } } }), 'GET /activities')
    const deleted = await client.DELETE('/api/v1/animals/{id}', { params: { path: { id: created[2]! } } })
    expect(deleted.response.status).toBe(204)
  }, 60_000)

  test('a personal token in X-API-Key', async () => {
    const key = await env.account({ scopes: SCOPES })
    const client = typedClient({ 'x-api-key': key.token })
    expect(ok(await client.GET('/api/v1/me'), 'GET /me').key.id).toBe(key.keyId)
    expect(ok(await client.GET('/api/v1/animals'), 'GET /animals').data).toEqual([])
  }, 60_000)

  test('device keys: readings by bearer and X-API-Key; ping by query key, form body key and JSON body key', async () => {
    const owner = await env.account({ scopes: SCOPES })
    const made = await viaPrism('/api/v1/sensors/devices', {
      method: 'POST', headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] }),
    })
    expect(made.status).toBe(201)
    const { id, key } = await made.json() as { id: string; key: string }
    const readings = (headers: Record<string, string>, value: number) => viaPrism('/api/v1/sensors/readings', {
      method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ readings: [{ channel: 't1', value, ts: Date.now() - value * 1000 }] }),
    })
    expect((await readings({ authorization: `Bearer ${key}` }, 1)).status).toBe(202)
    expect((await readings({ 'x-api-key': key }, 2)).status).toBe(202)
    expect((await viaPrism(`/api/v1/sensors/ping?key=${key}&t1=21.5`)).status).toBe(204)
    expect((await viaPrism('/api/v1/sensors/ping', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `key=${key}&t1=22.5` })).status).toBe(204)
    expect((await viaPrism('/api/v1/sensors/ping', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key, t1: 23.5 }) })).status).toBe(204)
    expect((await viaPrism(`/api/v1/sensors/ping?key=${key}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 't1=24.5' })).status).toBe(204)
    const device = await viaPrism(`/api/v1/sensors/devices/${id}`, { headers: { authorization: `Bearer ${key}` } })
    expect(device.status).toBe(200)
  }, 60_000)

  test('error answers the document describes: 401, 404, 422 from the handler, and the error pages', async () => {
    const key = await env.account({ scopes: SCOPES })
    const unknownKey = await viaPrism('/api/v1/me', { headers: { authorization: `Bearer hrs_pat_${'a'.repeat(36)}` } })
    expect(unknownKey.status).toBe(401)
    const missing = await viaPrism('/api/v1/animals/anm_01jd8x3m5v6w7y8z9a0b1c2d3e', { headers: { 'x-api-key': key.token } })
    expect(missing.status).toBe(404)
    const unknownSpecies = await viaPrism('/api/v1/animals', {
      method: 'POST', headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Zed', species_id: 'no-such-species' }),
    })
    expect(unknownSpecies.status).toBe(422)
    const page = await viaPrism(new URL((await unknownSpecies.json() as { type: string }).type).pathname)
    expect(page.status).toBe(200)
  }, 60_000)

  test('Prism refused nothing along the way', () => {
    expect(exchanges.length).toBeGreaterThan(20)
    const refused = (prism as Prism).log().split('\n').filter((line) => /✖|violation/i.test(line))
    expect(refused).toEqual([])
  })
})
