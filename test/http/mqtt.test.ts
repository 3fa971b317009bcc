// Devices over MQTT (ingest/mqtt.ts), through real clients nobody here wrote: MQTT.js (3.1.1 and 5) and Debian's
// mosquitto_pub / mosquitto_sub, against the listener on loopback, with readings read back through the HTTP API.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { execFileSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { apiKeys } from '../../db/schema/index.ts'
import { revokeKeyEverywhere } from '../../src/auth/keys.ts'
import { createTestEnv, waitFor, type TestEnv } from '../helpers.ts'

const RATE_LIMIT = 30
let env: TestEnv
let tlsDir: string
let port: number

beforeAll(async () => {
  // A self-signed certificate for the TLS listener (openssl is part of every Debian install).
  tlsDir = mkdtempSync(join(tmpdir(), 'hrs-mqtt-tls-'))
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(tlsDir, 'key.pem'), '-out', join(tlsDir, 'cert.pem')], { stdio: 'ignore' })
  env = await createTestEnv({
    host: '127.0.0.1', deviceRateLimitPerMinute: RATE_LIMIT, rateLimitWindowSeconds: 3600,
    mqtt: { port: 0, tlsPort: 0, tlsCertFile: join(tlsDir, 'cert.pem'), tlsKeyFile: join(tlsDir, 'key.pem') },
  })
  port = env.mqtt!.port!
})
afterAll(async () => { await env.close() })

interface Device { id: string; key: string }
type Owner = Awaited<ReturnType<TestEnv['account']>>

async function setup(channels: unknown[] = [{ key: 't1', metric: 'temperature' }, { key: 'h1', metric: 'humidity' }]): Promise<{ owner: Owner; device: Device }> {
  const owner = await env.account({ scopes: ['sensors:read', 'sensors:write', 'environment:read'] })
  const res = await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub', channels } })
  expect(res.status).toBe(201)
  return { owner, device: await res.json() }
}

const clients: MqttClient[] = []
afterAll(() => { for (const c of clients) c.end(true) })

/** A connected MQTT.js client (MQTT 3.1.1 needs a username with a password; the username is free). */
async function connect(version: 4 | 5, password: string, options: IClientOptions = {}): Promise<MqttClient> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, { protocolVersion: version, username: 'firmware', password, reconnectPeriod: 0, connectTimeout: 10_000, ...options })
  clients.push(client)
  await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('error', reject) })
  return client
}

/** What a CONNECT with this password is answered: the error's code (3.1.1 return code or MQTT 5 reason code). */
async function refusedConnect(version: 4 | 5, password: string): Promise<number> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, { protocolVersion: version, username: 'firmware', password, reconnectPeriod: 0 })
  clients.push(client)
  return new Promise((resolve, reject) => {
    client.once('connect', () => reject(new Error('connected')))
    client.once('error', (error: any) => resolve(error.code))
  })
}

/** Stored readings of a device, through GET /environment/readings. */
async function readingsOf(owner: Owner, deviceId: string): Promise<{ channel: string; value: number; ts: string }[]> {
  const res = await env.request('GET', `/api/v1/environment/readings?device_id=${deviceId}&from=2000-01-01T00:00:00Z&limit=1000`, { token: owner.token })
  expect(res.status).toBe(200)
  return (await res.json()).data
}

/** The next message on a topic the client subscribed to. */
const nextMessage = (client: MqttClient, topic: string) => new Promise<{ payload: any; retain: boolean }>((resolve) => {
  const onMessage = (t: string, payload: Buffer, packet: any) => {
    if (t !== topic) return
    client.off('message', onMessage)
    resolve({ payload: JSON.parse(payload.toString()), retain: packet.retain })
  }
  client.on('message', onMessage)
})

/** Runs a command without blocking this process (the listener under test lives in it). */
async function run(command: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn([command, ...args], { stdout: 'pipe', stderr: 'pipe', timeout: 15_000 })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { code, stdout, stderr }
}

const closed = (client: MqttClient) => new Promise<'closed'>((resolve) => client.once('close', () => resolve('closed')))
const ts = (offsetMs: number) => new Date(Date.now() - 60_000 + offsetMs).toISOString()

