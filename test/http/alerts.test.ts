// Alert rules and alerts (issue 16): the rule API's conventions, evaluation of readings as batches are written,
// staleness with an injected clock, webhook events verified with the standardwebhooks library, and isolation.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { Webhook } from 'standardwebhooks'
import { alertRules, alerts, environments, outboxEvents } from '../../db/schema/index.ts'
import { newId } from '../../src/ids.ts'
import { createLogger } from '../../src/log.ts'
import { AlertEvaluator } from '../../src/modules/alerts/evaluator.ts'
import type { Reading } from '../../ingest/stores/interface.ts'
import { createTestEnv, problem, waitFor, type TestEnv } from '../helpers.ts'

/** The evaluator's clock: real time unless a test moves it. */
let clock = Date.now()
let env: TestEnv
beforeAll(async () => {
  env = await createTestEnv({ webhookAllowPrivate: true, webhookRetrySchedule: [0.05, 0.05, 0.05], webhookPollMs: 20, webhookTimeoutMs: 2000 }, { clock: () => clock })
  env.deps.dispatcher.start()
})
afterAll(async () => { await env.close() })

const SCOPES = ['alerts:read', 'alerts:write', 'sensors:read', 'sensors:write', 'webhooks:read', 'webhooks:write'] as const
type Key = Awaited<ReturnType<TestEnv['account']>>

interface Received { headers: Record<string, string>; body: string }
const receivers: ReturnType<typeof Bun.serve>[] = []
afterEach(() => { for (const r of receivers.splice(0)) r.stop(true) })

/** A webhook endpoint on loopback for `key`'s account; returns what it received and the endpoint's secret. */
async function receiver(key: Key, events: string[]) {
  const received: Received[] = []
  const server = Bun.serve({
    port: 0, hostname: '127.0.0.1',
    async fetch(request) {
      received.push({ headers: Object.fromEntries(request.headers), body: await request.text() })
      return new Response(null, { status: 204 })
    },
  })
  receivers.push(server)
  const res = await env.request('POST', '/api/v1/webhooks/endpoints', { token: key.token, body: { url: `http://127.0.0.1:${server.port}/hook`, enabled_events: events } })
  expect(res.status).toBe(201)
  const { id, secret } = await res.json()
  /** Every delivery, verified against the endpoint's secret (throws on a bad signature). */
  const verified = () => received.map((r) => new Webhook(secret).verify(r.body, r.headers) as { id: string; type: string; data: { object: any } })
  /**
   * Every event delivered before a marker sent now (the endpoint's test event) has arrived: what came before it,
   * so a late duplicate shows (a fixed sleep could not tell "nothing more" from "not yet").
   */
  const settled = async () => {
    const { event_id } = await (await env.request('POST', `/api/v1/webhooks/endpoints/${id}/test`, { token: key.token })).json()
    await waitFor(async () => verified().some((e) => e.id === event_id), 10_000)
    const all = verified()
    return all.slice(0, all.findIndex((e) => e.id === event_id))
  }
  return { received, verified, settled }
}

async function environment(accountId: string) {
  const id = newId('environment')
  await env.deps.database.db.insert(environments).values({ id, account_id: accountId, name: 'Viv 1', kind: 'enclosure' })
  return id
}

async function device(key: Key, channels: Record<string, unknown>[]) {
  const res = await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { name: 'Hub', channels } })
  if (res.status !== 201) throw new Error(`device: ${res.status} ${await res.text()}`)
  return res.json() as Promise<{ id: string; key: string }>
}

async function rule(key: Key, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await env.request('POST', '/api/v1/environment/alert-rules', { token: key.token, body, headers })
  if (res.status !== 201) throw new Error(`rule: ${res.status} ${await res.text()}`)
  return res.json()
}

/** Posts one request's readings (one batch each, as the requests are sequential) and waits until they are stored. */
async function send(deviceKey: string, readings: { channel: string; value: number; ts: number }[]) {
  const res = await env.request('POST', '/api/v1/sensors/readings', { token: deviceKey, body: { readings } })
  expect(res.status).toBe(202)
  expect((await res.json()).rejected).toEqual([])
}

const list = async (key: Key, query = '') => (await (await env.request('GET', `/api/v1/environment/alerts${query}`, { token: key.token })).json())

