import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { updateAccount } from '../../src/accounts.ts'
import { Authenticator } from '../../src/auth/authenticator.ts'
import { createKey, findKeyById, maskedToken, revokeKey } from '../../src/auth/keys.ts'
import { generateToken } from '../../src/tokens.ts'
import { createTestEnv, problem, waitFor, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env.close() })

describe('authentication (401)', () => {
  test('no token: authentication_required with a Bearer challenge', async () => {
    const res = await env.request('GET', '/api/v1/me')
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="api"')
    await problem(res, 401, 'authentication_required')
  })

  test('malformed, bad checksum, unknown, revoked and expired tokens: invalid_token', async () => {
    const { token, keyId } = await env.account()
    const badChecksum = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')
    const unknown = generateToken('personal') // well-formed, checksum right, never issued
    for (const t of ['nonsense', 'hrs_pat_short', badChecksum, unknown]) {
      const res = await env.request('GET', '/api/v1/me', { token: t })
      expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"')
      await problem(res, 401, 'invalid_token')
    }
    expect((await env.request('GET', '/api/v1/me', { token })).status).toBe(200)
    const revoked = await revokeKey(env.deps.database.db, keyId)
    await env.deps.authenticator.invalidateKey(revoked!.tokenHash)
    await problem(await env.request('GET', '/api/v1/me', { token }), 401, 'invalid_token')

    const expired = await env.account({ expiresAt: new Date(Date.now() - 1_000) })
    await problem(await env.request('GET', '/api/v1/me', { token: expired.token }), 401, 'invalid_token')
  })

  test('a cached key is refused from the moment it expires', async () => {
    let now = Date.now()
    const authenticator = new Authenticator(env.deps.database.db, env.deps.shared, 60_000, () => now)
    const expiresAt = now + 1_500
    const { token, keyId } = await env.account({ expiresAt: new Date(expiresAt) })
    expect((await authenticator.verify(token))?.keyId).toBe(keyId)
    // Revoked in the database behind the cache's back: only the cached copy can still answer for the key now.
    await revokeKey(env.deps.database.db, keyId)
    now = expiresAt - 1
    expect((await authenticator.verify(token))?.keyId).toBe(keyId)
    now = expiresAt
    expect(await authenticator.verify(token)).toBeUndefined()
  })

  test('X-API-Key works; both headers with different tokens is 400; a non-Bearer scheme is 401', async () => {
    const a = await env.account()
    const b = await env.account()
    expect((await env.request('GET', '/api/v1/me', { headers: { 'x-api-key': a.token } })).status).toBe(200)
    expect((await env.request('GET', '/api/v1/me', { token: a.token, headers: { 'x-api-key': a.token } })).status).toBe(200)
    await problem(await env.request('GET', '/api/v1/me', { token: a.token, headers: { 'x-api-key': b.token } }), 400, 'invalid_parameter')
    await problem(await env.request('GET', '/api/v1/me', { headers: { authorization: `Basic ${btoa('u:p')}` } }), 401, 'invalid_token')
  })
})

describe('key bookkeeping', () => {
  test('a used key gets last_used_at, written off the request path', async () => {
    const { token, keyId } = await env.account()
    expect((await findKeyById(env.deps.database.db, keyId))!.lastUsedAt).toBeNull()
    expect((await env.request('GET', '/api/v1/me', { token })).status).toBe(200)
    await waitFor(async () => (await findKeyById(env.deps.database.db, keyId))!.lastUsedAt !== null, 2_000)
  })

  test('the store keeps only a hash of the token, and listings show prefix and last four', async () => {
    const { token, keyId } = await env.account()
    const row = (await findKeyById(env.deps.database.db, keyId))!
    expect(JSON.stringify(row)).not.toContain(token.slice(8, -6))
    expect(maskedToken(row)).toBe(`hrs_pat_…${token.slice(-4)}`)
  })
})

