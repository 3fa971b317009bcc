// Hostile bodies on every operation that takes one: deep nesting, NUL characters and lone surrogates are refused
// with a 422 naming the field, quickly, without the memory they used to cost, and change nothing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv({ webhookAllowPrivate: true }) })
afterAll(async () => { await env.close() })

interface Target { method: string; path: string; token?: string; field: string; body: (value: unknown) => Record<string, unknown> }

/** The ten operations that take a body, each with the field a hostile value goes into. */
async function targets(): Promise<{ list: Target[]; animalId: string; token: string }> {
  const key = await env.account({ scopes: ['animals:read', 'animals:write', 'activities:write', 'sensors:read', 'sensors:write', 'webhooks:read', 'webhooks:write'] })
  const animal = await (await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: 'Calm', species_id: 'python-regius' } })).json()
  const device = await (await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
  const endpoint = await (await env.request('POST', '/api/v1/webhooks/endpoints', { token: key.token, body: { url: 'http://127.0.0.1:9/hook', enabled_events: ['*'] } })).json()
  const t = key.token
  const list: Target[] = [
    { method: 'POST', path: '/api/v1/animals', token: t, field: '/body/name', body: (v) => ({ name: v, species_id: 'python-regius' }) },
    { method: 'PATCH', path: `/api/v1/animals/${animal.id}`, token: t, field: '/body/name', body: (v) => ({ name: v }) },
    { method: 'POST', path: '/api/v1/activities', token: t, field: '/body/notes', body: (v) => ({ animal_id: animal.id, type: 'shed', notes: v }) },
    { method: 'POST', path: '/api/v1/sensors/devices', token: t, field: '/body/name', body: (v) => ({ name: v, channels: [] }) },
    { method: 'PATCH', path: `/api/v1/sensors/devices/${device.id}`, token: t, field: '/body/name', body: (v) => ({ name: v }) },
    { method: 'POST', path: '/api/v1/sensors/claim/start', field: '/body/model', body: (v) => ({ model: v }) },
    { method: 'POST', path: '/api/v1/sensors/readings', token: device.key, field: '/body/readings/0/channel', body: (v) => ({ readings: [{ channel: v, value: 1 }] }) },
    { method: 'POST', path: '/api/v1/sensors/ping', field: '/body/ts', body: (v) => ({ key: device.key, t1: 20, ts: v }) },
    { method: 'POST', path: '/api/v1/webhooks/endpoints', token: t, field: '/body/description', body: (v) => ({ url: 'http://127.0.0.1:9/h', enabled_events: ['*'], description: v }) },
    { method: 'PATCH', path: `/api/v1/webhooks/endpoints/${endpoint.id}`, token: t, field: '/body/description', body: (v) => ({ description: v }) },
  ]
  return { list, animalId: animal.id, token: t }
}

/** Sends raw text as JSON; fails on an answer slower than 2 s. */
async function send(target: Target, text: string) {
  const started = performance.now()
  const response = await env.request(target.method, target.path, { token: target.token, body: text, headers: { 'content-type': 'application/json' } })
  expect({ path: target.path, slow: performance.now() - started > 2_000 }).toEqual({ path: target.path, slow: false })
  return response
}

describe('hostile bodies', () => {
  test('a body nested 100,000 levels deep is a 422 on every operation, and memory stays within 50 MB of idle', async () => {
    const { list } = await targets()
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    Bun.gc(true)
    const idle = process.memoryUsage().rss
    let peak = idle
    for (const target of list) {
      // The hostile value sits where a string belongs, so every operation parses the body before anything else.
      const text = JSON.stringify(target.body('PLACEHOLDER')).replace('"PLACEHOLDER"', deep)
      const refused = await problem(await send(target, text), 422, 'validation_failed')
      expect(refused.errors).toEqual([{ path: '/body', message: expect.stringContaining('deeper than 32') }])
      peak = Math.max(peak, process.memoryUsage().rss)
    }
    expect(Math.round((peak - idle) / 1024 / 1024)).toBeLessThan(50)
  })

  test('NUL and lone surrogates are a 422 naming the field on every operation, and change nothing', async () => {
    const { list, animalId, token } = await targets()
    for (const hostile of ['a\\u0000b', '\\ud800', 'x\\udfff']) {
      for (const target of list) {
        const text = JSON.stringify(target.body('PLACEHOLDER')).replace('PLACEHOLDER', hostile)
        const refused = await problem(await send(target, text), 422, 'validation_failed')
        expect({ target: `${target.method} ${target.path}`, paths: refused.errors.map((e: { path: string }) => e.path) })
          .toEqual({ target: `${target.method} ${target.path}`, paths: [target.field] })
      }
    }
    const animal = await (await env.request('GET', `/api/v1/animals/${animalId}`, { token })).json()
    expect(animal.name).toBe('Calm')
    const animals = await (await env.request('GET', '/api/v1/animals', { token })).json()
    expect(animals.data).toHaveLength(1)
    const devices = await (await env.request('GET', '/api/v1/sensors/devices', { token })).json()
    expect(devices.data.map((d: { name: string }) => d.name)).toEqual(['Hub'])
  })

  test('a form body with a NUL (here in a channel name) is refused the same way', async () => {
    const key = await env.account({ scopes: ['sensors:write'] })
    const device = await (await env.request('POST', '/api/v1/sensors/devices', { token: key.token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
    const refused = await problem(await env.request('POST', '/api/v1/sensors/ping', {
      body: `key=${device.key}&t1=20&x%00=21`, headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }), 422, 'validation_failed')
    expect(refused.errors.map((e: { path: string }) => e.path)).toEqual(['/body/x\u0000'])
  })

  test('an emoji (a proper surrogate pair) is stored as sent', async () => {
    const key = await env.account({ scopes: ['animals:read', 'animals:write'] })
    const created = await env.request('POST', '/api/v1/animals', { token: key.token, body: '{"name":"Sly \\ud83d\\udc0d","species_id":"python-regius"}', headers: { 'content-type': 'application/json' } })
    expect(created.status).toBe(201)
    expect((await created.json()).name).toBe('Sly 🐍')
  })

  test('a chunked body streamed past 1 MiB (20 MB on offer) is cut off with a 413 problem+json', async () => {
    const key = await env.account({ scopes: ['animals:write'] })
    let offered = 0
    const chunk = new Uint8Array(64 * 1024).fill(32)
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offered >= 20 * 1024 * 1024) return controller.close()
        offered += chunk.length
        controller.enqueue(chunk)
      },
    })
    const response = await fetch(env.baseUrl + '/api/v1/animals', {
      method: 'POST', body, headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' }, duplex: 'half',
    } as RequestInit)
    await problem(response, 413, 'payload_too_large')
    // The server stopped reading soon after the limit instead of taking in all 20 MB.
    expect(offered).toBeLessThan(8 * 1024 * 1024)
  })
})