describe('alert rules', () => {
  test('create, read, merge patch with If-Match, list by cursor, delete', async () => {
    const key = await env.account({ scopes: SCOPES })
    const envId = await environment(key.accountId)
    const created = await rule(key, { name: 'Hot side', environment_id: envId, metric: 'temperature', min: 24, max: 32, for_seconds: 600, stale_after_seconds: 900 })
    expect(created).toMatchObject({ environment_id: envId, device_id: null, channel: null, min: 24, max: 32, hysteresis: 0, for_seconds: 600, stale_after_seconds: 900 })
    expect(created.id).toMatch(/^alr_/)
    const read = await env.request('GET', `/api/v1/environment/alert-rules/${created.id}`, { token: key.token })
    expect(read.headers.get('etag')).toBe('"v1"')
    expect(await read.json()).toEqual(created)

    const patched = await env.request('PATCH', `/api/v1/environment/alert-rules/${created.id}`, { token: key.token, body: { max: null, hysteresis: 0.5 }, headers: { 'if-match': '"v1"', 'content-type': 'application/merge-patch+json' } })
    expect(patched.status).toBe(200)
    expect(patched.headers.get('etag')).toBe('"v2"')
    expect(await patched.json()).toMatchObject({ min: 24, max: null, hysteresis: 0.5 })
    await problem(await env.request('PATCH', `/api/v1/environment/alert-rules/${created.id}`, { token: key.token, body: { min: 20 }, headers: { 'if-match': '"v1"' } }), 412, 'precondition_failed')

    await rule(key, { environment_id: envId, metric: 'humidity', min: 50 })
    await rule(key, { environment_id: envId, metric: 'humidity', max: 90 })
    const first = await (await env.request('GET', '/api/v1/environment/alert-rules?limit=2', { token: key.token })).json()
    expect(first.data).toHaveLength(2)
    expect(first.has_more).toBe(true)
    const second = await (await env.request('GET', `/api/v1/environment/alert-rules?limit=2&cursor=${first.next_cursor}`, { token: key.token })).json()
    expect(second).toMatchObject({ has_more: false, next_cursor: null })
    expect([...first.data, ...second.data].map((r: { id: string }) => r.id).reverse()[0]).toBe(created.id)
    const humidity = await (await env.request('GET', '/api/v1/environment/alert-rules?metric=humidity', { token: key.token })).json()
    expect(humidity.data).toHaveLength(2)
    await problem(await env.request('GET', `/api/v1/environment/alert-rules?metric=temperature&cursor=${first.next_cursor}`, { token: key.token }), 400, 'invalid_cursor')

    expect((await env.request('DELETE', `/api/v1/environment/alert-rules/${created.id}`, { token: key.token, headers: { 'if-match': '"v2"' } })).status).toBe(204)
    await problem(await env.request('GET', `/api/v1/environment/alert-rules/${created.id}`, { token: key.token }), 404, 'not_found')
    await problem(await env.request('GET', '/api/v1/environment/alert-rules/alr_nonsense', { token: key.token }), 404, 'not_found')
  })

  test('Idempotency-Key on create: a replay returns the first rule and creates nothing; another body is 422', async () => {
    const key = await env.account({ scopes: SCOPES })
    const envId = await environment(key.accountId)
    const body = { environment_id: envId, metric: 'temperature', max: 30 }
    const first = await env.request('POST', '/api/v1/environment/alert-rules', { token: key.token, body, headers: { 'idempotency-key': 'rule-1' } })
    expect(first.status).toBe(201)
    expect(first.headers.get('etag')).toBe('"v1"')
    const again = await env.request('POST', '/api/v1/environment/alert-rules', { token: key.token, body, headers: { 'idempotency-key': 'rule-1' } })
    expect(again.status).toBe(201)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.headers.get('etag')).toBe('"v1"')
    expect(await again.json()).toEqual(await first.json())
    await problem(await env.request('POST', '/api/v1/environment/alert-rules', { token: key.token, body: { ...body, max: 31 }, headers: { 'idempotency-key': 'rule-1' } }), 422, 'idempotency_key_mismatch')
    expect(await env.deps.database.db.$count(alertRules, eq(alertRules.account_id, key.accountId))).toBe(1)
  })

  test('invalid rules are 422 problem+json naming each field, and change nothing', async () => {
    const key = await env.account({ scopes: SCOPES })
    const other = await env.account({ scopes: SCOPES })
    const envId = await environment(key.accountId)
    const foreignEnv = await environment(other.accountId)
    const foreignDevice = await device(other, [{ key: 't1', metric: 'temperature' }])
    const cases: [Record<string, unknown>, string[]][] = [
      [{ environment_id: envId, metric: 'temperature', min: 30, max: 20 }, ['/body/min']],
      [{ environment_id: newId('environment'), metric: 'temperature', max: 30 }, ['/body/environment_id']],
      [{ environment_id: foreignEnv, metric: 'temperature', max: 30 }, ['/body/environment_id']],
      [{ device_id: foreignDevice.id, channel: 't1', metric: 'temperature', max: 30 }, ['/body/device_id']],
      [{ metric: 'temperature', max: 30 }, ['/body/environment_id']],
      [{ environment_id: envId, device_id: foreignDevice.id, channel: 't1', metric: 'temperature', max: 30 }, ['/body/environment_id', '/body/device_id']],
      [{ environment_id: envId, metric: 'temperature' }, ['/body/min']],
      [{ environment_id: envId, metric: 'wind', max: 3 }, ['/body/metric']],
      [{ environment_id: envId, metric: 'temperature', min: 20, max: 22, hysteresis: 1.5 }, ['/body/hysteresis']],
      [{ environment_id: envId, metric: 'temperature', max: 30, stale_after_seconds: 5 }, ['/body/stale_after_seconds']],
      [{ environment_id: envId, metric: 'temperature', max: 30, colour: 'red' }, ['/body/colour']],
    ]
    for (const [body, paths] of cases) {
      const refused = await problem(await env.request('POST', '/api/v1/environment/alert-rules', { token: key.token, body }), 422, 'validation_failed')
      expect({ body, paths: [...new Set(refused.errors.map((e: { path: string }) => e.path))] }).toEqual({ body, paths })
    }
    const created = await rule(key, { environment_id: envId, metric: 'temperature', min: 20, max: 30 })
    await problem(await env.request('PATCH', `/api/v1/environment/alert-rules/${created.id}`, { token: key.token, body: { min: 35 } }), 422, 'validation_failed')
    expect(await (await env.request('GET', `/api/v1/environment/alert-rules/${created.id}`, { token: key.token })).json()).toEqual(created)
    expect(await env.deps.database.db.$count(alertRules, eq(alertRules.account_id, key.accountId))).toBe(1)
  })

  test('scopes: alerts:read to read, alerts:write to write; device keys are refused', async () => {
    const owner = await env.account({ scopes: SCOPES })
    const envId = await environment(owner.accountId)
    const created = await rule(owner, { environment_id: envId, metric: 'temperature', max: 30 })
    const none = await env.account({ scopes: ['environment:read', 'environment:write', 'sensors:read'] })
    const reader = await env.account({ scopes: ['alerts:read'] })
    for (const path of ['/api/v1/environment/alert-rules', '/api/v1/environment/alerts']) {
      const refused = await problem(await env.request('GET', path, { token: none.token }), 403, 'insufficient_scope')
      expect(refused.required_scopes).toEqual(['alerts:read'])
    }
    expect((await env.request('GET', '/api/v1/environment/alert-rules', { token: reader.token })).status).toBe(200)
    const refused = await problem(await env.request('POST', '/api/v1/environment/alert-rules', { token: reader.token, body: { environment_id: envId, metric: 'temperature', max: 30 } }), 403, 'insufficient_scope')
    expect(refused.required_scopes).toEqual(['alerts:write'])
    const hub = await device(owner, [{ key: 't1', metric: 'temperature', environment_id: envId }])
    for (const [method, path] of [['GET', '/api/v1/environment/alert-rules'], ['POST', '/api/v1/environment/alert-rules'], ['GET', `/api/v1/environment/alert-rules/${created.id}`], ['GET', '/api/v1/environment/alerts']] as const) {
      await problem(await env.request(method, path, { token: hub.key, body: method === 'POST' ? { environment_id: envId, metric: 'temperature', max: 30 } : undefined }), 403, 'device_key_not_allowed')
    }
  })
})

