// op({ etag, idempotent }) wires behaviour (issue 11): the one afterHandle hook sends what a route declares, and a
// route that declares a flag without delivering it (or delivers one it does not declare) answers 500.
import { describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import type { Deps } from '../../src/deps.ts'
import { deliverDeclaredHeaders, versioned } from '../../src/http/declared-response.ts'
import { writeOnce } from '../../src/http/idempotency.ts'
import { op, ROUTE_POLICY, type OperationOptions, type RoutePolicy } from '../../src/http/operation.ts'
import { requestState } from '../../src/http/request-state.ts'

const record = { id: 'rec_1', version: 7, secret: 'not shown' }
const present = (row: typeof record) => ({ id: row.id })

/** An app whose single route has `flags`; the route table's job (knowing the request's route) is done inline. */
function appWith(flags: Partial<Omit<OperationOptions, 'operationId'>>, handler: (context: any) => unknown) {
  const detail = op({ operationId: 'testRoute', summary: 'test route', tags: ['Test'], auth: 'public', ...flags })
  const policy = detail[ROUTE_POLICY] as RoutePolicy
  return new Elysia()
    .onRequest(({ request }) => { requestState(request).route = { method: 'POST', path: '/thing', policy, integerQuery: [] } })
    .onAfterHandle(deliverDeclaredHeaders)
    .onError(({ error }) => new Response(String((error as Error).message), { status: 500 }))
    .post('/thing', handler as any, { detail })
}
const call = (app: ReturnType<typeof appWith>) => app.handle(new Request('http://localhost/thing', { method: 'POST' }))

describe('op({ etag })', () => {
  test('a declared etag is sent from the versioned record, and the version stays out of the body', async () => {
    const response = await call(appWith({ etag: true }, () => versioned(record, present)))
    expect(response.status).toBe(200)
    expect(response.headers.get('etag')).toBe('"v7"')
    expect(await response.json()).toEqual({ id: 'rec_1' })
  })

  test('declaring etag and returning a plain record is a 500 naming the route', async () => {
    const response = await call(appWith({ etag: true }, () => present(record)))
    expect(response.status).toBe(500)
    expect(await response.text()).toContain('POST /thing: declares etag')
  })

  test('a versioned record from a route that does not declare etag is a 500', async () => {
    const response = await call(appWith({}, () => versioned(record, present)))
    expect(response.status).toBe(500)
    expect(response.headers.get('etag')).toBeNull()
  })

  test('a 204 of an etag route (a delete) carries no ETag and needs none', async () => {
    const response = await call(appWith({ etag: true }, ({ set }: any) => { set.status = 204 }))
    expect(response.status).toBe(204)
    expect(response.headers.get('etag')).toBeNull()
  })
})

describe('op({ idempotent })', () => {
  test('declaring idempotent and answering without writeOnce is a 500', async () => {
    const response = await call(appWith({ idempotent: true }, () => present(record)))
    expect(response.status).toBe(500)
    expect(await response.text()).toContain('declares idempotent')
  })

  test('writeOnce on a route that does not declare idempotent refuses before writing anything', async () => {
    let wrote = false
    const noDatabase = {} as Deps
    const response = await call(appWith({}, (context: any) => writeOnce(noDatabase, { ...context, headers: {} }, async () => { wrote = true; return record }, present)))
    expect(response.status).toBe(500)
    expect(await response.text()).toContain('does not declare idempotent')
    expect(wrote).toBe(false)
  })
})
