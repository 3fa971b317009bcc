// Server-Sent Event streams (issue 59) through a real server on loopback, with real clients: the npm `eventsource`
// package and `curl -N`. Readings posted by a device arrive once each, filtered and confined to the account; a
// client resumes with Last-Event-ID; the per-account limit answers 429; a revoked key's stream ends at once; a slow
// client is told and dropped; drain ends streams with a `shutdown` event; the events stream carries and replays
// the account's events.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { EventSource } from 'eventsource'
import { revokeKeyEverywhere } from '../../src/auth/keys.ts'
import { HusbandryClient, type StreamEvent } from '../../clients/typescript/src/index.ts'
import { backendLabel, createTestEnv, problem, waitFor, type TestEnv } from '../helpers.ts'

interface Received { id: string; type: string; data: any }

/** An EventSource (npm `eventsource`) with the key in Authorization, collecting every named event it gets. */
function open(env: TestEnv, path: string, token: string, lastEventId?: string) {
  const received: Received[] = []
  const source = new EventSource(env.baseUrl + path, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${token}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) } }),
  })
  for (const type of ['reading', 'bucket', 'event', 'skipped', 'dropped', 'revoked', 'shutdown']) {
    source.addEventListener(type, (e) => received.push({ id: (e as MessageEvent).lastEventId, type, data: JSON.parse((e as MessageEvent).data) }))
  }
  const opened = new Promise<void>((resolve, reject) => { source.onopen = () => resolve(); source.onerror = (e) => reject(e) })
  return { source, received, opened }
}

