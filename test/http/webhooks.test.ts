// Webhooks end to end: real receivers on loopback, every signature verified with the standardwebhooks library.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { Webhook } from 'standardwebhooks'
import { webhookDeliveries } from '../../db/schema/index.ts'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { Dispatcher } from '../../src/webhooks/dispatcher.ts'
import { isForbiddenAddress, urlProblem } from '../../src/webhooks/url-guard.ts'
import { createTestEnv, freshDatabase, problem, REAL_REDIS_URL, waitFor, type TestEnv } from '../helpers.ts'
import { runCli, startServer, tempDataDir } from '../process-helpers.ts'

let env: TestEnv
beforeAll(async () => {
  env = await createTestEnv({ webhookAllowPrivate: true, webhookRetrySchedule: [0.05, 0.05, 0.05], webhookPollMs: 20, webhookTimeoutMs: 2000 })
  env.deps.dispatcher.start()
})
afterAll(async () => { await env.close() })

/** A delivery as the receiver saw it; `at` is when it arrived (epoch ms). */
interface Received { headers: Record<string, string>; body: string; event: any; at: number }
const receivers: ReturnType<typeof Bun.serve>[] = []
afterEach(() => { for (const r of receivers.splice(0)) r.stop(true) })

/** A receiver on loopback that answers with `answer(n)` for its n-th request (default 204). */
function receiver(answer: (n: number) => number | Promise<number> = () => 204) {
  const received: Received[] = []
  const server = Bun.serve({
    port: 0, hostname: '127.0.0.1',
    async fetch(request) {
      const body = await request.text()
      received.push({ headers: Object.fromEntries(request.headers), body, event: JSON.parse(body), at: Date.now() })
      return new Response(null, { status: await answer(received.length) })
    },
  })
  receivers.push(server)
  return { url: `http://127.0.0.1:${server.port}/hook`, received }
}

const SCOPES = ['webhooks:read', 'webhooks:write', 'animals:write', 'activities:write', 'sensors:write'] as const
type Key = Awaited<ReturnType<TestEnv['account']>>
async function endpoint(key: Key, url: string, events: string[] = ['*']) {
  const res = await env.request('POST', '/api/v1/webhooks/endpoints', { token: key.token, body: { url, enabled_events: events } })
  if (res.status !== 201) throw new Error(`${res.status} ${await res.text()}`)
  return res.json()
}
const detail = async (key: Key, id: string) => (await env.request('GET', `/api/v1/webhooks/endpoints/${id}`, { token: key.token })).json()
/**
 * What `hook` received before a marker sent now (the endpoint's test event) arrived: so "nothing more came" is
 * checked against an event that did come after, not against a fixed sleep that cannot tell "not yet" from "never".
 */
async function before(key: Key, endpointId: string, hook: { received: Received[] }): Promise<Received[]> {
  const { event_id } = await (await env.request('POST', `/api/v1/webhooks/endpoints/${endpointId}/test`, { token: key.token })).json()
  await waitFor(async () => hook.received.some((r) => r.event.id === event_id), 10_000)
  return hook.received.slice(0, hook.received.findIndex((r) => r.event.id === event_id))
}
function verify(secret: string, r: Received) {
  return new Webhook(secret).verify(r.body, r.headers) as any
}