describe.each([4, 5] as const)('MQTT %s (MQTT.js)', (version) => {
  test('QoS 1 is acknowledged once stored: the readings are visible at once through GET /environment/readings', async () => {
    const { owner, device } = await setup()
    const client = await connect(version, device.key)
    const readings = [{ channel: 't1', value: 27.5, ts: ts(0) }, { channel: 'h1', value: 61, ts: ts(0) }, { channel: 'x9', value: 3, ts: ts(1) }]
    await client.publishAsync(`devices/${device.id}/readings`, JSON.stringify({ readings }), { qos: 1 })
    const stored = await readingsOf(owner, device.id)
    expect(stored.map((r) => `${r.channel}=${r.value}`).sort()).toEqual(['h1=61', 't1=27.5', 'x9=3'])
    // An unmapped channel is noted on the device as over HTTP; last_seen_at is written within a second.
    await waitFor(async () => {
      const read = await (await env.request('GET', `/api/v1/sensors/devices/${device.id}`, { token: owner.token })).json()
      return read.unmapped_channels.includes('x9') && read.last_seen_at !== null
    }, 5_000)
  })

  test('QoS 0 is stored too (best effort), and the ping topic takes t1=27.5&h1=61', async () => {
    const { owner, device } = await setup()
    const client = await connect(version, device.key)
    await client.publishAsync(`devices/${device.id}/readings`, JSON.stringify({ readings: [{ channel: 't1', value: 1, ts: ts(0) }] }), { qos: 0 })
    await client.publishAsync(`devices/${device.id}/ping`, 't1=27.5&h1=61', { qos: 1 })
    await waitFor(async () => (await readingsOf(owner, device.id)).length === 3, 5_000)
    expect((await readingsOf(owner, device.id)).map((r) => `${r.channel}=${r.value}`).sort()).toEqual(['h1=61', 't1=1', 't1=27.5'])
  })

  test('the configuration is retained on devices/{id}/config and published again when the channels change', async () => {
    const { owner, device } = await setup()
    const client = await connect(version, device.key)
    const first = nextMessage(client, `devices/${device.id}/config`)
    await client.subscribeAsync(`devices/${device.id}/config`, { qos: 1 })
    const retained = await first
    expect(retained.retain).toBe(true)
    // The channels exactly as GET /sensors/devices/{id} shows them.
    const read = await (await env.request('GET', `/api/v1/sensors/devices/${device.id}`, { token: owner.token })).json()
    expect(retained.payload).toEqual({ device_id: device.id, channels: read.channels })
    expect(retained.payload.channels.map((c: any) => c.key)).toEqual(['t1', 'h1'])
    const update = nextMessage(client, `devices/${device.id}/config`)
    const patched = await env.request('PATCH', `/api/v1/sensors/devices/${device.id}`, { token: owner.token, body: { channels: [{ key: 'h2', metric: 'humidity' }] } })
    expect(patched.status).toBe(200)
    expect((await update).payload.channels.map((c: any) => c.key)).toEqual(['h2'])
  })

  test('per-reading refusals arrive on devices/{id}/errors with the HTTP codes; the rest are stored', async () => {
    const { owner, device } = await setup()
    const client = await connect(version, device.key)
    await client.subscribeAsync(`devices/${device.id}/errors`, { qos: 1 })
    const report = nextMessage(client, `devices/${device.id}/errors`)
    const readings = [{ channel: 't1', value: 1, ts: ts(0) }, { channel: 't1', value: 'warm' }, { channel: 'bad channel!', value: 1 }, { channel: 't1', value: 2, ts: '2999-01-01T00:00:00Z' }]
    await client.publishAsync(`devices/${device.id}/readings`, JSON.stringify({ readings }), { qos: 1 })
    const { payload } = await report
    expect(payload).toMatchObject({ topic: `devices/${device.id}/readings`, code: 'rejected_readings', accepted: 1 })
    expect(payload.rejected.map((r: any) => [r.index, r.code])).toEqual([[1, 'invalid_value'], [2, 'invalid_channel'], [3, 'timestamp_in_future']])
    expect(await readingsOf(owner, device.id)).toHaveLength(1)
  })

  test('the errors topic says how many readings were refused and whether any were stored (none: it says so)', async () => {
    const { owner, device } = await setup()
    const client = await connect(version, device.key)
    await client.subscribeAsync(`devices/${device.id}/errors`, { qos: 1 })
    const some = nextMessage(client, `devices/${device.id}/errors`)
    await client.publishAsync(`devices/${device.id}/readings`, JSON.stringify({ readings: [{ channel: 't1', value: 1, ts: ts(0) }, { channel: 't1', value: 'warm' }, { channel: 't1', value: 'cold' }] }), { qos: 1 })
    expect((await some).payload).toMatchObject({ code: 'rejected_readings', accepted: 1, message: '2 readings were refused; the other one was stored.' })
    const none = nextMessage(client, `devices/${device.id}/errors`)
    await client.publishAsync(`devices/${device.id}/readings`, JSON.stringify({ readings: [{ channel: 't1', value: 'warm' }] }), { qos: 1 })
    expect((await none).payload).toMatchObject({ code: 'rejected_readings', accepted: 0, message: '1 reading was refused; none was stored.' })
    expect(await readingsOf(owner, device.id)).toHaveLength(1)
  })

  test('a malformed payload changes nothing and is reported on the errors topic (MQTT 5 also refuses it in the PUBACK)', async () => {
    const { owner, device } = await setup()
    const client = await connect(version, device.key)
    await client.subscribeAsync(`devices/${device.id}/errors`, { qos: 1 })
    for (const [payload, code] of [['{"readings": [', 'malformed_json'], ['{"readings": [], "extra": 1}', 'validation_failed'], ['[1,2]', 'validation_failed']] as const) {
      const report = nextMessage(client, `devices/${device.id}/errors`)
      const outcome = await client.publishAsync(`devices/${device.id}/readings`, payload, { qos: 1 }).then(() => 'acknowledged', (error: any) => `refused ${error.code}`)
      expect(outcome).toBe(version === 5 ? 'refused 135' : 'acknowledged')
      expect((await report).payload).toMatchObject({ code })
    }
    const report = nextMessage(client, `devices/${device.id}/errors`)
    await client.publishAsync(`devices/${device.id}/ping`, 't1=warm', { qos: 1 }).catch(() => {})
    expect((await report).payload).toMatchObject({ code: 'validation_failed', errors: [{ path: '/payload/t1', message: 'value must be a finite number of magnitude at most 2^360 (about 2.35e108)' }] })
    expect(await readingsOf(owner, device.id)).toHaveLength(0)
    expect(client.connected).toBe(true)
  })

  test('CONNECT: an unknown key is a bad username or password, a personal key is not authorized', async () => {
    const owner = await env.account({ scopes: ['sensors:write'] })
    expect(await refusedConnect(version, 'hrs_dev_notakeyatall')).toBe(version === 5 ? 0x86 : 4)
    expect(await refusedConnect(version, owner.token)).toBe(version === 5 ? 0x87 : 5)
  })

  test('a device may publish and subscribe only under its own id', async () => {
    const { device } = await setup()
    const { owner: otherOwner, device: other } = await setup()
    const client = await connect(version, device.key)
    // Subscriptions: someone else's topic, a wildcard, and its own topic other than config and errors are failures in the SUBACK.
    // (MQTT.js rejects a SUBACK holding any failure, with the packet.)
    const suback = await client.subscribeAsync([`devices/${other.id}/config`, 'devices/+/config', '#', `devices/${device.id}/readings`, `devices/${device.id}/errors`], { qos: 1 })
      .then(() => undefined, (error: any) => error.packet)
    expect(suback.granted).toEqual(version === 5 ? [0x87, 0x87, 0x87, 0x87, 1] : [0x80, 0x80, 0x80, 0x80, 1])
    // Publishing to another device: refused in the PUBACK (MQTT 5) or by closing the connection (MQTT 3.1.1).
    const outcome = await Promise.race([
      client.publishAsync(`devices/${other.id}/readings`, JSON.stringify({ readings: [{ channel: 't1', value: 1 }] }), { qos: 1 }).then(() => 'acknowledged', (error: any) => `refused ${error.code}`),
      closed(client),
    ])
    expect(outcome).toBe(version === 5 ? 'refused 135' : 'closed')
    expect(await readingsOf(otherOwner, other.id)).toHaveLength(0)
  })

  test('a revoked key is refused at CONNECT, and its open connection is closed within a second', async () => {
    const { device } = await setup()
    const client = await connect(version, device.key)
    const [key] = await env.deps.database.db.select().from(apiKeys).where(eq(apiKeys.deviceId, device.id))
    const wasClosed = closed(client)
    const started = Date.now()
    await revokeKeyEverywhere(env.deps.database.db, env.deps.authenticator, key!.id)
    expect(await wasClosed).toBe('closed')
    expect(Date.now() - started).toBeLessThan(1_000)
    expect(await refusedConnect(version, device.key)).toBe(version === 5 ? 0x86 : 4)
  })

  test('a revocation that lands between the key check and the connection being ready still closes it', async () => {
    const { owner, device } = await setup()
    const [key] = await env.deps.database.db.select().from(apiKeys).where(eq(apiKeys.deviceId, device.id))
    // The key is revoked (in every process) while the listener reads the device for this CONNECT: after the key was
    // checked, before aedes calls the connection ready.
    const devices = env.deps.ingest.devices
    const read = devices.get.bind(devices)
    devices.get = ((id: string) => id !== device.id ? read(id)
      : revokeKeyEverywhere(env.deps.database.db, env.deps.authenticator, key!.id).then(() => read(id))) as typeof devices.get
    try {
      const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, { protocolVersion: version, username: 'firmware', password: device.key, reconnectPeriod: 0, connectTimeout: 10_000 })
      clients.push(client)
      const wasClosed = closed(client)
      expect(await Promise.race([wasClosed, Bun.sleep(3_000).then(() => 'still open')])).toBe('closed')
    } finally {
      devices.get = read
    }
    expect(await readingsOf(owner, device.id)).toHaveLength(0)
  })

  test('HTTP requests and MQTT publishes of one device key count against one limit', async () => {
    const { device } = await setup()
    const windowMs = env.config.rateLimitWindowSeconds * 1000
    // Device limits count in windows aligned to the clock: a run that crosses a window's end starts again, once.
    let refusedAt: number | undefined
    for (let attempt = 0; attempt < 2 && refusedAt === undefined; attempt++) {
      const window = Math.floor(Date.now() / windowMs)
      const client = await connect(version, device.key)
      const overHttp = attempt === 0 ? 10 : 0
      for (let i = 0; i < overHttp; i++) expect((await env.request('GET', `/api/v1/sensors/ping?key=${device.key}&t1=${i}`)).status).toBe(204)
      for (let i = 0; i <= RATE_LIMIT; i++) {
        const outcome = await Promise.race([
          client.publishAsync(`devices/${device.id}/ping`, `t1=${i}`, { qos: 1 }).then(() => 'acknowledged', (error: any) => `refused ${error.code}`),
          closed(client),
        ])
        if (outcome === 'acknowledged') continue
        expect(outcome).toBe(version === 5 ? 'refused 135' : 'closed')
        if (Math.floor(Date.now() / windowMs) === window) refusedAt = overHttp + i
        break
      }
      client.end(true)
    }
    expect(refusedAt).toBe(RATE_LIMIT)
    // And the other way round: the window spent over MQTT, the HTTP path refuses too.
    const res = await env.request('GET', `/api/v1/sensors/ping?key=${device.key}&t1=1`)
    expect(res.status).toBe(429)
  })

  test('publishes count against the device key\'s rate limit as requests do over HTTP', async () => {
    const { owner, device } = await setup()
    const windowMs = env.config.rateLimitWindowSeconds * 1000
    const client = await connect(version, device.key)
    let refusedAt: number | undefined
    let sent = 0
    // Device limits count in windows aligned to the clock: a run that crosses a window's end starts again, once.
    for (let attempt = 0; attempt < 2 && refusedAt === undefined; attempt++) {
      const window = Math.floor(Date.now() / windowMs)
      for (let i = 0; i <= RATE_LIMIT; i++, sent++) {
        const outcome = await Promise.race([
          client.publishAsync(`devices/${device.id}/ping`, `t1=${sent}&ts=${Date.parse(ts(sent))}`, { qos: 1 }).then(() => 'acknowledged', (error: any) => `refused ${error.code}`),
          closed(client),
        ])
        if (outcome !== 'acknowledged') {
          expect(outcome).toBe(version === 5 ? 'refused 135' : 'closed')
          if (Math.floor(Date.now() / windowMs) === window) refusedAt = i
          break
        }
      }
      if (!client.connected) break
    }
    expect(refusedAt).toBe(RATE_LIMIT)
    expect((await readingsOf(owner, device.id)).length).toBe(sent)
  })
})