describe(`event streams (${backendLabel})`, () => {
  let env: TestEnv
  let mine: { accountId: string; keyId: string; token: string }
  let theirs: { token: string }
  let device: { id: string; key: string }
  let otherDevice: { id: string; key: string }

  beforeAll(async () => {
    env = await createTestEnv({ deviceRateLimitPerMinute: 1_000_000, rateLimitPerMinute: 1_000_000, streams: { perAccount: 3, bufferBytes: 8_192, heartbeatMs: 200, replayWindowMs: 15 * 60_000 } })
    mine = await env.account({ scopes: ['sensors:write', 'environment:read', 'animals:write', 'webhooks:read'] })
    theirs = await env.account({ scopes: ['sensors:write', 'environment:read'] })
    device = await (await env.request('POST', '/api/v1/sensors/devices', { token: mine.token, body: { name: 'Streamed', channels: [{ key: 't1', metric: 'temperature' }, { key: 'h1', metric: 'humidity' }] } })).json()
    otherDevice = await (await env.request('POST', '/api/v1/sensors/devices', { token: theirs.token, body: { name: 'Theirs', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
  })
  afterAll(async () => { await env?.close() })

  const post = async (key: string, readings: { channel: string; value: number; ts?: number }[]) => {
    const response = await env.request('POST', '/api/v1/sensors/readings', { token: key, body: { readings } })
    expect(response.status).toBe(202)
  }

  test('every reading posted during the stream arrives once, filtered, and only to its own account', async () => {
    const all = open(env, '/api/v1/environment/readings/stream', mine.token)
    const humidity = open(env, '/api/v1/environment/readings/stream?channel=h1', mine.token)
    const other = open(env, '/api/v1/environment/readings/stream', theirs.token)
    await Promise.all([all.opened, humidity.opened, other.opened])
    const start = Date.now() - 60_000
    for (let i = 0; i < 20; i++) await post(device.key, [{ channel: 't1', value: i, ts: start + i * 1000 }, { channel: 'h1', value: 50 + i, ts: start + i * 1000 }])
    await post(otherDevice.key, [{ channel: 't1', value: 99, ts: start }])
    await waitFor(async () => all.received.length >= 40 && humidity.received.length >= 20 && other.received.length >= 1, 10_000)
    await Bun.sleep(300)
    expect(all.received.length).toBe(40)
    expect(new Set(all.received.map((r) => r.id)).size).toBe(40)
    expect(all.received.every((r) => r.type === 'reading' && r.data.device_id === device.id)).toBe(true)
    expect(all.received[0]).toEqual({ id: `${start}:${device.id}:t1`, type: 'reading', data: { ts: new Date(start).toISOString(), device_id: device.id, channel: 't1', metric: 'temperature', environment_id: null, value: 0 } })
    expect(humidity.received.map((r) => r.data.value)).toEqual(Array.from({ length: 20 }, (_, i) => 50 + i))
    expect(other.received.map((r) => r.data.device_id)).toEqual([otherDevice.id])
    for (const s of [all, humidity, other]) s.source.close()
  })

  test('a client resuming with Last-Event-ID gets what it missed, then live readings', async () => {
    const first = open(env, `/api/v1/environment/readings/stream?device_id=${device.id}&channel=t1`, mine.token)
    await first.opened
    const base = Date.now() - 30_000
    await post(device.key, [{ channel: 't1', value: 1, ts: base }, { channel: 't1', value: 2, ts: base + 1 }])
    await waitFor(async () => first.received.length >= 2, 10_000)
    const lastId = first.received.at(-1)!.id
    first.source.close()
    await waitFor(async () => env.deps.streams.openStreams === 0, 5_000)
    // Missed while away.
    await post(device.key, [{ channel: 't1', value: 3, ts: base + 2 }, { channel: 't1', value: 4, ts: base + 3 }])
    const resumed = open(env, `/api/v1/environment/readings/stream?device_id=${device.id}&channel=t1`, mine.token, lastId)
    await resumed.opened
    await waitFor(async () => resumed.received.length >= 2, 10_000)
    await post(device.key, [{ channel: 't1', value: 5, ts: base + 4 }])
    await waitFor(async () => resumed.received.length >= 3, 10_000)
    await Bun.sleep(200)
    expect(resumed.received.map((r) => r.data.value)).toEqual([3, 4, 5])
    resumed.source.close()
  })

  test('a resume from beyond the replay window says what it skipped', async () => {
    const old = `${Date.now() - 3_600_000}:${device.id}:t1`
    const resumed = open(env, `/api/v1/environment/readings/stream?device_id=${device.id}&channel=t1`, mine.token, old)
    await resumed.opened
    await waitFor(async () => resumed.received.some((r) => r.type === 'skipped'), 10_000)
    expect(resumed.received[0]!.type).toBe('skipped')
    expect(Math.abs(Date.parse(resumed.received[0]!.data.from) - (Date.now() - 3_600_000))).toBeLessThan(30_000)
    expect(Math.abs(Date.parse(resumed.received[0]!.data.to) - (Date.now() - 15 * 60_000))).toBeLessThan(30_000)
    resumed.source.close()
  })

  test('buckets: a resumed stream replays closed buckets with the values the readings query answers for them', async () => {
    const bucketDevice = await (await env.request('POST', '/api/v1/sensors/devices', { token: mine.token, body: { name: 'Bucketed', channels: [{ key: 't1', metric: 'temperature' }, { key: 'h1', metric: 'humidity' }] } })).json()
    const minute = 60_000
    const start = Math.floor(Date.now() / minute) * minute - 5 * minute
    const readings = []
    for (let i = 0; i < 4 * 6; i++) readings.push({ channel: 't1', value: 20 + (i % 7), ts: start + i * 10_000 }, { channel: 'h1', value: 60 - (i % 5), ts: start + i * 10_000 })
    await post(bucketDevice.key, readings)
    const query = await (await env.request('GET', `/api/v1/environment/readings?device_id=${bucketDevice.id}&interval=1m&agg=avg,min,max,count&from=${new Date(start).toISOString()}&to=${new Date(start + 4 * minute).toISOString()}`, { token: mine.token })).json()
    expect(query.data.length).toBe(8)
    // Resume from before the first bucket: every closed bucket since, per series, in the query's order.
    const resumed = open(env, `/api/v1/environment/readings/stream?device_id=${bucketDevice.id}&interval=1m&agg=avg,min,max,count`, mine.token, `${start - minute}:${bucketDevice.id}:t1`)
    await resumed.opened
    await waitFor(async () => resumed.received.length >= 8, 10_000)
    await Bun.sleep(200)
    expect(resumed.received.slice(0, 8).map((r) => r.data)).toEqual(query.data)
    expect(resumed.received.every((r) => r.type === 'bucket')).toBe(true)
    expect(resumed.received[0]!.id).toBe(`${start}:${bucketDevice.id}:h1`)
    resumed.source.close()
  })

  test('buckets: a live stream sends each bucket once it has closed', async () => {
    const liveDevice = await (await env.request('POST', '/api/v1/sensors/devices', { token: mine.token, body: { name: 'Minutes', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
    const stream = open(env, `/api/v1/environment/readings/stream?device_id=${liveDevice.id}&interval=1m&agg=avg,count`, mine.token)
    await stream.opened
    const bucket = Math.floor(Date.now() / 60_000) * 60_000
    await post(liveDevice.key, [{ channel: 't1', value: 10, ts: Math.max(bucket, Date.now() - 1_000) }, { channel: 't1', value: 14, ts: Date.now() }].filter((r, i, all) => i === 0 || r.ts !== all[0]!.ts))
    await waitFor(async () => stream.received.length >= 1, 75_000, 250)
    const expected = await (await env.request('GET', `/api/v1/environment/readings?device_id=${liveDevice.id}&interval=1m&agg=avg,count&from=${new Date(bucket).toISOString()}&to=${new Date(bucket + 60_000).toISOString()}`, { token: mine.token })).json()
    expect(expected.data.length).toBe(1)
    expect(stream.received.map((r) => r.data)).toEqual(expected.data)
    expect(stream.received[0]!.type).toBe('bucket')
    stream.source.close()
  }, 90_000)

  test('the SDK\'s async iterator resumes after a cut connection with Last-Event-ID and misses nothing', async () => {
    // The first connection is cut (its body ends) after its second reading, as a network failure would end it.
    let connections = 0
    const cutting = async (url: string, init: RequestInit) => {
      const response = await fetch(url, init)
      if (++connections > 1 || !response.body) return response
      let seen = 0
      const decoder = new TextDecoder()
      const cut = new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          controller.enqueue(chunk)
          seen += decoder.decode(chunk).split('event: reading').length - 1
          if (seen >= 2) controller.terminate()
        },
      })
      return new Response(response.body.pipeThrough(cut), { status: response.status, headers: response.headers })
    }
    const client = new HusbandryClient({ baseUrl: env.baseUrl, apiKey: mine.token, fetch: cutting })
    const reconnects: { reason: string; lastEventId: string | undefined }[] = []
    const controller = new AbortController()
    const received: StreamEvent<any>[] = []
    const iterating = (async () => {
      for await (const event of client.environment.readings.stream({ device_id: device.id, channel: 't1' }, { signal: controller.signal, onReconnect: (r) => reconnects.push(r) })) {
        received.push(event)
        if (received.length === 6) break
      }
    })()
    await waitFor(async () => env.deps.streams.openStreams === 1, 5_000)
    const base = Date.now() - 20_000
    for (let i = 0; i < 6; i++) {
      await post(device.key, [{ channel: 't1', value: 100 + i, ts: base + i }])
      if (i === 1) await waitFor(async () => reconnects.length === 1, 10_000)
    }
    await iterating
    expect(received.map((e) => e.data.value)).toEqual([100, 101, 102, 103, 104, 105])
    expect(reconnects[0]!.lastEventId).toBe(`${base + 1}:${device.id}:t1`)
    expect(connections).toBe(2)
    // Leaving the loop closed the stream on the server too.
    await waitFor(async () => env.deps.streams.openStreams === 0, 10_000)
  })

  test('curl -N receives events as they come', async () => {
    const curl = Bun.spawn(['curl', '-sN', '-H', `Authorization: Bearer ${mine.token}`, `${env.baseUrl}/api/v1/environment/readings/stream?channel=t1`], { stdout: 'pipe' })
    const reader = curl.stdout.getReader()
    let text = ''
    const readUntil = async (needle: string) => {
      const deadline = Date.now() + 10_000
      while (!text.includes(needle) && Date.now() < deadline) {
        const { value, done } = await reader.read()
        if (done) break
        text += new TextDecoder().decode(value)
      }
    }
    await readUntil(': stream open')
    const ts = Date.now() - 5_000
    await post(device.key, [{ channel: 't1', value: 21.5, ts }])
    await readUntil('21.5')
    // Heartbeats every 200 ms in this test (STREAM_HEARTBEAT_MS).
    await readUntil(': heartbeat')
    curl.kill()
    await waitFor(async () => env.deps.streams.openStreams === 0, 10_000)
    expect(text).toContain(`id: ${ts}:${device.id}:t1\nevent: reading\ndata: {"ts":"${new Date(ts).toISOString()}","device_id":"${device.id}","channel":"t1","metric":"temperature","environment_id":null,"value":21.5}\n\n`)
    expect(text).toContain(': heartbeat')
  })

  test('the account stream limit answers 429; a bad Last-Event-ID 400; a key without the scope 403', async () => {
    const held = await Promise.all([1, 2, 3].map(async () => { const s = open(env, '/api/v1/environment/readings/stream', mine.token); await s.opened; return s }))
    await problem(await env.request('GET', '/api/v1/environment/readings/stream', { token: mine.token }), 429, 'too_many_streams')
    for (const s of held) s.source.close()
    await waitFor(async () => env.deps.streams.openStreams === 0, 5_000)
    await problem(await env.request('GET', '/api/v1/environment/readings/stream', { token: mine.token, headers: { 'last-event-id': 'nonsense' } }), 400, 'invalid_parameter')
    const noScope = await env.account({ scopes: ['animals:read'] })
    await problem(await env.request('GET', '/api/v1/environment/readings/stream', { token: noScope.token }), 403, 'insufficient_scope')
    await problem(await env.request('GET', '/api/v1/events/stream', { token: noScope.token }), 403, 'insufficient_scope')
  })

  test('a revoked key\'s stream ends at once with a revoked event', async () => {
    const key = await env.account({ scopes: ['environment:read'] })
    const stream = open(env, '/api/v1/environment/readings/stream', key.token)
    await stream.opened
    await revokeKeyEverywhere(env.deps.database.db, env.deps.authenticator, key.keyId)
    await waitFor(async () => stream.received.some((r) => r.type === 'revoked'), 5_000)
    // The server ended it: the client is reconnecting, and its reconnection is refused (401).
    await waitFor(async () => env.deps.streams.openStreams === 0, 5_000)
    stream.source.close()
  })

  test('a client that does not read is told what it missed and dropped; memory stays bounded', async () => {
    // A client that sends the request and reads nothing (a small receive buffer, so the kernel holds little for it)
    // until told to on stdin, then prints everything it received.
    const port = new URL(env.baseUrl).port
    const client = Bun.spawn(['python3', '-c', `
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(('127.0.0.1', ${port}))
s.sendall(b'GET /api/v1/environment/readings/stream HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAuthorization: Bearer ${mine.token}\\r\\n\\r\\n')
sys.stdin.readline()
s.settimeout(5); out = b''
try:
  while True:
    d = s.recv(65536)
    if not d: break
    out += d
except Exception: pass
sys.stdout.write(out.decode('utf-8', 'replace'))
`], { stdin: 'pipe', stdout: 'pipe' })
    await waitFor(async () => env.deps.streams.openStreams === 1, 5_000)
    const base = Date.now() - 600_000
    // Many readings: far more than the kernel's socket buffers plus the stream's 8 KiB.
    for (let batch = 0; batch < 40 && env.deps.streams.openStreams > 0; batch++) {
      await post(device.key, Array.from({ length: 500 }, (_, i) => ({ channel: 't1', value: i, ts: base + batch * 500 + i })))
    }
    await waitFor(async () => env.deps.streams.openStreams === 0, 10_000)
    expect(env.deps.streams.openStreams).toBe(0)
    client.stdin.write('go\n')
    client.stdin.end()
    const text = await new Response(client.stdout).text()
    expect(text).toContain('event: dropped')
    expect(text).toContain('"reason":"slow_consumer"')
    expect(text).toMatch(/"last_id":"\d+:dev_/)
  })

  test('the events stream carries the account\'s events and resumes from Last-Event-ID', async () => {
    const stream = open(env, '/api/v1/events/stream', mine.token)
    await stream.opened
    const created = await (await env.request('POST', '/api/v1/animals', { token: mine.token, body: { name: 'Streamy', species_id: 'python-regius' } })).json()
    await waitFor(async () => stream.received.length >= 1, 10_000)
    expect(stream.received[0]).toMatchObject({ type: 'event', data: { type: 'animal.created', data: { object: { id: created.id } } } })
    const lastId = stream.received[0]!.id
    stream.source.close()
    const more = []
    for (const name of ['Two', 'Three']) more.push(await (await env.request('POST', '/api/v1/animals', { token: mine.token, body: { name, species_id: 'python-regius' } })).json())
    const resumed = open(env, '/api/v1/events/stream', mine.token, lastId)
    await resumed.opened
    await waitFor(async () => resumed.received.length >= 2, 10_000)
    await Bun.sleep(1_500)
    expect(resumed.received.map((r) => r.data.data.object.name)).toEqual(['Two', 'Three'])
    resumed.source.close()
  })

  test('drain ends every stream with a shutdown event', async () => {
    const stream = open(env, '/api/v1/environment/readings/stream', mine.token)
    await stream.opened
    env.deps.streams.drain()
    await waitFor(async () => stream.received.some((r) => r.type === 'shutdown'), 5_000)
    expect(env.deps.streams.openStreams).toBe(0)
    stream.source.close()
    await problem(await env.request('GET', '/api/v1/environment/readings/stream', { token: mine.token }), 503, 'service_unavailable')
  })
})
