// The reference's "typical first flow" (api-v1-reference.md §1, rule 4), end to end on a real server on
// loopback, through the TypeScript SDK (clients/typescript), whose types are generated from the service's own
// GET /api/v1/openapi.json (clients/typescript/src/api.ts, written by `npm run client:generate`).
// `npm run typecheck` checks every call, field and filter used here against that file, and the first test fails
// whenever the file differs from what the running service publishes, so the SDK cannot drift from the document.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { HusbandryClient, ProblemError, type FetchLike, type Problem } from '../../clients/typescript/src/index.ts'
import { API_TYPES_PATH, generateTypes, OPENAPI_PATH } from '../../clients/typescript/scripts/generate.ts'
import type { Scope } from '../../src/auth/scopes.ts'
import { createTestEnv, type TestEnv } from '../helpers.ts'

/** Compile-time assertion that two types are the same. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false
const assertType = <_ extends true>() => {}

let env: TestEnv
// The published document never holds the `_test` routes; the server under test must not either.
beforeAll(async () => { env = await createTestEnv({ testRoutes: false }) })
afterAll(async () => { await env.close() })

const SCOPES: readonly Scope[] = ['activities:read', 'activities:write', 'animals:read', 'animals:write']

/**
 * Every request the SDK sends, as "METHOD /path?query" (so a test can say how many pages it took), and the
 * Idempotency-Key each carried.
 */
function recorded(): { fetch: FetchLike; sent: string[]; keys: (string | null)[] } {
  const sent: string[] = []
  const keys: (string | null)[] = []
  return {
    sent, keys,
    fetch: (url, init) => {
      const { pathname, search } = new URL(url)
      sent.push(`${init.method} ${pathname}${search}`)
      keys.push(new Headers(init.headers).get('idempotency-key'))
      return fetch(url, init)
    },
  }
}

