// The TypeScript SDK (clients/typescript) against a real server on loopback: lists followed to the end by its
// async iterator, a POST /activities retried after a lost answer written once, waits that honour Retry-After
// and RateLimit, deliveries verified with standardwebhooks, and errors thrown as typed problems. Where the
// service cannot be made to answer a certain way on cue (a 503, a 409 in flight, a proxy's HTML), a small
// Bun.serve on loopback plays it.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import {
  HusbandryClient, NOT_COVERED, ProblemError, ROUTES, verifyWebhook, WebhookVerificationError,
  type FetchLike, type ItemOf, type OperationId, type Problem, type RetryEvent, type Schemas,
} from '../../clients/typescript/src/index.ts'
import type { Route } from '../../clients/typescript/src/types.ts'
import type { Scope } from '../../src/auth/scopes.ts'
import { createTestEnv, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => {
  // No `_test` routes: the document served here is the published one the SDK's types come from.
  env = await createTestEnv({ testRoutes: false, webhookAllowPrivate: true, webhookPollMs: 20 })
  env.deps.dispatcher.start()
})
afterAll(async () => { await env.close() })

const servers: ReturnType<typeof Bun.serve>[] = []
afterEach(() => { for (const server of servers.splice(0)) server.stop(true) })

const SCOPES: readonly Scope[] = ['animals:read', 'animals:write', 'activities:read', 'activities:write', 'webhooks:read', 'webhooks:write']

/** One request as the SDK sent it and the answer it was given (or would have been, for a lost one). */
interface Exchange {
  method: string
  path: string
  search: string
  idempotencyKey: string | null
  body: string | undefined
  sentAt: number
  status?: number
  receivedAt?: number
  headers?: Headers
}

/**
 * A fetch for the SDK that records every exchange and lets `tamper` replace the real answer (after the server
 * has received the request and answered it), e.g. to lose it.
 */
function recording(tamper?: (exchange: Exchange, response: Response) => Promise<Response> | Response) {
  const log: Exchange[] = []
  const fetchFn: FetchLike = async (url, init) => {
    const { pathname, search } = new URL(url)
    const exchange: Exchange = {
      method: init.method ?? 'GET', path: pathname, search, idempotencyKey: new Headers(init.headers).get('idempotency-key'),
      body: typeof init.body === 'string' ? init.body : undefined, sentAt: performance.now(),
    }
    log.push(exchange)
    const response = await fetch(url, init)
    Object.assign(exchange, { status: response.status, receivedAt: performance.now(), headers: response.headers })
    return tamper ? tamper(exchange, response) : response
  }
  return { log, fetch: fetchFn }
}

/** Compile-time assertion that two types are the same. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false
const assertType = <_ extends true>() => {}

/**
 * Never called: `npm run typecheck` checks these lines. Each @ts-expect-error fails the typecheck if the line
 * under it compiles, i.e. if the SDK stopped catching that mistake.
 */
function typeChecks(client: HusbandryClient) {
  assertType<Equal<ItemOf<'listAnimals'>, Schemas['Animal']>>()
  assertType<Equal<Awaited<ReturnType<typeof client.activities.create>>, Schemas['Activity']>>()
  assertType<Equal<Awaited<ReturnType<typeof client.animals.delete>>, void>>()
  // @ts-expect-error colour is not a field of an animal
  void client.animals.create({ name: 'Ada', species_id: 'python-regius', colour: 'red' })
  // @ts-expect-error sex is male, female or unknown
  void client.animals.create({ name: 'Ada', species_id: 'python-regius', sex: 'f' })
  // @ts-expect-error GET /animals has no filter `speceis`
  void client.animals.list({ speceis: 'python-regius' })
  // @ts-expect-error an activity needs its animal_id
  void client.activities.create({ type: 'feeding' })
  // @ts-expect-error a path parameter cannot be left out
  void client.request('getAnimal', {})
  // @ts-expect-error updateAnimal is PATCH /animals/{id}, not PUT
  void ({ updateAnimal: { method: 'PUT', path: '/api/v1/animals/{id}' } } satisfies { [K in OperationId]?: Route<K> })
  // @ts-expect-error GET /me takes no Idempotency-Key
  void ({ getMe: { method: 'GET', path: '/api/v1/me', idempotencyKey: true } } satisfies { [K in OperationId]?: Route<K> })
}

