// The reference's "typical first flow" (api-v1-reference.md §1, rule 4), end to end on a real server on
// loopback, through a typed client generated from the service's own GET /api/v1/openapi.json
// (clients/typescript/src/api.ts, written by `npm run client:generate`). `npm run typecheck` checks every path,
// parameter, body and response used here against that file, and the first test fails whenever the file
// differs from what the running service publishes, so the client cannot drift from the document.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import createClient from 'openapi-fetch'
import type { Scope } from '../../src/auth/scopes.ts'
import type { components, paths } from '../../clients/typescript/src/api.ts'
import { API_TYPES_PATH, generateTypes, OPENAPI_PATH } from '../../clients/typescript/scripts/generate.ts'
import { createTestEnv, type TestEnv } from '../helpers.ts'

type Problem = components['schemas']['Problem']
type Activity = components['schemas']['Activity']
/** Compile-time assertion that two types are the same. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false
const assertType = <_ extends true>() => {}

let env: TestEnv
// The published document never holds the `_test` routes; the server under test must not either.
beforeAll(async () => { env = await createTestEnv({ testRoutes: false }) })
afterAll(async () => { await env.close() })

const SCOPES: readonly Scope[] = ['activities:read', 'activities:write', 'animals:read', 'animals:write']

/** A typed client for `token`, on the test server's base URL. */
const clientFor = (token: string) => createClient<paths>({ baseUrl: env.baseUrl, headers: { authorization: `Bearer ${token}` } })