describe('alert evaluation', () => {
  test('a rule fires once and resolves once over a series that crosses batch boundaries; webhooks verify', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hooks = await receiver(key, ['environment.alert.triggered', 'environment.alert.resolved'])
    const envId = await environment(key.accountId)
    const hub = await device(key, [{ key: 't1', metric: 'temperature', environment_id: envId }, { key: 't2', metric: 'temperature', environment_id: envId }])
    const created = await rule(key, { name: 'Too hot', environment_id: envId, metric: 'temperature', max: 30, for_seconds: 60, hysteresis: 0.5 })
    const t0 = Date.now() - 10 * 60_000
    const at = (seconds: number) => t0 + seconds * 1000
    const batches: [number, number][][] = [
      [[0, 25], [10, 26], [20, 31], [30, 32]],          // out at 20 s…
      [[40, 29], [50, 31], [60, 33], [70, 34]],         // …back in at 40 s before for_seconds: no alert; out again from 50 s
      [[80, 35], [110, 36], [120, 37], [130, 31]],      // 60 s out at 110 s: the alert opens; staying out sends nothing more
      [[140, 29.8], [125, 20], [150, 35]],              // in range but not past the hysteresis: still open; 125 s is late: stored, judges nothing
      [[160, 29.4], [170, 31], [180, 32]],              // back past the hysteresis: resolved; a new window that never spans 60 s
    ]
    for (const batch of batches) {
      await send(hub.key, batch.map(([s, value]) => ({ channel: 't1', value, ts: at(s) })))
      // A second series of the same environment stays in range and never alerts.
      await send(hub.key, batch.map(([s]) => ({ channel: 't2', value: 27, ts: at(s) })))
    }
    await env.deps.alerts.flush()

    const page = await list(key)
    expect(page.data).toHaveLength(1)
    const alert = page.data[0]
    expect(alert).toMatchObject({
      rule_id: created.id, kind: 'threshold', state: 'resolved', environment_id: envId, device_id: hub.id, channel: 't1', metric: 'temperature',
      rule: { id: created.id, name: 'Too hot', min: null, max: 30, hysteresis: 0.5, for_seconds: 60, stale_after_seconds: null },
      triggered_at: new Date(at(110)).toISOString(),
      window: { from: new Date(at(50)).toISOString(), to: new Date(at(110)).toISOString() },
      values: { first: 31, last: 36, min: 31, max: 36, count: 5 },
      resolved_at: new Date(at(160)).toISOString(), resolved_value: 29.4, resolved_reason: 'recovered',
    })
    expect(alert.id).toMatch(/^alt_/)
    expect((await list(key, '?state=open')).data).toEqual([])
    expect((await list(key, `?state=resolved&environment_id=${envId}&device_id=${hub.id}`)).data).toHaveLength(1)
    expect(await (await env.request('GET', `/api/v1/environment/alerts/${alert.id}`, { token: key.token })).json()).toEqual(alert)

    await waitFor(async () => hooks.received.length >= 2, 5000)
    const events = await hooks.settled()
    expect(events.map((e) => e.type)).toEqual(['environment.alert.triggered', 'environment.alert.resolved'])
    expect(events[0]!.data.object).toMatchObject({ id: alert.id, state: 'open', resolved_at: null, window: alert.window, values: alert.values })
    expect(events[1]!.data.object).toEqual(alert)
  })

  test('a device channel goes stale after stale_after_seconds by the injected clock, once, and recovers on its next reading', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hooks = await receiver(key, ['sensor_device.stale', 'sensor_device.recovered'])
    const envId = await environment(key.accountId)
    const hub = await device(key, [{ key: 't1', metric: 'temperature', environment_id: envId }])
    const start = Date.now()
    // The evaluator starts watching the series when the rule arrives: a minute before the reading below, whatever
    // the clock was left at by earlier tests (it stands still between them).
    clock = start - 60_000
    const created = await rule(key, { device_id: hub.id, channel: 't1', metric: 'temperature', stale_after_seconds: 120 })
    clock = start
    try {
      await send(hub.key, [{ channel: 't1', value: 26.5, ts: start - 1000 }])
      await env.deps.alerts.checkStale()
      clock = start + 118_000
      await env.deps.alerts.checkStale()
      expect((await list(key)).data).toEqual([])
      clock = start + 121_000
      await env.deps.alerts.checkStale()
      await env.deps.alerts.checkStale()
      const open = (await list(key, '?state=open&kind=stale')).data
      expect(open).toHaveLength(1)
      expect(open[0]).toMatchObject({
        rule_id: created.id, kind: 'stale', device_id: hub.id, channel: 't1', environment_id: envId,
        triggered_at: new Date(start + 121_000).toISOString(),
        window: { from: new Date(start - 1000).toISOString(), to: new Date(start + 121_000).toISOString() },
        values: { first: null, last: 26.5, min: null, max: null, count: null },
      })
      await send(hub.key, [{ channel: 't1', value: 27, ts: Date.now() }])
      await env.deps.alerts.flush()
      const [recovered] = (await list(key)).data
      expect(recovered).toMatchObject({ id: open[0].id, state: 'resolved', resolved_value: 27, resolved_reason: 'recovered' })
      await waitFor(async () => hooks.received.length >= 2, 5000)
      expect((await hooks.settled()).map((e) => [e.type, e.data.object.id])).toEqual([['sensor_device.stale', open[0].id], ['sensor_device.recovered', open[0].id]])
    } finally {
      clock = Date.now()
    }
  })

  test('a series whose readings another process stored is not called stale: the store is asked first', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hub = await device(key, [{ key: 't1', metric: 'temperature' }])
    const start = Date.now()
    clock = start
    try {
      await rule(key, { device_id: hub.id, channel: 't1', metric: 'temperature', stale_after_seconds: 120 })
      // Written straight to the store, as another process's batch would be: this process's evaluator never sees it.
      await env.deps.readings.write([{ accountId: key.accountId, deviceId: hub.id, channel: 't1', ts: start + 100_000, value: 24.5, metric: 'temperature', environmentId: null }])
      // QuestDB makes a write visible a moment after acknowledging it; the evaluator's question must find it.
      await waitFor(async () => (await env.deps.readings.latest({ accountId: key.accountId, deviceId: hub.id, channel: 't1', from: start, to: start + 200_000 }, 1)).length === 1, 10_000)
      clock = start + 150_000
      await env.deps.alerts.checkStale()
      clock = start + 219_000
      await env.deps.alerts.checkStale()
      expect((await list(key)).data).toEqual([])
      clock = start + 221_000
      await env.deps.alerts.checkStale()
      const [stale] = (await list(key)).data
      expect(stale).toMatchObject({ kind: 'stale', state: 'open', window: { from: new Date(start + 100_000).toISOString(), to: new Date(start + 221_000).toISOString() }, values: { last: 24.5 } })
    } finally {
      clock = Date.now()
    }
  })

  test('deleting a rule closes its open alert with rule_deleted and sends the closing event', async () => {
    const key = await env.account({ scopes: SCOPES })
    const hooks = await receiver(key, ['*'])
    const envId = await environment(key.accountId)
    const hub = await device(key, [{ key: 't1', metric: 'temperature', environment_id: envId }])
    const created = await rule(key, { environment_id: envId, metric: 'temperature', min: 22 })
    await send(hub.key, [{ channel: 't1', value: 18, ts: Date.now() - 1000 }])
    await env.deps.alerts.flush()
    expect((await list(key, '?state=open')).data).toHaveLength(1)
    expect((await env.request('DELETE', `/api/v1/environment/alert-rules/${created.id}`, { token: key.token })).status).toBe(204)
    const [closed] = (await list(key)).data
    expect(closed).toMatchObject({ state: 'resolved', resolved_reason: 'rule_deleted', resolved_value: null })
    // Readings after the deletion judge nothing.
    await send(hub.key, [{ channel: 't1', value: 10, ts: Date.now() }])
    await env.deps.alerts.flush()
    expect((await list(key)).data).toHaveLength(1)
    await waitFor(async () => hooks.received.filter((r) => r.body.includes('environment.alert')).length >= 2, 5000)
    expect(hooks.verified().filter((e) => e.type.startsWith('environment.alert')).map((e) => e.type)).toEqual(['environment.alert.triggered', 'environment.alert.resolved'])
  })

  test('a rule that watches something else closes its open alerts with rule_changed; new limits alone keep them open', async () => {
    const key = await env.account({ scopes: SCOPES })
    const envId = await environment(key.accountId)
    const hub = await device(key, [{ key: 't1', metric: 'temperature', environment_id: envId }, { key: 'h1', metric: 'humidity', environment_id: envId }])
    const created = await rule(key, { device_id: hub.id, channel: 't1', metric: 'temperature', max: 30 })
    await send(hub.key, [{ channel: 't1', value: 33, ts: Date.now() - 2000 }])
    await env.deps.alerts.flush()
    const patch = (body: Record<string, unknown>) => env.request('PATCH', `/api/v1/environment/alert-rules/${created.id}`, { token: key.token, body })
    expect((await patch({ max: 32, name: 'renamed' })).status).toBe(200)
    expect((await list(key, '?state=open')).data).toHaveLength(1)
    expect((await patch({ channel: 'h1', metric: 'humidity', max: 80 })).status).toBe(200)
    const [closed] = (await list(key)).data
    expect(closed).toMatchObject({ state: 'resolved', resolved_reason: 'rule_changed', channel: 't1' })
    // The rule now watches h1: t1 out of range opens nothing, h1 out of range does.
    await send(hub.key, [{ channel: 't1', value: 40, ts: Date.now() - 1000 }, { channel: 'h1', value: 90, ts: Date.now() - 1000 }])
    await env.deps.alerts.flush()
    expect((await list(key, '?state=open')).data.map((a: { channel: string }) => a.channel)).toEqual(['h1'])
  })

  test('two processes: an alert opens once however many see it, and the one that did not open it can close it', async () => {
    const key = await env.account({ scopes: SCOPES })
    const envId = await environment(key.accountId)
    const hub = await device(key, [{ key: 't1', metric: 'humidity', environment_id: envId }])
    const created = await rule(key, { device_id: hub.id, channel: 't1', metric: 'humidity', min: 60 })
    const other = new AlertEvaluator({ db: env.deps.database.db, shared: env.deps.shared, readings: env.deps.readings, log: createLogger('error'), now: () => clock })
    await other.start()
    try {
      const reading = (value: number, ts: number): Reading => ({ accountId: key.accountId, deviceId: hub.id, channel: 't1', ts, value, metric: 'humidity', environmentId: envId })
      const t = Date.now() - 60_000
      env.deps.alerts.observe([reading(50, t)])
      other.observe([reading(50, t)])
      await Promise.all([env.deps.alerts.flush(), other.flush()])
      expect((await list(key, '?state=open')).data).toHaveLength(1)
      // Only the other process sees the recovery; it learned of the open alert from the first one.
      await waitFor(async () => {
        other.observe([reading(70, t + 1000)])
        await other.flush()
        return (await list(key, '?state=resolved')).data.length === 1
      }, 5000, 50)
      const stored = await env.deps.database.db.select().from(alerts).where(eq(alerts.rule_id, created.id))
      expect(stored.map((a) => [a.state, a.resolved_value])).toEqual([['resolved', 70]])
      const types = (await env.deps.database.db.select({ type: outboxEvents.type }).from(outboxEvents).where(eq(outboxEvents.account_id, key.accountId))).map((e) => e.type)
      expect(types.filter((type) => type.startsWith('environment.alert')).sort()).toEqual(['environment.alert.resolved', 'environment.alert.triggered'])
    } finally {
      await other.close()
    }
  })
})