test('the SDK calls every operation the service publishes, or says why it leaves it out', async () => {
  const document = await (await fetch(`${env.baseUrl}/api/v1/openapi.json`)).json() as { paths: Record<string, Record<string, { operationId?: string }>> }
  const published = Object.values(document.paths).flatMap((item) => Object.values(item).flatMap((op) => (op?.operationId ? [op.operationId] : [])))
  expect(published.length).toBeGreaterThan(40)
  expect([...Object.keys(ROUTES), ...Object.keys(NOT_COVERED)].sort()).toEqual([...published].sort())
})

describe('pagination', () => {
  test('for await follows next_cursor to the end: the same items, in the same order, as one big page', async () => {
    const key = await env.account({ scopes: SCOPES })
    const { log, fetch } = recording()
    const client = new HusbandryClient({ baseUrl: env.baseUrl, apiKey: key.token, fetch })
    for (let i = 0; i < 9; i++) {
      await client.animals.create({ name: `Paged ${i}`, species_id: 'python-regius', tags: i < 7 ? ['paged'] : [] })
    }
    const all = (await client.request('listAnimals', { query: { limit: 200 } })).data
    expect(all.has_more).toBe(false)
    expect(all.data).toHaveLength(9)

    log.length = 0
    const iterated: Schemas['Animal'][] = []
    for await (const animal of client.animals.list({ limit: 4 })) iterated.push(animal)
    expect(iterated).toEqual(all.data)
    expect(log.map((e) => e.search.replace(/cursor=[^&]+/, 'cursor=…'))).toEqual(['?limit=4', '?limit=4&cursor=…', '?limit=4&cursor=…'])

    // A filter stays on every page: the service binds a cursor to its filters and refuses it without them.
    log.length = 0
    const tagged = await client.animals.list({ tag: 'paged', limit: 2 }).toArray()
    expect(tagged).toEqual(all.data.filter((a) => a.tags.includes('paged')))
    expect(log).toHaveLength(4)
    for (const exchange of log) expect(new URLSearchParams(exchange.search).get('tag')).toBe('paged')

    // Pages are fetched as the loop asks: leaving after the first item fetched one page.
    log.length = 0
    for await (const animal of client.animals.list({ limit: 4 })) {
      expect(animal).toEqual(all.data[0]!)
      break
    }
    expect(log).toHaveLength(1)

    // pages() hands out each next_cursor, and a list given one resumes after that page.
    const pages = client.animals.list({ limit: 4 }).pages()
    const first = (await pages.next()).value
    if (!first?.next_cursor) throw new Error('expected a first page with a next_cursor')
    expect(first.data).toEqual(all.data.slice(0, 4))
    expect(await client.animals.list({ limit: 4, cursor: first.next_cursor }).toArray()).toEqual(all.data.slice(4))
  })
})