/** Fails with the response's status and body, so a broken step says why. */
function ok<D>(result: { data?: D; error?: unknown; response: Response }, what: string): D {
  if (result.data === undefined) throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`)
  return result.data
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
    const client = clientFor(key.token)

    // 2. GET /me: the account behind the key, the scopes it holds, and the rate limits.
    const meResult = await client.GET('/api/v1/me')
    const me = ok(meResult, 'GET /me')
    expect(me.account.id).toBe(key.accountId)
    expect(me.account.plan).toBe('breeder')
    expect(me.key.id).toBe(key.keyId)
    expect(me.key.kind).toBe('personal')
    expect(key.token.endsWith(me.key.token.slice(-4))).toBe(true)
    expect([...me.scopes].sort()).toEqual([...SCOPES].sort())
    expect(me.rate_limits).toMatchObject({ limit: env.config.rateLimitPerMinute, window_seconds: env.config.rateLimitWindowSeconds })
    expect(me.rate_limits.policy).toBe(`"default";q=${env.config.rateLimitPerMinute};w=${env.config.rateLimitWindowSeconds}`)
    // /me was itself counted, and the figures match the headers of the same response.
    expect(me.rate_limits.remaining).toBe(env.config.rateLimitPerMinute - 1)
    expect(meResult.response.headers.get('x-ratelimit-remaining')).toBe(String(me.rate_limits.remaining))

    // 3. GET /animals, following next_cursor until has_more is false. Make a few first, so there are pages.
    const created: string[] = []
    for (const name of ['Ada', 'Basil', 'Cleo', 'Dune', 'Echo']) {
      const animal = ok(await client.POST('/api/v1/animals', {
        body: { name, species_id: 'python-regius', sex: 'female', tags: ['first-flow'] },
      }), 'POST /animals')
      expect(animal.name).toBe(name)
      expect(animal.weight_grams).toBeNull()
      created.push(animal.id)
    }
    const listed: string[] = []
    let cursor: string | undefined
    let pages = 0
    for (;;) {
      const page = ok(await client.GET('/api/v1/animals', { params: { query: { limit: 2, cursor } } }), 'GET /animals')
      pages++
      listed.push(...page.data.map((a) => a.id))
      expect(page.data.length).toBeLessThanOrEqual(2)
      if (!page.has_more) {
        expect(page.next_cursor).toBeNull()
        break
      }
      expect(page.next_cursor).toBeString()
      cursor = page.next_cursor ?? undefined
      if (pages > 10) throw new Error('pagination does not end')
    }
    expect(pages).toBe(3)
    expect(new Set(listed).size).toBe(listed.length)
    expect([...listed].sort()).toEqual([...created].sort())

    // 4. POST /activities: a feeding, a weight and a shed, each with an Idempotency-Key, their details shaped
    //    as GET /activity-types says.
    const types = ok(await client.GET('/api/v1/activity-types', { params: { query: { limit: 200 } } }), 'GET /activity-types')
    expect(types.has_more).toBe(false)
    const schemaOf = (id: string) => {
      const type = types.data.find((t) => t.id === id)
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
    const run = crypto.randomUUID()

    const feeding = ok(await client.POST('/api/v1/activities', {
      params: { header: { 'idempotency-key': `${run}-feeding` } },
      body: { animal_id: animalId, type: 'feeding', occurred_at: hoursAgo(3), details: shapedAs('feeding', { prey: 'mouse', size: 'adult', count: 1, accepted: true }) },
    }), 'POST /activities (feeding)')
    expect(feeding).toMatchObject({ animal_id: animalId, type: 'feeding', details: { prey: 'mouse', count: 1, accepted: true } })

    const weighedAt = hoursAgo(2)
    // The same request, sent twice as a client retrying after a lost answer would.
    const weigh = () => client.POST('/api/v1/activities', {
      params: { header: { 'idempotency-key': `${run}-weight` } },
      body: { animal_id: animalId, type: 'weight', occurred_at: weighedAt, details: shapedAs('weight', { grams: 1520 }) },
    })
    const first = await weigh()
    const weight = ok(first, 'POST /activities (weight)')
    expect(weight).toMatchObject({ animal_id: animalId, type: 'weight', details: { grams: 1520 } })
    expect(first.response.headers.get('idempotent-replayed')).toBeNull()
    const retry = await weigh()
    expect(retry.response.status).toBe(201)
    expect(retry.response.headers.get('idempotent-replayed')).toBe('true')
    expect(ok(retry, 'POST /activities (weight, replayed)')).toEqual(weight)

    const shed = ok(await client.POST('/api/v1/activities', {
      params: { header: { 'idempotency-key': `${run}-shed` } },
      body: { animal_id: animalId, type: 'shed', occurred_at: hoursAgo(1), details: shapedAs('shed', { complete: true, quality: 'good' }), notes: 'eye caps off' },
    }), 'POST /activities (shed)')
    expect(shed).toMatchObject({ animal_id: animalId, type: 'shed', notes: 'eye caps off' })

    // The weighing is the animal's latest weight.
    const animal = ok(await client.GET('/api/v1/animals/{id}', { params: { path: { id: animalId } } }), 'GET /animals/{id}')
    expect(animal.weight_grams).toBe(1520)
    expect(animal.weighed_at).toBe(weighedAt)

    // The animal's activities: the three, once each (the retry wrote nothing), newest first, followed to the end.
    const activities: Activity[] = []
    let after: string | undefined
    let activityPages = 0
    for (;;) {
      const page = ok(await client.GET('/api/v1/activities', { params: { query: { animal_id: animalId, limit: 2, cursor: after } } }), 'GET /activities')
      activityPages++
      activities.push(...page.data)
      if (!page.has_more) break
      after = page.next_cursor ?? undefined
      if (activityPages > 10) throw new Error('pagination does not end')
    }
    expect(activityPages).toBe(2)
    expect(activities.map((a) => a.id)).toEqual([shed.id, weight.id, feeding.id])
    expect(activities.map((a) => a.type)).toEqual(['shed', 'weight', 'feeding'])
  })

  test('errors are typed as the Problem schema', async () => {
    const key = await env.account({ scopes: SCOPES })
    const client = clientFor(key.token)
    // Type-correct, but the schema wants a non-empty name.
    const { data, error, response } = await client.POST('/api/v1/animals', { body: { name: '', species_id: 'python-regius' } })
    assertType<Equal<NonNullable<typeof error>, Problem>>()
    expect(data).toBeUndefined()
    expect(response.status).toBe(422)
    expect(response.headers.get('content-type')).toStartWith('application/problem+json')
    if (!error) throw new Error('expected an error')
    expect(error.code).toBe('validation_failed')
    expect(error.status).toBe(422)
    expect(error.request_id).toBe(response.headers.get('x-request-id')!)
    expect(error.errors.map((e) => e.path)).toContain('/body/name')
  })
})