describe('isolation', () => {
  test("another account's rules and alerts are 404 and never listed", async () => {
    const owner = await env.account({ scopes: SCOPES })
    const stranger = await env.account({ scopes: SCOPES })
    const envId = await environment(owner.accountId)
    const hub = await device(owner, [{ key: 't1', metric: 'temperature', environment_id: envId }])
    const created = await rule(owner, { environment_id: envId, metric: 'temperature', max: 20 })
    await send(hub.key, [{ channel: 't1', value: 25, ts: Date.now() - 1000 }])
    await env.deps.alerts.flush()
    const [alert] = (await list(owner)).data
    expect(alert.rule_id).toBe(created.id)
    for (const [method, body] of [['GET', undefined], ['PATCH', { max: 40 }], ['DELETE', undefined]] as const) {
      await problem(await env.request(method, `/api/v1/environment/alert-rules/${created.id}`, { token: stranger.token, body }), 404, 'not_found')
    }
    await problem(await env.request('GET', `/api/v1/environment/alerts/${alert.id}`, { token: stranger.token }), 404, 'not_found')
    expect((await (await env.request('GET', '/api/v1/environment/alert-rules', { token: stranger.token })).json()).data).toEqual([])
    expect((await list(stranger)).data).toEqual([])
    expect((await list(stranger, `?environment_id=${envId}`)).data).toEqual([])
    // The rule is untouched.
    expect((await (await env.request('GET', `/api/v1/environment/alert-rules/${created.id}`, { token: owner.token })).json()).max).toBe(20)
  })
})