describe('retries', () => {
  const kinds = [
    { lost: 'a network error', answer: (): Response => { throw new TypeError('fetch failed: the connection was reset') } },
    { lost: 'a 502 from a proxy', answer: () => new Response('<h1>502 Bad Gateway</h1>', { status: 502, headers: { 'content-type': 'text/html' } }) },
  ]
  for (const { lost, answer } of kinds) {
    test(`POST /activities whose answer is lost to ${lost} is sent again with the same key and written once`, async () => {
      const key = await env.account({ scopes: SCOPES })
      const setup = new HusbandryClient({ baseUrl: env.baseUrl, apiKey: key.token })
      const animal = await setup.animals.create({ name: 'Retry', species_id: 'python-regius' })

      let firstAnswer: Schemas['Activity'] | undefined
      const { log, fetch } = recording(async (exchange, response) => {
        if (exchange.method !== 'POST' || firstAnswer) return response
        // The server has written the activity and answered; the SDK never sees that answer.
        firstAnswer = await response.json()
        return answer()
      })
      const retries: RetryEvent[] = []
      const client = new HusbandryClient({ baseUrl: env.baseUrl, apiKey: key.token, fetch, retry: { baseDelayMs: 10 }, onRetry: (e) => retries.push(e) })
      const activity = await client.activities.create({ animal_id: animal.id, type: 'weight', details: { grams: 980 } })

      expect(log.map((e) => [e.method, e.path, e.status])).toEqual([['POST', '/api/v1/activities', 201], ['POST', '/api/v1/activities', 201]])
      const [sent, resent] = log as [Exchange, Exchange]
      expect(sent.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/)
      expect(resent.idempotencyKey).toBe(sent.idempotencyKey)
      expect(resent.body).toBe(sent.body!)
      expect(sent.headers?.get('idempotent-replayed')).toBeNull()
      expect(resent.headers?.get('idempotent-replayed')).toBe('true')
      expect(retries).toHaveLength(1)
      expect(retries[0]).toMatchObject({ operationId: 'createActivity', attempt: 1, idempotencyKey: sent.idempotencyKey })
      // The replay is the answer that was lost, and there is one activity.
      expect(activity).toEqual(firstAnswer!)
      expect(await setup.activities.list({ animal_id: animal.id }).toArray()).toEqual([activity])
    })
  }

  test('a write without an Idempotency-Key is not sent again after a lost answer: the error is the caller\'s', async () => {
    const key = await env.account({ scopes: SCOPES })
    const { log, fetch } = recording(() => { throw new TypeError('fetch failed: the connection was reset') })
    const client = new HusbandryClient({ baseUrl: env.baseUrl, apiKey: key.token, fetch, retry: { baseDelayMs: 10 } })
    await expect(client.animals.create({ name: 'Once', species_id: 'python-regius' })).rejects.toThrow('connection was reset')
    expect(log).toHaveLength(1)
    // It was written: sending it again would have made a second animal.
    const animals = await new HusbandryClient({ baseUrl: env.baseUrl, apiKey: key.token }).animals.list().toArray()
    expect(animals.map((a) => a.name)).toEqual(['Once'])
  })
})