describe('webhook endpoints', () => {
  test('create returns the secret once; reads, lists and updates never show it', async () => {
    const key = await env.account({ scopes: SCOPES })
    const created = await endpoint(key, 'http://127.0.0.1:9/hook', ['animal.created', 'activity.created'])
    expect(created.secret).toMatch(/^whsec_/)
    expect(created).toMatchObject({ status: 'enabled', disabled_reason: null, enabled_events: ['animal.created', 'activity.created'] })
    const read = await detail(key, created.id)
    expect(read).not.toHaveProperty('secret')
    expect(read.deliveries).toEqual({ pending: 0, succeeded: 0, failed: 0 })
    const list = await (await env.request('GET', '/api/v1/webhooks/endpoints', { token: key.token })).json()
    expect(JSON.stringify(list)).not.toContain(created.secret)
    const later = new Date(Date.now() + 60_000).toISOString()
    expect((await (await env.request('GET', `/api/v1/webhooks/endpoints?updated_since=${later}`, { token: key.token })).json()).data).toEqual([])
    const patched = await (await env.request('PATCH', `/api/v1/webhooks/endpoints/${created.id}`, { token: key.token, body: { description: 'ops' } })).json()
    expect(patched).toMatchObject({ description: 'ops' })
    // Like GET: no secret field at all unless this PATCH rotated it.
    expect(patched).not.toHaveProperty('secret')
    const bad = await problem(await env.request('POST', '/api/v1/webhooks/endpoints', { token: key.token, body: { url: 'ftp://x', enabled_events: ['animal.eaten'] } }), 422, 'validation_failed')
    expect(bad.errors.map((e: { path: string }) => e.path).sort()).toEqual(['/body/enabled_events/0', '/body/url'])
    expect((await env.request('DELETE', `/api/v1/webhooks/endpoints/${created.id}`, { token: key.token })).status).toBe(204)
    await problem(await env.request('GET', `/api/v1/webhooks/endpoints/${created.id}`, { token: key.token }), 404, 'not_found')
  })

  test("another account's endpoint is 404 on every route", async () => {
    const owner = await env.account({ scopes: SCOPES })
    const stranger = await env.account({ scopes: SCOPES })
    const created = await endpoint(owner, 'http://127.0.0.1:9/hook')
    for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/test']] as const) {
      await problem(await env.request(method, `/api/v1/webhooks/endpoints/${created.id}${path}`, { token: stranger.token, body: method === 'PATCH' ? { description: 'x' } : undefined }), 404, 'not_found')
    }
    expect((await (await env.request('GET', '/api/v1/webhooks/endpoints', { token: stranger.token })).json()).data).toEqual([])
  })
})