describe('authorization (403)', () => {
  test('plans below Breeder are refused; Breeder and Professional pass', async () => {
    for (const plan of ['free', 'keeper'] as const) {
      const { token } = await env.account({ plan })
      await problem(await env.request('GET', '/api/v1/me', { token }), 403, 'plan_not_eligible')
    }
    for (const plan of ['breeder', 'professional'] as const) {
      const { token } = await env.account({ plan })
      expect((await env.request('GET', '/api/v1/me', { token })).status).toBe(200)
    }
  })

  test('the live-test allowlist opens access only while the platform is limited', async () => {
    const listed = await env.account({ plan: 'free', allowlisted: true })
    const unlisted = await env.account({ plan: 'free' })
    await problem(await env.request('GET', '/api/v1/me', { token: listed.token }), 403, 'plan_not_eligible')
    await env.deps.platform.set('limited')
    try {
      expect((await env.request('GET', '/api/v1/me', { token: listed.token })).status).toBe(200)
      await problem(await env.request('GET', '/api/v1/me', { token: unlisted.token }), 403, 'plan_not_eligible')
      expect((await (await env.request('GET', '/api/v1/status')).json()).status).toBe('limited')
    } finally {
      await env.deps.platform.set('operational')
    }
  })

  test('a plan change reaches cached keys through invalidation', async () => {
    const { token, accountId } = await env.account()
    expect((await env.request('GET', '/api/v1/me', { token })).status).toBe(200)
    await updateAccount(env.deps.database.db, accountId, { plan: 'free' })
    await env.deps.authenticator.invalidateAccount(accountId)
    await problem(await env.request('GET', '/api/v1/me', { token }), 403, 'plan_not_eligible')
  })

  test('a missing scope is 403 insufficient_scope naming the scope', async () => {
    const { token } = await env.account({ scopes: ['animals:read'] })
    const res = await env.request('POST', '/api/v1/_test/echo', { token, body: { name: 'x' } })
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="api", error="insufficient_scope", scope="animals:write"')
    const body = await problem(res, 403, 'insufficient_scope')
    expect(body.required_scopes).toEqual(['animals:write'])
    const ok = await env.account({ scopes: ['animals:write'] })
    expect((await env.request('POST', '/api/v1/_test/echo', { token: ok.token, body: { name: 'x' } })).status).toBe(200)
  })

  test('a device key is refused on personal routes with device_key_not_allowed', async () => {
    const { accountId } = await env.account()
    const { token } = await createKey(env.deps.database.db, { accountId, kind: 'device', name: 'sensor', deviceId: 'dev_01jd0000000000000000000000' })
    await problem(await env.request('GET', '/api/v1/me', { token }), 403, 'device_key_not_allowed')
    await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: { name: 'x' } }), 403, 'device_key_not_allowed')
  })
})

describe('order of checks: 401 → 405 → 403 (plan, then scope) → 400/415/413/422', () => {
  test('401 before 405', async () => {
    await problem(await env.request('DELETE', '/api/v1/me'), 401, 'authentication_required')
  })
  test('405 before 403', async () => {
    const { token } = await env.account({ plan: 'free' })
    await problem(await env.request('DELETE', '/api/v1/me', { token }), 405, 'method_not_allowed')
  })
  test('plan before scope', async () => {
    const { token } = await env.account({ plan: 'free', scopes: [] })
    await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: { name: 'x' } }), 403, 'plan_not_eligible')
  })
  test('403 before 400/415/413/422', async () => {
    const { token } = await env.account({ scopes: ['animals:read'] })
    await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: '{not json', headers: { 'content-type': 'application/json' } }), 403, 'insufficient_scope')
    await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: 'name=x', headers: { 'content-type': 'text/plain' } }), 403, 'insufficient_scope')
    await problem(await env.request('POST', '/api/v1/_test/echo', { token, body: { nope: 1 } }), 403, 'insufficient_scope')
  })
})