describe('typed client from the served OpenAPI document', () => {
  test('the committed client types equal what the running service publishes', async () => {
    const res = await fetch(env.baseUrl + OPENAPI_PATH)
    expect(res.status).toBe(200)
    const served = await generateTypes(await res.json())
    const committed = await Bun.file(API_TYPES_PATH).text()
    if (served !== committed) {
      const a = committed.split('\n')
      const b = served.split('\n')
      const line = a.findIndex((text, i) => text !== b[i])
      const at = line === -1 ? a.length : line
      throw new Error(
        `clients/typescript/src/api.ts is stale: it differs from GET ${OPENAPI_PATH} first at line ${at + 1}\n` +
        `  committed: ${a[at] ?? '(end of file)'}\n  served:    ${b[at] ?? '(end of file)'}\n` +
        'Run `npm run client:generate` and commit clients/typescript/src/api.ts.',
      )
    }
  })

  test('first flow: key, GET /me, page through GET /animals, POST /activities', async () => {
    // 1. A key: made by the operator/profile, not the API. Its value is all the client gets.
    const key = await env.account({ scopes: SCOPES })
    const { fetch, sent, keys } = recorded()
    const client = new HusbandryClient({ baseUrl: env.baseUrl, apiKey: key.token, fetch })

    // 2. GET /me: the account behind the key, the scopes it holds, and the rate limits.
    const me = await client.me()
    expect(me.account.id).toBe(key.accountId)
    expect(me.account.plan).toBe('breeder')
    expect(me.key.id).toBe(key.keyId)
    expect(me.key.kind).toBe('personal')
    expect(key.token.endsWith(me.key.token.slice(-4))).toBe(true)
    expect([...me.scopes].sort()).toEqual([...SCOPES].sort())
    expect(me.rate_limits).toMatchObject({ limit: env.config.rateLimitPerMinute, window_seconds: env.config.rateLimitWindowSeconds })
    expect(me.rate_limits.policy).toBe(`"default";q=${env.config.rateLimitPerMinute};w=${env.config.rateLimitWindowSeconds}`)
    // /me was itself counted, and the SDK read the same figures from the response's RateLimit headers.
    expect(me.rate_limits.remaining).toBe(env.config.rateLimitPerMinute - 1)
    expect(client.rateLimit).toMatchObject({
      policy: 'default', limit: env.config.rateLimitPerMinute, windowSeconds: env.config.rateLimitWindowSeconds, remaining: me.rate_limits.remaining,
    })

    // 3. GET /animals, followed page by page by the SDK's iterator. Make a few first, so there are pages.
    const created: string[] = []
    for (const name of ['Ada', 'Basil', 'Cleo', 'Dune', 'Echo']) {
      const animal = await client.animals.create({ name, species_id: 'python-regius', sex: 'female', tags: ['first-flow'] })
      expect(animal.name).toBe(name)
      expect(animal.weight_grams).toBeNull()
      created.push(animal.id)
    }
    sent.length = 0
    const listed: string[] = []
    for await (const animal of client.animals.list({ limit: 2 })) listed.push(animal.id)
    // Three pages of 2, 2 and 1; the second and third asked with the cursor the one before gave.
    expect(sent).toHaveLength(3)
    expect(sent[0]).toBe('GET /api/v1/animals?limit=2')
    for (const request of sent.slice(1)) expect(request).toMatch(/^GET \/api\/v1\/animals\?limit=2&cursor=[\w-]+\.[\w-]+$/)
    expect(new Set(listed).size).toBe(listed.length)
    expect([...listed].sort()).toEqual([...created].sort())

    // 4. POST /activities: a feeding, a weight and a shed, their details shaped as GET /activity-types says.
    const types = await client.activityTypes.list({ limit: 200 }).toArray()
    const schemaOf = (id: string) => {
      const type = types.find((t) => t.id === id)
      if (!type) throw new Error(`no activity type ${id}`)
      return type.details_schema as { properties: Record<string, unknown>; required?: string[] }
    }
    /** The details sent use only fields the type declares, and carry every one it requires. */
    const shapedAs = (id: string, details: Record<string, unknown>) => {
      const schema = schemaOf(id)
      for (const field of Object.keys(details)) expect({ type: id, field, declared: field in schema.properties }).toEqual({ type: id, field, declared: true })
      for (const field of schema.required ?? []) expect({ type: id, field, sent: field in details }).toEqual({ type: id, field, sent: true })
      return details
    }

    const animalId = created[0]!
    const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString()

    // The SDK gives each call an Idempotency-Key of its own.
    sent.length = 0
    keys.length = 0
    const feeding = await client.activities.create({ animal_id: animalId, type: 'feeding', occurred_at: hoursAgo(3), details: shapedAs('feeding', { prey: 'mouse', size: 'adult', count: 1, accepted: true }) })
    expect(feeding).toMatchObject({ animal_id: animalId, type: 'feeding', details: { prey: 'mouse', count: 1, accepted: true } })
    expect(sent).toEqual(['POST /api/v1/activities'])
    expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)

    // The same call made twice with one key, as a program resending a write it queued before a restart would:
    // the second answer is the first one replayed, and nothing more is written.
    const weighing = { animal_id: animalId, type: 'weight', occurred_at: hoursAgo(2), details: shapedAs('weight', { grams: 1520 }) }
    const idempotencyKey = crypto.randomUUID()
    const first = await client.request('createActivity', { body: weighing }, { idempotencyKey })
    expect(first.response.status).toBe(201)
    expect(first.response.headers.get('idempotent-replayed')).toBeNull()
    const weight = first.data
    expect(weight).toMatchObject({ animal_id: animalId, type: 'weight', details: { grams: 1520 } })
    const again = await client.request('createActivity', { body: weighing }, { idempotencyKey })
    expect(again.response.status).toBe(201)
    expect(again.response.headers.get('idempotent-replayed')).toBe('true')
    expect(again.data).toEqual(weight)
    expect(keys.slice(1)).toEqual([idempotencyKey, idempotencyKey])

    const shed = await client.activities.create({ animal_id: animalId, type: 'shed', occurred_at: hoursAgo(1), details: shapedAs('shed', { complete: true, quality: 'good' }), notes: 'eye caps off' })
    expect(shed).toMatchObject({ animal_id: animalId, type: 'shed', notes: 'eye caps off' })

    // The weighing is the animal's latest weight.
    const animal = await client.animals.get(animalId)
    expect(animal.weight_grams).toBe(1520)
    expect(animal.weighed_at).toBe(weighing.occurred_at)

    // The animal's activities: the three, once each (the second weighing wrote nothing), newest first, in 2 pages.
    sent.length = 0
    const activities = await client.activities.list({ animal_id: animalId, limit: 2 }).toArray()
    expect(sent).toHaveLength(2)
    expect(activities.map((a) => a.id)).toEqual([shed.id, weight.id, feeding.id])
    expect(activities.map((a) => a.type)).toEqual(['shed', 'weight', 'feeding'])
  })

  test('errors are thrown as ProblemError, typed as the Problem schema', async () => {
    const key = await env.account({ scopes: SCOPES })
    const client = new HusbandryClient({ baseUrl: env.baseUrl, apiKey: key.token })
    // Type-correct, but the schema wants a non-empty name.
    const error = await client.animals.create({ name: '', species_id: 'python-regius' }).then(() => undefined, (e: unknown) => e)
    if (!(error instanceof ProblemError)) throw new Error(`expected a ProblemError, got ${String(error)}`)
    assertType<Equal<typeof error.problem, Problem>>()
    expect(error.status).toBe(422)
    expect(error.headers.get('content-type')).toStartWith('application/problem+json')
    expect(error.code).toBe('validation_failed')
    expect(error.problem.status).toBe(422)
    expect(error.requestId).toBe(error.headers.get('x-request-id')!)
    expect(error.errors.map((e) => e.path)).toContain('/body/name')
  })
})