describe('rate limits', () => {
  // A key may make one request every 2 s here, so a second one at once is a 429 with Retry-After.
  let limited: TestEnv
  beforeAll(async () => { limited = await createTestEnv({ testRoutes: false, rateLimitPerMinute: 1, rateLimitWindowSeconds: 2 }) })
  afterAll(async () => { await limited.close() })

  test('a 429 is retried after waiting at least Retry-After, and then succeeds', async () => {
    const key = await limited.account({ scopes: ['animals:read'] })
    expect((await limited.request('GET', '/api/v1/me', { token: key.token })).status).toBe(200)
    const { log, fetch } = recording()
    const retries: RetryEvent[] = []
    const client = new HusbandryClient({ baseUrl: limited.baseUrl, apiKey: key.token, fetch, onRetry: (e) => retries.push(e) })
    const me = await client.me()
    expect(me.key.id).toBe(key.keyId)
    expect(log.map((e) => e.status)).toEqual([429, 200])
    const [refused, accepted] = log as [Exchange, Exchange]
    const retryAfter = Number(refused.headers!.get('retry-after'))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(refused.headers!.get('ratelimit')).toBe(`"default";r=0;t=${retryAfter}`)
    expect(retries).toEqual([expect.objectContaining({ operationId: 'getMe', attempt: 1, status: 429 })])
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(retryAfter * 1000)
    // Waited at least what the service asked (less 1 ms: timers and performance.now() round differently).
    expect(accepted.sentAt - refused.receivedAt!).toBeGreaterThanOrEqual(retryAfter * 1000 - 1)
    expect(client.rateLimit).toMatchObject({ policy: 'default', limit: 1, windowSeconds: 2, remaining: 0 })
  })

  test('a Retry-After longer than maxDelayMs is not waited out: the 429 is thrown at once', async () => {
    const key = await limited.account({ scopes: ['animals:read'] })
    expect((await limited.request('GET', '/api/v1/me', { token: key.token })).status).toBe(200)
    const { log, fetch } = recording()
    const client = new HusbandryClient({ baseUrl: limited.baseUrl, apiKey: key.token, fetch, retry: { maxDelayMs: 100 } })
    const error = await client.me().catch((e: unknown) => e)
    if (!(error instanceof ProblemError)) throw new Error(`expected a ProblemError, got ${String(error)}`)
    expect(error).toMatchObject({ status: 429, code: 'rate_limited' })
    expect(Number(error.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(log).toHaveLength(1)
  })
})

describe('against a stand-in service', () => {
  /** A service on loopback answering the n-th request (from 1) with `answer(n)`; records when each arrived. */
  function standIn(answer: (n: number, request: Request) => Response) {
    const arrivals: { at: number; idempotencyKey: string | null }[] = []
    const server = Bun.serve({
      port: 0, hostname: '127.0.0.1',
      fetch(request) {
        arrivals.push({ at: performance.now(), idempotencyKey: request.headers.get('idempotency-key') })
        return answer(arrivals.length, request)
      },
    })
    servers.push(server)
    return { baseUrl: `http://127.0.0.1:${server.port}`, arrivals }
  }
  const problemResponse = (status: number, code: string, headers: Record<string, string> = {}) => Response.json(
    { type: `https://example.test/errors/${code}`, title: code, status, detail: `a ${code}`, code, request_id: 'req_1', errors: [] },
    { status, headers: { 'content-type': 'application/problem+json', ...headers } },
  )
  const me = { account: { id: 'acc_1' } }

  test('a 429 without Retry-After waits for the reset its RateLimit header gives', async () => {
    const service = standIn((n) => n === 1
      ? problemResponse(429, 'rate_limited', { ratelimit: '"default";r=0;t=1', 'ratelimit-policy': '"default";q=10;w=60' })
      : Response.json(me))
    const client = new HusbandryClient({ baseUrl: service.baseUrl, apiKey: 'k' })
    expect(await client.me()).toEqual(me as never)
    expect(service.arrivals).toHaveLength(2)
    expect(service.arrivals[1]!.at - service.arrivals[0]!.at).toBeGreaterThanOrEqual(1000 - 1)
  })

  test('attempts are bounded: a service that stays unavailable is tried maxAttempts times, then its 503 is thrown', async () => {
    const service = standIn(() => problemResponse(503, 'service_unavailable', { 'retry-after': '0' }))
    const retries: RetryEvent[] = []
    const client = new HusbandryClient({ baseUrl: service.baseUrl, apiKey: 'k', retry: { maxAttempts: 3 }, onRetry: (e) => retries.push(e) })
    const error = await client.activities.create({ animal_id: 'ani_1', type: 'note' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ProblemError)
    expect(error).toMatchObject({ status: 503, code: 'service_unavailable' })
    expect(service.arrivals).toHaveLength(3)
    expect(retries.map((r) => r.attempt)).toEqual([1, 2])
    // One logical call: every attempt carried the same key.
    expect(new Set(service.arrivals.map((a) => a.idempotencyKey)).size).toBe(1)
  })

  test('409 idempotency_key_in_use (the first attempt still running) is asked again with the same key', async () => {
    const activity = { id: 'act_1', type: 'note' }
    const service = standIn((n) => n === 1 ? problemResponse(409, 'idempotency_key_in_use') : Response.json(activity, { status: 201 }))
    const client = new HusbandryClient({ baseUrl: service.baseUrl, apiKey: 'k', retry: { baseDelayMs: 10 } })
    expect(await client.activities.create({ animal_id: 'ani_1', type: 'note' }, { idempotencyKey: 'queued-42' })).toEqual(activity as never)
    expect(service.arrivals.map((a) => a.idempotencyKey)).toEqual(['queued-42', 'queued-42'])
  })

  test('an answer that is not a problem (a proxy\'s HTML) is still thrown as a ProblemError', async () => {
    const service = standIn(() => new Response('<h1>Bad Gateway</h1>', { status: 502, statusText: 'Bad Gateway', headers: { 'content-type': 'text/html' } }))
    const client = new HusbandryClient({ baseUrl: service.baseUrl, apiKey: 'k', retry: { maxAttempts: 1 } })
    const error = await client.me().catch((e: unknown) => e)
    if (!(error instanceof ProblemError)) throw new Error(`expected a ProblemError, got ${String(error)}`)
    expect(error.problem).toEqual({ type: 'about:blank', title: 'Bad Gateway', status: 502, detail: '<h1>Bad Gateway</h1>', code: 'unexpected_response', request_id: '', errors: [] })
  })
})

describe('webhooks', () => {
  test('a delivery signed by the service verifies; a tampered body or another secret does not', async () => {
    const key = await env.account({ scopes: SCOPES })
    const client = new HusbandryClient({ baseUrl: env.baseUrl, apiKey: key.token })
    let received!: (delivery: { body: string; headers: Headers }) => void
    const delivery = new Promise<{ body: string; headers: Headers }>((resolve) => { received = resolve })
    const receiver = Bun.serve({
      port: 0, hostname: '127.0.0.1',
      async fetch(request) {
        received({ body: await request.text(), headers: new Headers(request.headers) })
        return new Response(null, { status: 204 })
      },
    })
    servers.push(receiver)
    const endpoint = await client.webhooks.endpoints.create({ url: `http://127.0.0.1:${receiver.port}/hook`, enabled_events: ['activity.created'] })
    const other = await client.webhooks.endpoints.create({ url: 'http://127.0.0.1:9/unused', enabled_events: ['animal.deleted'] })
    const animal = await client.animals.create({ name: 'Hooked', species_id: 'python-regius' })
    const activity = await client.activities.create({ animal_id: animal.id, type: 'note', notes: 'signed' })

    const { body, headers } = await delivery
    const event = verifyWebhook(endpoint.secret, body, headers)
    expect(event).toEqual(JSON.parse(body))
    expect(event).toMatchObject({ type: 'activity.created', data: { object: { id: activity.id, notes: 'signed' } } })
    expect(headers.get('webhook-id')).toBe(event.id)
    // The events API gives the same event, and plain header objects (any case) verify too.
    expect(await client.events.get(event.id)).toEqual(event)
    const plain = { 'Webhook-Id': headers.get('webhook-id')!, 'Webhook-Timestamp': headers.get('webhook-timestamp')!, 'Webhook-Signature': headers.get('webhook-signature')! }
    expect(verifyWebhook(endpoint.secret, body, plain)).toEqual(event)

    expect(() => verifyWebhook(endpoint.secret, body.replace('"signed"', '"forged"'), headers)).toThrow(WebhookVerificationError)
    expect(() => verifyWebhook(endpoint.secret, `${body} `, headers)).toThrow(WebhookVerificationError)
    expect(() => verifyWebhook(other.secret, body, headers)).toThrow(WebhookVerificationError)
  })
})

describe('errors', () => {
  test('every refusal is a ProblemError with the RFC 9457 body, typed as the Problem schema', async () => {
    const key = await env.account({ scopes: ['animals:read', 'animals:write'] })
    const client = new HusbandryClient({ baseUrl: env.baseUrl, apiKey: key.token })
    const refusal = (call: Promise<unknown>) => call.then(
      () => { throw new Error('expected a refusal') },
      (error: unknown) => {
        if (!(error instanceof ProblemError)) throw error
        assertType<Equal<typeof error.problem, Problem>>()
        return error
      },
    )

    const animal = await client.animals.create({ name: 'Gone', species_id: 'python-regius' })
    await client.animals.delete(animal.id)
    const notFound = await refusal(client.animals.get(animal.id))
    expect(notFound).toMatchObject({ status: 404, code: 'not_found', type: `${env.baseUrl}/api/v1/errors/not_found`, errors: [] })
    expect(notFound.title).toBeString()
    expect(notFound.detail).toBeString()
    expect(notFound.requestId).toBe(notFound.headers.get('x-request-id')!)
    // A problem's type names its code; the SDK reads what it means.
    expect(await client.errorTypes.get('not_found')).toMatchObject({ code: 'not_found', status: 404, title: notFound.title })

    const forbidden = await refusal(client.webhooks.endpoints.list().toArray())
    expect(forbidden).toMatchObject({ status: 403, code: 'insufficient_scope' })
    expect(forbidden.problem.required_scopes).toEqual(['webhooks:read'])

    // ETag in, If-Match out: a stale one is a 412.
    const fresh = await client.animals.create({ name: 'Versioned', species_id: 'python-regius' })
    const { response } = await client.request('getAnimal', { path: { id: fresh.id } })
    const etag = response.headers.get('etag')!
    expect((await client.animals.update(fresh.id, { notes: 'one' }, { ifMatch: etag })).notes).toBe('one')
    expect(await refusal(client.animals.update(fresh.id, { notes: 'two' }, { ifMatch: etag }))).toMatchObject({ status: 412, code: 'precondition_failed' })

    const anonymous = await refusal(new HusbandryClient({ baseUrl: env.baseUrl }).me())
    expect(anonymous).toMatchObject({ status: 401, code: 'authentication_required' })
  })
})