describe('MQTT listener, beyond one client', () => {
  test('mosquitto_pub and mosquitto_sub (Debian\'s clients): QoS 1 publish stored, retained config read, a bad key refused', async () => {
    const { owner, device } = await setup()
    const base = ['-h', '127.0.0.1', '-p', String(port), '-u', 'firmware', '-P', device.key]
    for (const protocol of ['mqttv311', 'mqttv5']) {
      const pub = await run('mosquitto_pub', [...base, '-V', protocol, '-q', '1', '-t', `devices/${device.id}/readings`, '-m', JSON.stringify({ readings: [{ channel: 't1', value: protocol.length, ts: ts(protocol.length) }] })])
      expect(pub).toEqual({ code: 0, stdout: '', stderr: '' })
    }
    expect((await readingsOf(owner, device.id)).map((r) => r.value).sort()).toEqual([6, 8])
    const sub = await run('mosquitto_sub', [...base, '-V', 'mqttv5', '-t', `devices/${device.id}/config`, '-C', '1', '-W', '10', '-F', '%r %t %p'])
    expect(sub.code).toBe(0)
    expect(sub.stdout).toStartWith(`1 devices/${device.id}/config {"device_id":"${device.id}"`)
    const refused = await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(port), '-u', 'x', '-P', 'hrs_dev_wrong', '-t', `devices/${device.id}/readings`, '-m', '{}'])
    expect(refused.code).not.toBe(0)
    expect(refused.stderr.toLowerCase()).toContain('bad user name or password')
  })

  test('MQTT over TLS on MQTTS_PORT, with the configured certificate', async () => {
    const { owner, device } = await setup()
    const client = mqtt.connect(`mqtts://127.0.0.1:${env.mqtt!.tlsPort}`, { protocolVersion: 5, username: 'firmware', password: device.key, reconnectPeriod: 0, ca: [await Bun.file(join(tlsDir, 'cert.pem')).text()] })
    clients.push(client)
    await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('error', reject) })
    await client.publishAsync(`devices/${device.id}/readings`, JSON.stringify({ readings: [{ channel: 't1', value: 5, ts: ts(0) }] }), { qos: 1 })
    expect(await readingsOf(owner, device.id)).toHaveLength(1)
  })

  test('a payload over the limit closes the connection and stores nothing; the listener keeps serving', async () => {
    const { owner, device } = await setup()
    const client = await connect(5, device.key)
    const big = JSON.stringify({ readings: [{ channel: 't1', value: 1, pad: 'x'.repeat(1_100_000) }] })
    const outcome = await Promise.race([client.publishAsync(`devices/${device.id}/readings`, big, { qos: 1 }).then(() => 'acknowledged', () => 'refused'), closed(client)])
    expect(outcome).not.toBe('acknowledged')
    const again = await connect(5, device.key)
    await again.publishAsync(`devices/${device.id}/readings`, JSON.stringify({ readings: [{ channel: 't1', value: 2, ts: ts(0) }] }), { qos: 1 })
    expect((await readingsOf(owner, device.id)).map((r) => r.value)).toEqual([2])
  })

  test('garbage bytes on the socket never crash or stall the listener', async () => {
    const { device } = await setup()
    for (const garbage of [Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0x7f]), Buffer.from('GET / HTTP/1.1\r\n\r\n'), Buffer.alloc(4096, 0x30)]) {
      const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {}, close() {} } })
      socket.write(garbage)
      socket.end()
    }
    const client = await connect(4, device.key)
    await client.publishAsync(`devices/${device.id}/ping`, 't1=1', { qos: 1 })
  })

  test('/metrics counts connected devices, publishes by outcome and refusals by reason', async () => {
    const { device } = await setup()
    await connect(5, device.key)
    const text = await (await env.request('GET', '/metrics')).text()
    const value = (series: string) => Number(text.split('\n').find((line) => line.startsWith(series + ' '))?.slice(series.length + 1))
    expect(value('hrs_mqtt_connected_devices')).toBeGreaterThanOrEqual(1)
    expect(value('hrs_mqtt_publishes_total{qos="1",outcome="stored"}')).toBeGreaterThan(0)
    expect(value('hrs_mqtt_refusals_total{reason="bad_key"}')).toBeGreaterThan(0)
    expect(value('hrs_mqtt_refusals_total{reason="topic"}')).toBeGreaterThan(0)
  })
})
