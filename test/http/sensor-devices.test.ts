import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { environments, outboxEvents, pairingClaims } from '../../db/schema/index.ts'
import { newId } from '../../src/ids.ts'
import { USER_CODE_ALPHABET, claimHash, newUserCode, normalizeUserCode } from '../../src/modules/sensors/pairing.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env.close() })

const SCOPES = ['sensors:read', 'sensors:write'] as const
type Key = Awaited<ReturnType<TestEnv['account']>>

async function register(key: Key, body: Record<string, unknown> = { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] }) {
  const res = await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body })
  if (res.status !== 201) throw new Error(`register: ${res.status} ${await res.text()}`)
  return res.json()
}
const poll = async (claimId: string) => (await env.request('GET', `/api/v1/sensors/claim/status?claim_id=${claimId}`)).json()
const startClaim = async (body?: Record<string, unknown>) => (await env.request('POST', '/api/v1/sensors/claim/start', { body })).json()
/** Moves a claim's last poll back, as if the device had waited its interval. */
const waitInterval = (claimId: string) => env.deps.database.db.update(pairingClaims).set({ last_polled_at: new Date(Date.now() - 6000) }).where(eq(pairingClaims.claim_hash, claimHash(claimId)))

describe('sensor devices', () => {
  test('registering returns the device with defaulted units and its key once; reads never show the key', async () => {
    const key = await env.account({ scopes: SCOPES })
    const device = await register(key, { name: 'Rack hub', model: 'TH-4', channels: [{ key: 't1', metric: 'temperature' }, { key: 'h1', metric: 'humidity', unit: '%RH' }, { key: 'x9' }] })
    expect(device.id).toMatch(/^dev_/)
    expect(device.key).toMatch(/^hrs_dev_[0-9A-Za-z]{36}$/)
    expect(device.channels).toEqual([
      { key: 't1', metric: 'temperature', unit: '°C', environment_id: null },
      { key: 'h1', metric: 'humidity', unit: '%RH', environment_id: null },
      { key: 'x9', metric: null, unit: null, environment_id: null },
    ])
    const read = await (await env.request('GET', `/api/v1/sensors/devices/${device.id}`, { token: key.token })).json()
    expect(read).not.toHaveProperty('key')
    const list = await (await env.request('GET', '/api/v1/sensors/devices', { token: key.token })).json()
    expect(list.data.map((d: { id: string }) => d.id)).toEqual([device.id])
    expect(JSON.stringify(list)).not.toContain(device.key)
  })

  test('channels are validated: unknown metric, foreign environment, duplicate keys, bad key shape', async () => {
    const key = await env.account({ scopes: SCOPES })
    const cases: [unknown[], string][] = [
      [[{ key: 't1', metric: 'wind' }], '/body/channels/0/metric'],
      [[{ key: 't1', environment_id: newId('environment') }], '/body/channels/0/environment_id'],
      [[{ key: 't1' }, { key: 't1' }], '/body/channels/1/key'],
      [[{ key: 't 1' }], '/body/channels/0/key'],
    ]
    for (const [channels, path] of cases) {
      const refused = await problem(await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { name: 'x', channels } }), 422, 'validation_failed')
      expect(refused.errors.map((e: { path: string }) => e.path)).toContain(path)
    }
    expect((await (await env.request('GET', '/api/v1/sensors/devices', { token: key.token })).json()).data).toEqual([])
  })

  test("channels map to the account's own environments, several in one device; another account's is refused", async () => {
    const key = await env.account({ scopes: SCOPES })
    const other = await env.account({ scopes: SCOPES })
    const environmentOf = async (accountId: string) => {
      const id = newId('environment')
      await env.deps.database.db.insert(environments).values({ id, account_id: accountId, name: 'Rack', kind: 'rack' })
      return id
    }
    const [rackA, rackB, foreign] = [await environmentOf(key.accountId), await environmentOf(key.accountId), await environmentOf(other.accountId)]
    const device = await register(key, { name: 'Two racks', channels: [{ key: 't1', metric: 'temperature', environment_id: rackA }, { key: 't2', metric: 'temperature', environment_id: rackB }] })
    expect(device.channels.map((c: { environment_id: string }) => c.environment_id)).toEqual([rackA, rackB])
    const refused = await problem(await env.request('POST', '/api/v1/sensors/devices', {
      token: key.token, body: { name: 'x', channels: [{ key: 't1', environment_id: rackA }, { key: 't2', environment_id: foreign }] },
    }), 422, 'validation_failed')
    expect(refused.errors.map((e: { path: string }) => e.path)).toEqual(['/body/channels/1/environment_id'])
  })

  test('PATCH merges, replaces channels whole, and honours If-Match; events record each change', async () => {
    const key = await env.account({ scopes: SCOPES })
    const device = await register(key)
    const res = await env.request('PATCH', `/api/v1/sensors/devices/${device.id}`, { token: key.token, body: { name: 'Renamed', channels: [{ key: 'h1', metric: 'humidity' }] }, headers: { 'if-match': '"v1"' } })
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ name: 'Renamed', channels: [{ key: 'h1', metric: 'humidity', unit: '%', environment_id: null }] })
    await problem(await env.request('PATCH', `/api/v1/sensors/devices/${device.id}`, { token: key.token, body: { name: 'Again' }, headers: { 'if-match': '"v1"' } }), 412, 'precondition_failed')
    const types = (await env.deps.database.db.select().from(outboxEvents).where(eq(outboxEvents.account_id, key.accountId)).orderBy(outboxEvents.id)).map((e) => e.type)
    expect(types).toEqual(['sensor_device.created', 'sensor_device.updated'])
  })

  test('a device key reads its own device only, and nothing else', async () => {
    const key = await env.account({ scopes: SCOPES })
    const mine = await register(key)
    const other = await register(key)
    expect((await env.request('GET', `/api/v1/sensors/devices/${mine.id}`, { token: mine.key })).status).toBe(200)
    await problem(await env.request('GET', `/api/v1/sensors/devices/${other.id}`, { token: mine.key }), 403, 'device_key_not_allowed')
    for (const [method, path] of [['GET', '/api/v1/sensors/devices'], ['PATCH', `/api/v1/sensors/devices/${mine.id}`], ['DELETE', `/api/v1/sensors/devices/${mine.id}`], ['GET', '/api/v1/animals'], ['GET', '/api/v1/me']] as const) {
      await problem(await env.request(method, path, { token: mine.key, body: method === 'PATCH' ? { name: 'x' } : undefined }), 403, 'device_key_not_allowed')
    }
  })

  test('deleting a device revokes its key at once and keeps it out of lists', async () => {
    const key = await env.account({ scopes: SCOPES })
    const device = await register(key)
    expect((await env.request('GET', `/api/v1/sensors/devices/${device.id}`, { token: device.key })).status).toBe(200)
    expect((await env.request('DELETE', `/api/v1/sensors/devices/${device.id}`, { token: key.token })).status).toBe(204)
    await problem(await env.request('GET', `/api/v1/sensors/devices/${device.id}`, { token: device.key }), 401, 'invalid_token')
    await problem(await env.request('GET', `/api/v1/sensors/devices/${device.id}`, { token: key.token }), 404, 'not_found')
    expect((await (await env.request('GET', '/api/v1/sensors/devices', { token: key.token })).json()).data).toEqual([])
  })

  test("another account's device is 404, and its environment cannot be mapped", async () => {
    const owner = await env.account({ scopes: SCOPES })
    const stranger = await env.account({ scopes: SCOPES })
    const device = await register(owner)
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      await problem(await env.request(method, `/api/v1/sensors/devices/${device.id}`, { token: stranger.token, body: method === 'PATCH' ? { name: 'x' } : undefined }), 404, 'not_found')
    }
  })
})

