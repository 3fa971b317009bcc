// The events API (issue 24): GET /events and /events/{id} give the events webhooks carry, byte for byte, with type
// and created filters and a cursor; an endpoint's attempts are listed; after a receiver's outage, recover queues
// every failed delivery since a moment again, and resend sends one event to one endpoint. Scopes and accounts
// as everywhere: another account's events and endpoints are 404s.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { createTestEnv, problem, waitFor, type TestEnv } from '../helpers.ts'

let env: TestEnv
const servers: ReturnType<typeof Bun.serve>[] = []
beforeAll(async () => {
  env = await createTestEnv({ webhookAllowPrivate: true, webhookRetrySchedule: [0.05], webhookPollMs: 20 })
  env.deps.dispatcher.start()
})
afterAll(async () => {
  await env.deps.dispatcher.stop()
  for (const s of servers) s.stop(true)
  await env.close()
})

const SCOPES = ['webhooks:read', 'webhooks:write', 'animals:write', 'animals:read'] as const
type Key = Awaited<ReturnType<TestEnv['account']>>

/** A receiver that answers `status()` (changeable), remembering every body. */
function receiver(status: () => number) {
  const received: { id: string; body: string; headers: Record<string, string> }[] = []
  const server = Bun.serve({
    port: 0, hostname: '127.0.0.1',
    async fetch(request) {
      const body = await request.text()
      received.push({ id: JSON.parse(body).id, body, headers: Object.fromEntries(request.headers) })
      return new Response(null, { status: status() })
    },
  })
  servers.push(server)
  return { url: `http://127.0.0.1:${server.port}/hook`, received }
}

const get = async (key: Key, path: string) => (await env.request('GET', path, { token: key.token })).json()
async function animal(key: Key, name: string) {
  return (await env.request('POST', '/api/v1/animals', { token: key.token, body: { name, species_id: 'python-regius' } })).json()
}

