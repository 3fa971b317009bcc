import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { revokeKey } from '../src/auth/keys.ts'
import { createTestEnv, problem, type TestEnv } from './helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
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
})