describe('headless pairing', () => {
  test('user codes use only unambiguous consonants, and typed variants are accepted', () => {
    for (let i = 0; i < 200; i++) {
      const code = newUserCode()
      expect(code).toMatch(new RegExp(`^[${USER_CODE_ALPHABET}]{4}-[${USER_CODE_ALPHABET}]{4}$`))
      expect(normalizeUserCode(code.toLowerCase().replace('-', ' '))).toBe(code)
    }
    for (const ambiguous of ['0', 'O', '1', 'I', 'L'.replace('L', 'A'), 'E', 'U', '5', 'S'.replace('S', 'Y')]) expect(USER_CODE_ALPHABET).not.toContain(ambiguous)
    expect(normalizeUserCode('BCDF-GHJ')).toBeUndefined()
    expect(normalizeUserCode('BCDF-GHJA')).toBeUndefined()
  })

  test('start → pending → slow_down → claimed with the key once → claimed without it', async () => {
    const key = await env.account({ scopes: SCOPES })
    const claim = await startClaim({ model: 'TH-1', hardware_id: 'AA:BB:CC' })
    expect(claim).toMatchObject({ verification_uri: `${env.baseUrl}/console/activate`, verification_uri_complete: `${env.baseUrl}/console/activate?user_code=${claim.user_code}`, expires_in: 600, interval: 5 })
    expect(claim.claim_id).toMatch(/^clm_/)
    expect(await poll(claim.claim_id)).toEqual({ status: 'pending' })
    expect(await poll(claim.claim_id)).toEqual({ status: 'slow_down' })
    const res = await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { claim_code: claim.user_code.toLowerCase(), channels: [{ key: 't1', metric: 'temperature' }] } })
    expect(res.status).toBe(201)
    const device = await res.json()
    expect(device).toMatchObject({ model: 'TH-1', hardware_id: 'AA:BB:CC', key: null })
    const first = await poll(claim.claim_id)
    expect(first).toEqual({ status: 'claimed', device_id: device.id, device_key: expect.stringMatching(/^hrs_dev_/) })
    expect(await poll(claim.claim_id)).toEqual({ status: 'claimed', device_id: device.id })
    // The handed-over key works as that device's key; the table holds neither it nor the claim id in plain text.
    expect((await env.request('GET', `/api/v1/sensors/devices/${device.id}`, { token: first.device_key })).status).toBe(200)
    const rows = await env.deps.database.db.select().from(pairingClaims).where(eq(pairingClaims.device_id, device.id))
    expect(rows.length).toBe(1)
    expect(rows[0]!.claim_hash).toBe(claimHash(claim.claim_id))
    expect(rows[0]!.key_issued_at).not.toBeNull()
    const dump = JSON.stringify(await env.deps.database.db.select().from(pairingClaims))
    expect(dump).not.toContain(claim.claim_id)
    expect(dump).not.toContain(first.device_key)
    const events = await env.deps.database.db.select().from(outboxEvents).where(eq(outboxEvents.account_id, key.accountId)).orderBy(outboxEvents.id)
    expect(events.map((e) => e.type)).toEqual(['sensor_device.created', 'sensor_device.paired'])
    // Events travel to webhooks: the paired one names the code the owner entered, never the device's secret.
    expect(JSON.stringify(events)).not.toContain(claim.claim_id)
    expect(JSON.stringify(events[1])).toContain(claim.user_code)
    // A code works once.
    await problem(await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { claim_code: claim.user_code } }), 422, 'validation_failed')
  })

  test('racing polls hand the key to exactly one of them', async () => {
    const key = await env.account({ scopes: SCOPES })
    const claim = await startClaim()
    await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { claim_code: claim.user_code } })
    const answers = await Promise.all(Array.from({ length: 10 }, () => poll(claim.claim_id)))
    expect(answers.filter((a) => a.device_key).length).toBe(1)
  })

  test('an expired claim reports expired and its code no longer pairs', async () => {
    const key = await env.account({ scopes: SCOPES })
    const claim = await startClaim()
    await env.deps.database.db.update(pairingClaims).set({ expires_at: new Date(Date.now() - 1000) }).where(eq(pairingClaims.claim_hash, claimHash(claim.claim_id)))
    await problem(await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { claim_code: claim.user_code } }), 422, 'validation_failed')
    await waitInterval(claim.claim_id)
    expect(await poll(claim.claim_id)).toEqual({ status: 'expired' })
    await problem(await env.request('GET', `/api/v1/sensors/claim/status?claim_id=${newId('claim')}`), 404, 'not_found')
    await problem(await env.request('GET', '/api/v1/sensors/claim/status?claim_id=nonsense'), 404, 'not_found')
  })

  test('guessing codes is rate limited per account', async () => {
    const key = await env.account({ scopes: SCOPES })
    const claim = await startClaim()
    for (let i = 0; i < 10; i++) {
      await problem(await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { claim_code: 'BCDF-GHJK' } }), 422, 'validation_failed')
    }
    const limited = await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { claim_code: claim.user_code } })
    await problem(limited, 429, 'rate_limited')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await poll(claim.claim_id)).toEqual({ status: 'pending' })
  })
})

describe('pairing claims per client address', () => {
  // A server of its own: its shared store counts only this test's claims from 127.0.0.1.
  let own: TestEnv
  beforeAll(async () => { own = await createTestEnv() })
  afterAll(async () => { await own.close() })

  test('the 11th claim in a minute is refused with 429 and Retry-After, and stores nothing', async () => {
    for (let i = 0; i < 10; i++) expect((await own.request('POST', '/api/v1/sensors/claim/start')).status).toBe(201)
    const stored = async () => (await own.deps.database.db.select({ hash: pairingClaims.claim_hash }).from(pairingClaims)).length
    const before = await stored()
    const limited = await own.request('POST', '/api/v1/sensors/claim/start')
    await problem(limited, 429, 'rate_limited')
    const retryAfter = Number(limited.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(await stored()).toBe(before)
  })
})
