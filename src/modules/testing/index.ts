// Routes that exist only with TEST_ROUTES=1, so tests can exercise the shared machinery (deprecation, body
// checks, scopes, 500s, graceful shutdown) end to end before every real route that uses it exists.
import { JsonInteger } from '../../http/schemas.ts'
import { Elysia, t } from 'elysia'
import { API_PREFIX } from '../../http/pipeline.ts'
import { op } from '../../http/operation.ts'

/** GET /_test/slow requests this process is answering. */
let slowInFlight = 0

export function testingModule() {
  return new Elysia({ name: 'testing', prefix: `${API_PREFIX}/_test` })
    .get('/deprecated', () => ({ ok: true }), {
      response: { 200: t.Object({ ok: t.Boolean() }) },
      detail: op({
        operationId: 'testDeprecatedRoute',
        summary: 'A deprecated route (tests only)', tags: ['Testing'],
        deprecation: { since: new Date('2026-10-01T00:00:00Z'), sunset: new Date('2027-01-15T00:00:00Z'), link: 'https://docs.husbandry.example/changelog#test' },
      }),
    })
    .post('/echo', ({ body }) => body, {
      body: t.Object({
        name: t.String({ minLength: 1, maxLength: 100 }),
        count: t.Optional(t.Number({ minimum: 0 })),
        tags: t.Optional(t.Array(t.String({ minLength: 1 }), { maxItems: 5 })),
      }, { additionalProperties: false }),
      response: { 200: t.Object({ name: t.String(), count: t.Optional(t.Number()), tags: t.Optional(t.Array(t.String())) }) },
      detail: op({ operationId: 'testEcho', summary: 'Echoes a validated body (tests only)', tags: ['Testing'], scopes: ['animals:write'] }),
    })
    .get('/boom', () => {
      throw new Error('relation "secret_table" does not exist at /srv/app/db.ts:42')
    }, {
      response: { 200: t.Object({ ok: t.Boolean() }) },
      detail: op({ operationId: 'testFailure', summary: 'Always fails (tests only)', tags: ['Testing'] }),
    })
    .get('/slow', async ({ query }) => {
      slowInFlight++
      try {
        await Bun.sleep(query.ms)
      } finally {
        slowInFlight--
      }
      return { pid: process.pid, slept_ms: query.ms }
    }, {
      query: t.Object({ ms: t.Integer({ minimum: 0, maximum: 10_000 }) }),
      response: { 200: t.Object({ pid: JsonInteger(), slept_ms: JsonInteger() }) },
      detail: op({ operationId: 'testSlow', summary: 'Answers after a delay, with the serving pid (tests only)', tags: ['Testing'], auth: 'public' }),
    })
    // So a test can act once a slow request is being served, instead of after a guessed delay.
    .get('/slow/in-flight', () => ({ in_flight: slowInFlight }), {
      response: { 200: t.Object({ in_flight: JsonInteger() }) },
      detail: op({ operationId: 'testSlowInFlight', summary: 'Slow requests this process is serving (tests only)', tags: ['Testing'], auth: 'public' }),
    })
}