describe('events', () => {
  test('GET /events lists the account\'s events newest first, filtered by type and time, paged; GET /events/{id} is the signed body', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hook = receiver(() => 204)
    const endpoint = await (await env.request('POST', '/api/v1/webhooks/endpoints', { token: key.token, body: { url: hook.url, enabled_events: ['*'] } })).json()
    const started = new Date().toISOString()
    const created = [await animal(key, 'One'), await animal(key, 'Two'), await animal(key, 'Three')]
    await env.request('PATCH', `/api/v1/animals/${created[0].id}`, { token: key.token, body: { name: 'Uno' } })

    const all = await get(key, '/api/v1/events')
    expect(all.data.map((e: { type: string }) => e.type)).toEqual(['animal.updated', 'animal.created', 'animal.created', 'animal.created'])
    expect(all.data[3].data.object.name).toBe('One')
    expect(all.data[0].data.previous_attributes).toEqual({ name: 'One' })
    const createdOnly = await get(key, '/api/v1/events?type=animal.created&limit=2')
    expect(createdOnly.data.map((e: { data: { object: { name: string } } }) => e.data.object.name)).toEqual(['Three', 'Two'])
    const rest = await get(key, `/api/v1/events?type=animal.created&limit=2&cursor=${createdOnly.next_cursor}`)
    expect(rest.data.map((e: { data: { object: { name: string } } }) => e.data.object.name)).toEqual(['One'])
    expect(rest.has_more).toBe(false)
    expect((await get(key, `/api/v1/events?created_to=${started}`)).data).toEqual([])
    expect((await get(key, `/api/v1/events?created_from=${started}`)).data).toHaveLength(4)

    // The body a delivery carried, byte for byte, and its signature verifies.
    await waitFor(async () => hook.received.length >= 4, 10_000)
    const delivered = hook.received.find((r) => r.id === all.data[0].id)!
    const single = await env.request('GET', `/api/v1/events/${all.data[0].id}`, { token: key.token })
    expect(await single.text()).toBe(delivered.body)
    expect(endpoint.secret).toMatch(/^whsec_/)
    expect(new Webhook(endpoint.secret).verify(delivered.body, delivered.headers)).toMatchObject({ id: all.data[0].id })
  })

  test('another account\'s events, endpoints and attempts are 404s; reading needs webhooks:read, recovering webhooks:write', async () => {
    const mine = await env.account({ scopes: SCOPES })
    const theirs = await env.account({ scopes: SCOPES })
    await animal(theirs, 'Theirs')
    const [event] = (await get(theirs, '/api/v1/events')).data
    const endpoint = await (await env.request('POST', '/api/v1/webhooks/endpoints', { token: theirs.token, body: { url: receiver(() => 204).url, enabled_events: ['*'] } })).json()
    await problem(await env.request('GET', `/api/v1/events/${event.id}`, { token: mine.token }), 404, 'not_found')
    expect((await get(mine, '/api/v1/events')).data).toEqual([])
    await problem(await env.request('GET', `/api/v1/webhooks/endpoints/${endpoint.id}/attempts`, { token: mine.token }), 404, 'not_found')
    await problem(await env.request('POST', `/api/v1/webhooks/endpoints/${endpoint.id}/recover`, { token: mine.token, body: { since: '2026-01-01T00:00:00Z' } }), 404, 'not_found')
    await problem(await env.request('POST', `/api/v1/webhooks/endpoints/${endpoint.id}/resend`, { token: mine.token, body: { event_id: event.id } }), 404, 'not_found')
    const readOnly = await env.account({ scopes: ['webhooks:read'] })
    await problem(await env.request('POST', `/api/v1/webhooks/endpoints/${endpoint.id}/recover`, { token: readOnly.token, body: { since: '2026-01-01T00:00:00Z' } }), 403, 'insufficient_scope')
    const noScope = await env.account({ scopes: ['animals:read'] })
    await problem(await env.request('GET', '/api/v1/events', { token: noScope.token }), 403, 'insufficient_scope')
  })

  test('after a receiver\'s outage: attempts are listed, recover delivers every failed event since then, resend one event again', async () => {
    const key = await env.account({ scopes: SCOPES })
    let up = false
    const hook = receiver(() => (up ? 204 : 503))
    const endpoint = await (await env.request('POST', '/api/v1/webhooks/endpoints', { token: key.token, body: { url: hook.url, enabled_events: ['animal.created'] } })).json()
    const since = new Date(Date.now() - 1000).toISOString()
    for (const name of ['A', 'B', 'C']) await animal(key, name)
    // Two attempts (the first and one retry, 50 ms apart), then the delivery has failed and the service disables
    // the endpoint (CONTRACT §8); the other events wait, pending, for it to be enabled.
    await waitFor(async () => (await get(key, `/api/v1/webhooks/endpoints/${endpoint.id}`)).status === 'disabled', 10_000)
    const attempts = await get(key, `/api/v1/webhooks/endpoints/${endpoint.id}/attempts?limit=1`)
    expect(attempts.data[0]).toMatchObject({ event_type: 'animal.created', status_code: 503, duration_ms: expect.any(Number) })
    expect(attempts.has_more).toBe(true)
    const more = await get(key, `/api/v1/webhooks/endpoints/${endpoint.id}/attempts?cursor=${attempts.next_cursor}`)
    expect(more.data.length).toBeGreaterThanOrEqual(1)
    expect(more.data.every((a: { status_code: number }) => a.status_code === 503)).toBe(true)

    // The receiver is back: enable the endpoint, and recover what failed since the outage began.
    up = true
    const { deliveries } = await get(key, `/api/v1/webhooks/endpoints/${endpoint.id}`)
    expect(deliveries.failed).toBeGreaterThanOrEqual(1)
    await env.request('PATCH', `/api/v1/webhooks/endpoints/${endpoint.id}`, { token: key.token, body: { status: 'enabled' } })
    const recovered = await env.request('POST', `/api/v1/webhooks/endpoints/${endpoint.id}/recover`, { token: key.token, body: { since } })
    expect(recovered.status).toBe(202)
    expect(await recovered.json()).toEqual({ recovered: deliveries.failed })
    await waitFor(async () => (await get(key, `/api/v1/webhooks/endpoints/${endpoint.id}`)).deliveries.succeeded === 3, 10_000)
    const events = (await get(key, '/api/v1/events?type=animal.created')).data.map((e: { id: string }) => e.id)
    const succeededWith = new Set(hook.received.filter((r) => events.includes(r.id)).map((r) => r.id))
    expect(succeededWith.size).toBe(3)

    // Resend one event; an unknown event is a 422.
    const [first] = (await get(key, '/api/v1/events?type=animal.created')).data
    const before = hook.received.length
    expect((await env.request('POST', `/api/v1/webhooks/endpoints/${endpoint.id}/resend`, { token: key.token, body: { event_id: first.id } })).status).toBe(202)
    await waitFor(async () => hook.received.length === before + 1, 10_000)
    expect(hook.received.at(-1)!.id).toBe(first.id)
    await problem(await env.request('POST', `/api/v1/webhooks/endpoints/${endpoint.id}/resend`, { token: key.token, body: { event_id: 'evt_01jd0000000000000000000000' } }), 422, 'validation_failed')

    await env.request('PATCH', `/api/v1/webhooks/endpoints/${endpoint.id}`, { token: key.token, body: { status: 'disabled' } })
    await problem(await env.request('POST', `/api/v1/webhooks/endpoints/${endpoint.id}/recover`, { token: key.token, body: { since } }), 409, 'conflict')
  })
})