describe('delivery', () => {
  test('every kind of change is delivered, signed over the exact bytes, verified by standardwebhooks', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hook = receiver()
    const { secret } = await endpoint(key, hook.url)
    const animal = await (await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: 'Monty', species_id: 'python-regius' } })).json()
    await env.request('PATCH', `/api/v1/animals/${animal.id}`, { token: key.token, body: { notes: 'x' } })
    await env.request('POST', '/api/v1/activities', { token: key.token, body: { animal_id: animal.id, type: 'note' } })
    await env.request('DELETE', `/api/v1/animals/${animal.id}`, { token: key.token })
    const device = await (await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { name: 'Hub' } })).json()
    await env.request('PATCH', `/api/v1/sensors/devices/${device.id}`, { token: key.token, body: { name: 'Hub 2' } })
    await env.request('DELETE', `/api/v1/sensors/devices/${device.id}`, { token: key.token })
    const claim = await (await env.request('POST', '/api/v1/sensors/claim/start')).json()
    await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { claim_code: claim.user_code } })
    const expected = ['animal.created', 'animal.updated', 'activity.created', 'animal.deleted', 'sensor_device.created', 'sensor_device.updated', 'sensor_device.deleted', 'sensor_device.created', 'sensor_device.paired']
    await waitFor(async () => hook.received.length >= expected.length, 10_000)
    expect(hook.received.map((r) => r.event.type).sort()).toEqual([...expected].sort())
    for (const r of hook.received) {
      expect(verify(secret, r)).toEqual(r.event)
      expect(r.headers['webhook-id']).toBe(r.event.id)
      expect(r.body).toBe(JSON.stringify(r.event))
    }
    expect(() => new Webhook(secret).verify(hook.received[0]!.body + ' ', hook.received[0]!.headers)).toThrow()
  })

  test('a receiver that fails twice then succeeds gets exactly one successful delivery after three attempts', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hook = receiver((n) => (n <= 2 ? 500 : 200))
    const created = await endpoint(key, hook.url, ['animal.created'])
    await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: 'Rex', species_id: 'pogona-vitticeps' } })
    await waitFor(async () => (await detail(key, created.id)).deliveries.succeeded === 1, 10_000)
    const report = await detail(key, created.id)
    expect(report.deliveries).toEqual({ pending: 0, succeeded: 1, failed: 0 })
    const attempts = await before(key, created.id, hook)
    expect(attempts).toHaveLength(3)
    expect(new Set(attempts.map((r) => r.event.id)).size).toBe(1)
    expect(report.recent_attempts.map((a: any) => a.status_code)).toEqual([200, 500, 500])
    expect(report.status).toBe('enabled')
  })

  test('410 Gone disables the endpoint at once, and later changes are not queued for it', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hook = receiver(() => 410)
    const created = await endpoint(key, hook.url)
    await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: 'A', species_id: 'python-regius' } })
    await waitFor(async () => (await detail(key, created.id)).status === 'disabled', 10_000)
    const report = await detail(key, created.id)
    expect(report.disabled_reason).toContain('410')
    expect(hook.received).toHaveLength(1)
    await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: 'B', species_id: 'python-regius' } })
    expect(await env.deps.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpoint_id, created.id))).toHaveLength(1)
    // Enabling it again clears the reason.
    const enabled = await (await env.request('PATCH', `/api/v1/webhooks/endpoints/${created.id}`, { token: key.token, body: { status: 'enabled' } })).json()
    expect(enabled).toMatchObject({ status: 'enabled', disabled_reason: null })
  })

  test('running out of attempts disables the endpoint with the reason', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hook = receiver(() => 503)
    const created = await endpoint(key, hook.url)
    await env.request('POST', '/api/v1/webhooks/endpoints/' + created.id + '/test', { token: key.token })
    await waitFor(async () => (await detail(key, created.id)).status === 'disabled', 10_000)
    const report = await detail(key, created.id)
    expect(hook.received).toHaveLength(4)
    expect(report.deliveries).toEqual({ pending: 0, succeeded: 0, failed: 1 })
    expect(report.disabled_reason).toContain('4 times')
  })

  test('the test event goes to that endpoint only; a rotated secret signs alongside the old one', async () => {
    const key = await env.account({ scopes: SCOPES })
    const a = receiver()
    const b = receiver()
    const first = await endpoint(key, a.url, ['animal.created'])
    const second = await endpoint(key, b.url)
    const rotated = await (await env.request('PATCH', `/api/v1/webhooks/endpoints/${first.id}`, { token: key.token, body: { rotate_secret: true } })).json()
    expect(rotated.secret).toMatch(/^whsec_/)
    expect(rotated.secret).not.toBe(first.secret)
    const sent = await env.request('POST', `/api/v1/webhooks/endpoints/${first.id}/test`, { token: key.token })
    expect(sent.status).toBe(202)
    const { event_id } = await sent.json()
    await waitFor(async () => a.received.length === 1, 10_000)
    expect(a.received[0]!.event).toMatchObject({ id: event_id, type: 'webhook_endpoint.test', data: { object: { endpoint_id: first.id } } })
    expect(verify(rotated.secret, a.received[0]!)).toBeTruthy()
    expect(verify(first.secret, a.received[0]!)).toBeTruthy()
    expect(a.received[0]!.headers['webhook-signature']!.split(' ')).toHaveLength(2)
    // b's own test event, sent after a's: nothing of a's reached b before it.
    expect(await before(key, second.id, b)).toEqual([])
  })
})

