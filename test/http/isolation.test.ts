import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { revokeKey } from '../../src/auth/keys.ts'
import { ALL_SCOPES } from '../../src/auth/scopes.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv({ webhookAllowPrivate: true }) })
afterAll(async () => { await env.close() })

describe('cross-account isolation', () => {
  test('every key sees only its own account and key on /me', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 2, max: 5 }), async (n) => {
      const accounts = await Promise.all(Array.from({ length: n }, () => env.account({ scopes: ['animals:read'] })))
      for (const a of accounts) {
        const me = await (await env.request('GET', '/api/v1/me', { token: a.token })).json()
        expect(me.account.id).toBe(a.accountId)
        expect(me.key.id).toBe(a.keyId)
        const others = accounts.filter((o) => o !== a)
        const text = JSON.stringify(me)
        for (const o of others) { expect(text).not.toContain(o.accountId); expect(text).not.toContain(o.keyId) }
      }
    }), { numRuns: 5 })
  })

  test("revoking one account's key leaves another account's keys working", async () => {
    const a = await env.account()
    const b = await env.account()
    const revoked = await revokeKey(env.deps.database.db, b.keyId)
    await env.deps.authenticator.invalidateKey(revoked!.tokenHash)
    expect((await env.request('GET', '/api/v1/me', { token: a.token })).status).toBe(200)
    await problem(await env.request('GET', '/api/v1/me', { token: b.token }), 401, 'invalid_token')
  })

  test("one account's cursor is refused for another account", async () => {
    const a = await env.account()
    const b = await env.account()
    const page = await (await env.request('GET', '/api/v1/species?limit=5', { token: a.token })).json()
    expect(page.has_more).toBe(true)
    await problem(await env.request('GET', `/api/v1/species?limit=5&cursor=${encodeURIComponent(page.next_cursor)}`, { token: b.token }), 400, 'invalid_cursor')
  })

  test("every path that takes an id answers 404 to another account, and the owner's record is unchanged", async () => {
    const owner = await env.account({ scopes: ALL_SCOPES })
    const stranger = await env.account({ scopes: ALL_SCOPES })
    const post = async (path: string, body: unknown, token = owner.token) => (await env.request('POST', path, { token, body })).json()
    const alertRule = async () => {
      const device = await post('/api/v1/sensors/devices', { name: 'Mine', channels: [{ key: 't1', metric: 'temperature' }] })
      const rule = await post('/api/v1/environment/alert-rules', { device_id: device.id, channel: 't1', metric: 'temperature', min: 100 })
      return { device, rule }
    }
    const alert = async () => {
      const { device } = await alertRule()
      expect((await env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings: [{ channel: 't1', value: 20 }] } })).status).toBe(202)
      await env.deps.alerts.flush()
      return (await (await env.request('GET', `/api/v1/environment/alerts?device_id=${device.id}`, { token: owner.token })).json()).data[0].id
    }
    const webhookEndpoint = async () => (await (await env.request('POST', '/api/v1/webhooks/endpoints', { token: owner.token, body: { url: 'http://127.0.0.1:9/x', enabled_events: ['*'] } })).json()).id
    // How to make a record for each path with an {id}; a new route with an id must add its line here.
    const makers: Record<string, () => Promise<string>> = {
      '/api/v1/animals/{id}': async () => (await (await env.request('POST', '/api/v1/animals', { token: owner.token, body: { name: 'Mine', species_id: 'python-regius' } })).json()).id,
      '/api/v1/sensors/devices/{id}': async () => (await (await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Mine' } })).json()).id,
      '/api/v1/webhooks/endpoints/{id}': webhookEndpoint,
      '/api/v1/webhooks/endpoints/{id}/test': webhookEndpoint,
      '/api/v1/webhooks/endpoints/{id}/attempts': webhookEndpoint,
      '/api/v1/webhooks/endpoints/{id}/recover': webhookEndpoint,
      '/api/v1/webhooks/endpoints/{id}/resend': webhookEndpoint,
      '/api/v1/events/{id}': async () => {
        await env.request('POST', '/api/v1/animals', { token: owner.token, body: { name: 'Evented', species_id: 'python-regius' } })
        return (await (await env.request('GET', '/api/v1/events?limit=1', { token: owner.token })).json()).data[0].id
      },
      '/api/v1/environment/alert-rules/{id}': async () => (await alertRule()).rule.id,
      '/api/v1/environment/alerts/{id}': alert,
    }
    const doc = await (await env.request('GET', '/api/v1/openapi.json')).json()
    const idPaths = Object.keys(doc.paths).filter((path) => path.includes('{id}'))
    expect(idPaths.sort()).toEqual(Object.keys(makers).sort())
    for (const path of idPaths) {
      const id = await makers[path]!()
      const url = path.replace('{id}', id)
      // The record itself is read at its own path (an action path such as …/test has no GET).
      const recordUrl = url.replace(/\/(test|attempts|recover|resend)$/, '')
      const before = await (await env.request('GET', recordUrl, { token: owner.token })).text()
      for (const method of Object.keys(doc.paths[path]).map((m) => m.toUpperCase())) {
        // A body the route accepts, so the refusal is about whose record it is, not about the body.
        const body = method === 'PATCH' ? (path.startsWith('/api/v1/webhooks') ? { description: 'stolen' } : { name: 'stolen' })
          : path.endsWith('/recover') ? { since: '2026-01-01T00:00:00Z' } : path.endsWith('/resend') ? { event_id: 'evt_01jd8x3m5v6w7y8z9a0b1c2d3e' } : undefined
        const res = await env.request(method, url, { token: stranger.token, body })
        const refused = await problem(res, 404, 'not_found')
        expect(JSON.stringify(refused)).not.toContain(owner.accountId)
      }
      expect(await (await env.request('GET', recordUrl, { token: owner.token })).text()).toBe(before)
    }
  })
})