describe('dispatchers', () => {
  test('two dispatchers against one database deliver each event exactly once', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hook = receiver()
    const created = await endpoint(key, hook.url, ['animal.created'])
    await env.deps.dispatcher.stop()
    try {
      for (let i = 0; i < 25; i++) await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: `n${i}`, species_id: 'python-regius' } })
      const second = new Dispatcher(env.deps.database, env.config, createLogger('error'))
      const third = new Dispatcher(env.deps.database, env.config, createLogger('error'))
      second.start(); third.start()
      await waitFor(async () => hook.received.length >= 25, 15_000)
      // A marker delivered by the same two dispatchers: any duplicate of the 25 would have come before it.
      const ids = (await before(key, created.id, hook)).map((r) => r.event.id)
      await Promise.all([second.stop(), third.stop()])
      expect(ids).toHaveLength(25)
      expect(new Set(ids).size).toBe(25)
    } finally {
      env.deps.dispatcher.start()
    }
  })

  test('a claim left by a dispatcher that died mid-delivery is retried once its lease runs out', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hook = receiver()
    const created = await endpoint(key, hook.url, ['animal.created'])
    await env.deps.dispatcher.stop()
    try {
      await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: 'stuck', species_id: 'python-regius' } })
      // What a crashed dispatcher leaves behind: an attempt counted and a lease, and nobody to finish it.
      const [lease] = await env.deps.database.query<{ until: Date | string }>(
        `update webhook_deliveries set attempts = 1, locked_until = now() + interval '500 milliseconds' where endpoint_id = $1 returning locked_until as until`, [created.id])
      env.deps.dispatcher.start()
      await waitFor(async () => hook.received.length === 1, 10_000)
      // Not before the lease ran out (the database's clock and ours are this machine's), however slow the machine.
      expect(hook.received[0]!.at).toBeGreaterThanOrEqual(new Date(lease!.until).getTime())
      await waitFor(async () => (await detail(key, created.id)).deliveries.succeeded === 1, 10_000)
    } finally {
      env.deps.dispatcher.start()
    }
  })

  test('stopping (SIGTERM) hands back attempts still waiting on a receiver, to be made again', async () => {
    const key = await env.account({ scopes: SCOPES })
    let hang = true
    const hook = receiver(async () => { while (hang) await Bun.sleep(20); return 204 })
    const created = await endpoint(key, hook.url, ['animal.created'])
    const mine = new Dispatcher(env.deps.database, { ...env.config, webhookTimeoutMs: 60_000 }, createLogger('error'))
    await env.deps.dispatcher.stop()
    try {
      await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: 'slow', species_id: 'python-regius' } })
      mine.start()
      await waitFor(async () => hook.received.length === 1, 5_000)
      await mine.stop(100)
      const [row] = await env.deps.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpoint_id, created.id))
      expect(row).toMatchObject({ status: 'pending', attempts: 0, locked_until: null })
      hang = false
      env.deps.dispatcher.start()
      await waitFor(async () => (await detail(key, created.id)).deliveries.succeeded === 1, 10_000)
    } finally {
      hang = false
      env.deps.dispatcher.start()
    }
  })
})

describe('SSRF guard', () => {
  test('private, loopback, link-local and metadata addresses are refused, also behind a name', async () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00:ec2::254', '::ffff:10.0.0.1', 'fc00::5']) {
      expect({ address, forbidden: isForbiddenAddress(address) }).toEqual({ address, forbidden: true })
    }
    for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '8.8.8.8']) expect(isForbiddenAddress(address)).toBe(false)
    const resolveTo = (addresses: string[]) => async () => addresses
    expect(await urlProblem('http://example.com/', false, resolveTo(['93.184.216.34']))).toContain('https')
    expect(await urlProblem('https://example.com/', false, resolveTo(['93.184.216.34']))).toBeUndefined()
    expect(await urlProblem('https://rebind.example/', false, resolveTo(['93.184.216.34', '127.0.0.1']))).toContain('private')
    expect(await urlProblem('https://[::1]/', false)).toContain('private')
    expect(await urlProblem('https://169.254.169.254/latest/meta-data', false)).toContain('private')
    expect(await urlProblem('https://user:pw@example.com/', false, resolveTo(['93.184.216.34']))).toContain('credentials')
    expect(await urlProblem('http://127.0.0.1:8080/', true)).toBeUndefined()
  })

  test('without WEBHOOK_ALLOW_PRIVATE the API refuses such URLs, and delivery re-checks the address', async () => {
    const strict = await createTestEnv({ webhookAllowPrivate: false })
    try {
      const key = await strict.account({ scopes: SCOPES })
      for (const url of ['https://127.0.0.1/hook', 'https://10.0.0.1/', 'https://169.254.169.254/latest/meta-data', 'https://localhost/hook', 'http://93.184.216.34/']) {
        const refused = await problem(await strict.request('POST', '/api/v1/webhooks/endpoints', { token: key.token, body: { url, enabled_events: ['*'] } }), 422, 'validation_failed')
        expect(refused.errors[0].path).toBe('/body/url')
      }
      // A name that resolved publicly when saved and privately at delivery time (DNS rebinding) is not called.
      const dispatcher = new Dispatcher(strict.deps.database, strict.config, createLogger('error'), async () => ['127.0.0.1'])
      const outcome = await dispatcher.send({ url: 'https://hooks.example/', secret: 'whsec_' + Buffer.from('k'.repeat(24)).toString('base64'), previous_secret: null, previous_secret_expires_at: null }, 'evt_x', '{}')
      expect(outcome).toMatchObject({ statusCode: null, error: expect.stringContaining('private') })
    } finally {
      await strict.close()
    }
  })
})

describe('config', () => {
  test('the retry schedule is the CONTRACT one by default', () => {
    expect(loadConfig({}).webhookRetrySchedule).toEqual([5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400])
  })
})

describe('a dispatcher process killed mid-delivery', () => {
  test('leaves nothing stuck: the claim comes back when its lease runs out and the event is delivered', async () => {
    // On PGlite the killed server and its successor take turns on one data directory; on Postgres, one database.
    const fresh = await freshDatabase()
    const dataDir = tempDataDir()
    const storeEnv = fresh.databaseUrl ? { DATABASE_URL: fresh.databaseUrl, REDIS_URL: REAL_REDIS_URL, REDIS_PREFIX: `hrs_test_${Date.now()}:` } : { DATA_DIR: dataDir }
    const serverEnv = { ...storeEnv, DEMO: '0', WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_POLL_MS: '50' }
    const account = /account (acct_\w+)/.exec((await runCli(['accounts', 'create', '--name', 'webhooks'], storeEnv)).stdout)![1]!
    const token = /(hrs_pat_\w+)/.exec((await runCli(['keys', 'create', account, '--name', 'k', '--scopes', 'all'], storeEnv)).stdout)![1]!
    let hang = true
    const hook = receiver(async () => { while (hang) await Bun.sleep(20); return 204 })
    const first = await startServer(serverEnv)
    try {
      const call = (base: string, method: string, path: string, body?: unknown) =>
        fetch(`${base}/api/v1${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
      const created = await (await call(first.baseUrl, 'POST', '/webhooks/endpoints', { url: hook.url, enabled_events: ['animal.created'] })).json()
      await call(first.baseUrl, 'POST', `/webhooks/endpoints/${created.id}/test`)
      await waitFor(async () => hook.received.length === 1, 10_000)
      first.proc.kill('SIGKILL')
      await first.stop()
      hang = false
      const second = await startServer(serverEnv)
      try {
        await waitFor(async () => (await (await call(second.baseUrl, 'GET', `/webhooks/endpoints/${created.id}`)).json()).deliveries.succeeded === 1, 15_000)
        expect(hook.received.length).toBe(2)
        expect(hook.received[1]!.event.id).toBe(hook.received[0]!.event.id)
      } finally {
        expect(await second.stop()).toBe(0)
      }
    } finally {
      hang = false
      await first.stop()
      await fresh.drop()
    }
  }, 60_000)
})
