// MQTT sessions as a fleet and an attacker use them (issue 31): a session confined to the device that made it,
// QoS 2 stored exactly once and QoS 1 redelivery stored once, the connected-devices gauge after connect cycles, and
// malformed CONNECTs. MQTT.js where it can say it; raw packets (mqtt-packet, MQTT.js's own codec, over node:net)
// where the client library hides the case (DUP resends, packets left unanswered, a password without a username).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect as tcpConnect, type Socket } from 'node:net'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import mqttPacket, { type Packet } from 'mqtt-packet'
import { createTestEnv, waitFor, type TestEnv } from '../helpers.ts'

let env: TestEnv
let port: number

beforeAll(async () => {
  env = await createTestEnv({ host: '127.0.0.1', mqtt: { port: 0, tlsPort: undefined, tlsCertFile: undefined, tlsKeyFile: undefined } })
  port = env.mqtt!.port!
})
afterAll(async () => { await env.close() })

interface Device { id: string; key: string }
type Owner = Awaited<ReturnType<TestEnv['account']>>

/** A device in an account of its own (each call: a new account). */
async function setup(): Promise<{ owner: Owner; device: Device }> {
  const owner = await env.account({ scopes: ['sensors:read', 'sensors:write', 'environment:read'] })
  const res = await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })
  expect(res.status).toBe(201)
  return { owner, device: await res.json() }
}

async function readingsOf(owner: Owner, deviceId: string): Promise<{ channel: string; value: number; ts: string }[]> {
  const res = await env.request('GET', `/api/v1/environment/readings?device_id=${deviceId}&from=2000-01-01T00:00:00Z&limit=1000`, { token: owner.token })
  expect(res.status).toBe(200)
  return (await res.json()).data
}

const clients: MqttClient[] = []
afterAll(() => { for (const c of clients) c.end(true) })

/** A connected MQTT.js client, with every message it receives from the start (a resumed session's queue included). */
async function connect(version: 4 | 5, password: string, options: IClientOptions = {}): Promise<{ client: MqttClient; sessionPresent: boolean; seen: { topic: string; payload: string }[] }> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, { protocolVersion: version, username: 'firmware', password, reconnectPeriod: 0, connectTimeout: 10_000, ...options })
  clients.push(client)
  const seen: { topic: string; payload: string }[] = []
  client.on('message', (topic, payload) => seen.push({ topic, payload: payload.toString() }))
  const connack = await new Promise<any>((resolve, reject) => { client.once('connect', resolve); client.once('error', reject) })
  return { client, sessionPresent: connack.sessionPresent, seen }
}

/** Persistent-session options: 3.1.1's clean=false, MQTT 5's Clean Start 0 with a session expiry. */
const persistent = (version: 4 | 5, clientId: string): IClientOptions =>
  ({ clientId, clean: false, ...(version === 5 ? { properties: { sessionExpiryInterval: 3600 } } : {}) })

/** A connection speaking raw MQTT packets: what is sent is exactly what the test says (DUP flags, no PUBREL…). */
class Raw {
  private readonly parser: ReturnType<typeof mqttPacket.parser>
  private readonly received: Packet[] = []
  private waiting: (() => void) | undefined
  closed = false
  private constructor(private readonly socket: Socket, readonly version: 4 | 5) {
    this.parser = mqttPacket.parser({ protocolVersion: version })
    this.parser.on('packet', (packet) => { this.received.push(packet); this.waiting?.() })
    socket.on('data', (data: Buffer) => this.parser.parse(data))
    socket.on('close', () => { this.closed = true; this.waiting?.() })
    socket.on('error', () => {})
  }

  static async open(version: 4 | 5): Promise<Raw> {
    const socket = tcpConnect({ host: '127.0.0.1', port, noDelay: true })
    await new Promise<void>((resolve, reject) => { socket.once('connect', () => resolve()); socket.once('error', reject) })
    return new Raw(socket, version)
  }

  send(packet: Record<string, unknown>) { this.socket.write(mqttPacket.generate(packet as unknown as Packet, { protocolVersion: this.version })) }
  sendBytes(bytes: Buffer) { this.socket.write(bytes) }

  /** The next packet of this kind (others are skipped), or undefined if the connection closes or time runs out. */
  async next(cmd: string, timeoutMs = 5_000): Promise<any> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const index = this.received.findIndex((packet) => packet.cmd === cmd)
      if (index >= 0) return this.received.splice(index, 1)[0]
      if (this.closed || Date.now() >= deadline) return undefined
      await new Promise<void>((resolve) => { this.waiting = resolve; setTimeout(resolve, Math.max(1, deadline - Date.now())) })
    }
  }

  close() { this.socket.destroy() }

  static async connected(version: 4 | 5, key: string, options: Record<string, unknown> = {}): Promise<{ raw: Raw; connack: any }> {
    const raw = await Raw.open(version)
    raw.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clean: true, keepalive: 60, clientId: `raw-${crypto.randomUUID()}`, username: 'firmware', password: Buffer.from(key), ...options })
    return { raw, connack: await raw.next('connack') }
  }
}

const rawSessions: Raw[] = []
afterAll(() => { for (const raw of rawSessions) raw.close() })
async function rawConnected(version: 4 | 5, key: string, options: Record<string, unknown> = {}) {
  const opened = await Raw.connected(version, key, options)
  rawSessions.push(opened.raw)
  const code = version === 5 ? opened.connack?.reasonCode : opened.connack?.returnCode
  return { ...opened, code }
}

const untimed = (value: number) => JSON.stringify({ readings: [{ channel: 't1', value }] })

describe.each([4, 5] as const)('MQTT %s: a session belongs to the device that made it', (version) => {
  test('another account\'s device with the same client id gets a session of its own: none of the first one\'s messages', async () => {
    const { device: d } = await setup()
    const { device: b } = await setup()
    const clientId = `shared-${version}-${crypto.randomUUID().slice(0, 8)}`
    // D makes a persistent session with client id X, subscribes to its errors and config, goes away.
    const first = await connect(version, d.key, persistent(version, clientId))
    await first.client.subscribeAsync([`devices/${d.id}/errors`, `devices/${d.id}/config`], { qos: 1 })
    await first.client.endAsync()
    // D's key publishes `{bad` from another connection: an error report is queued for the session X.
    const other = await connect(version, d.key)
    await other.client.publishAsync(`devices/${d.id}/readings`, '{bad', { qos: 1 }).catch(() => {})
    await other.client.endAsync()
    // B (another account) connects with client id X, clean session off.
    const intruder = await connect(version, b.key, persistent(version, clientId))
    await Bun.sleep(500)
    expect(intruder.sessionPresent).toBe(false)
    expect(intruder.seen).toEqual([])
    // D's session is still D's: it resumes with its queued error report.
    const back = await connect(version, d.key, persistent(version, clientId))
    expect(back.sessionPresent).toBe(true)
    await waitFor(async () => back.seen.some((m) => m.topic === `devices/${d.id}/errors` && m.payload.includes('malformed_json')), 5_000)
    expect(back.seen.every((m) => m.topic.startsWith(`devices/${d.id}/`))).toBe(true)
  })

  test('another device\'s CONNECT with a connected device\'s client id does not disconnect it', async () => {
    const { owner, device: d } = await setup()
    const { device: b } = await setup()
    const clientId = `taken-${version}-${crypto.randomUUID().slice(0, 8)}`
    const holder = await connect(version, d.key, { clientId })
    let closedAt: number | undefined
    holder.client.on('close', () => { closedAt ??= Date.now() })
    const second = await connect(version, b.key, { clientId })
    expect(second.client.connected).toBe(true)
    await Bun.sleep(300)
    expect(closedAt).toBeUndefined()
    await holder.client.publishAsync(`devices/${d.id}/readings`, JSON.stringify({ readings: [{ channel: 't1', value: 1, ts: new Date(Date.now() - 1000).toISOString() }] }), { qos: 1 })
    expect(await readingsOf(owner, d.id)).toHaveLength(1)
  })
})

describe.each([4, 5] as const)('MQTT %s (raw packets): sent again is stored once', (version) => {
  const publish = (messageId: number, qos: 1 | 2, dup: boolean, topic: string, payload: string) =>
    ({ cmd: 'publish', topic, payload: Buffer.from(payload), qos, dup, retain: false, messageId })

  test('QoS 2 id 77 without ts, then the same with DUP=1 before PUBREL: one reading; PUBREL then PUBCOMP', async () => {
    const { owner, device } = await setup()
    const { raw, code } = await rawConnected(version, device.key)
    expect(code).toBe(0)
    raw.send(publish(77, 2, false, `devices/${device.id}/readings`, untimed(1)))
    expect((await raw.next('pubrec'))?.messageId).toBe(77)
    await Bun.sleep(5) // the resend lands on another receive time
    raw.send(publish(77, 2, true, `devices/${device.id}/readings`, untimed(1)))
    expect((await raw.next('pubrec'))?.messageId).toBe(77)
    raw.send({ cmd: 'pubrel', messageId: 77 })
    expect((await raw.next('pubcomp'))?.messageId).toBe(77)
    expect(await readingsOf(owner, device.id)).toHaveLength(1)
  })

  test('QoS 2 resent after reconnecting to the persistent session: session present, one reading', async () => {
    const { owner, device } = await setup()
    const clientId = `q2-${crypto.randomUUID().slice(0, 8)}`
    const persistentConnect = { clientId, clean: false, ...(version === 5 ? { properties: { sessionExpiryInterval: 3600 } } : {}) }
    const first = await rawConnected(version, device.key, persistentConnect)
    expect(first.code).toBe(0)
    first.raw.send(publish(78, 2, false, `devices/${device.id}/readings`, untimed(2)))
    expect((await first.raw.next('pubrec'))?.messageId).toBe(78)
    first.raw.close() // PUBREC never answered with PUBREL: the QoS 2 message is still in flight
    await Bun.sleep(50)
    const second = await rawConnected(version, device.key, persistentConnect)
    expect(second.code).toBe(0)
    // [MQTT-3.2.2-2]: the session (holding packet 78) is present, though it has no subscriptions.
    expect(second.connack.sessionPresent).toBe(true)
    second.raw.send(publish(78, 2, true, `devices/${device.id}/readings`, untimed(2)))
    expect((await second.raw.next('pubrec'))?.messageId).toBe(78)
    second.raw.send({ cmd: 'pubrel', messageId: 78 })
    expect((await second.raw.next('pubcomp'))?.messageId).toBe(78)
    expect(await readingsOf(owner, device.id)).toHaveLength(1)
    // After PUBREL the id is free: a new QoS 2 message with it is stored.
    second.raw.send(publish(78, 2, false, `devices/${device.id}/readings`, untimed(3)))
    expect((await second.raw.next('pubrec'))?.messageId).toBe(78)
    expect((await readingsOf(owner, device.id)).map((r) => r.value).sort()).toEqual([2, 3])
  })

  test('QoS 1 without ts, its PUBACK "lost", resent with DUP=1 (same connection, then after reconnecting): one reading', async () => {
    const { owner, device } = await setup()
    const clientId = `q1-${crypto.randomUUID().slice(0, 8)}`
    const persistentConnect = { clientId, clean: false, ...(version === 5 ? { properties: { sessionExpiryInterval: 3600 } } : {}) }
    const first = await rawConnected(version, device.key, persistentConnect)
    first.raw.send(publish(5, 1, false, `devices/${device.id}/readings`, untimed(5)))
    expect((await first.raw.next('puback'))?.messageId).toBe(5)
    await Bun.sleep(5)
    first.raw.send(publish(5, 1, true, `devices/${device.id}/readings`, untimed(5)))
    expect((await first.raw.next('puback'))?.messageId).toBe(5)
    first.raw.send(publish(6, 1, false, `devices/${device.id}/ping`, 't1=6'))
    expect((await first.raw.next('puback'))?.messageId).toBe(6)
    first.raw.close()
    await Bun.sleep(50)
    const second = await rawConnected(version, device.key, persistentConnect)
    second.raw.send(publish(6, 1, true, `devices/${device.id}/ping`, 't1=6'))
    expect((await second.raw.next('puback'))?.messageId).toBe(6)
    expect((await readingsOf(owner, device.id)).map((r) => r.value).sort()).toEqual([5, 6])
    // The id used again without DUP is a new message.
    second.raw.send(publish(6, 1, false, `devices/${device.id}/ping`, 't1=7'))
    expect((await second.raw.next('puback'))?.messageId).toBe(6)
    expect((await readingsOf(owner, device.id)).map((r) => r.value).sort()).toEqual([5, 6, 7])
  })

  test('a DUP=1 resend whose first delivery this server never saw: readings with ts stored, those without refused and reported', async () => {
    const { owner, device } = await setup()
    const { client } = await connect(version, device.key)
    await client.subscribeAsync(`devices/${device.id}/errors`, { qos: 1 })
    const report = new Promise<any>((resolve) => client.on('message', (_t, payload) => resolve(JSON.parse(payload.toString()))))
    const { raw } = await rawConnected(version, device.key)
    const ts = new Date(Date.now() - 5_000).toISOString()
    raw.send(publish(9, 1, true, `devices/${device.id}/readings`, JSON.stringify({ readings: [{ channel: 't1', value: 1 }, { channel: 't1', value: 2, ts }] })))
    expect((await raw.next('puback'))?.messageId).toBe(9)
    expect((await readingsOf(owner, device.id)).map((r) => r.value)).toEqual([2])
    expect(await report).toMatchObject({ code: 'rejected_readings', accepted: 1, rejected: [{ index: 0, code: 'redelivery_without_ts' }] })
  })
})

describe('MQTT: malformed CONNECTs', () => {
  test('MQTT 3.1.1: a password without the username flag is refused (CONNACK 4)', async () => {
    const { device } = await setup()
    const raw = await Raw.open(4)
    rawSessions.push(raw)
    // mqtt-packet will not write this packet; the bytes are written by hand: flags 0x42 = password + clean session.
    const clientId = Buffer.from('nouser')
    const password = Buffer.from(device.key)
    const str = (b: Buffer) => Buffer.concat([Buffer.from([b.length >> 8, b.length & 0xff]), b])
    const body = Buffer.concat([str(Buffer.from('MQTT')), Buffer.from([4, 0x42, 0, 60]), str(clientId), str(password)])
    raw.sendBytes(Buffer.concat([Buffer.from([0x10, body.length]), body]))
    expect((await raw.next('connack'))?.returnCode).toBe(4)
  })

  test.each([4, 5] as const)('MQTT %s: a will on `#` or on another device\'s topic is refused; one on its own readings topic is accepted', async (version) => {
    const { device } = await setup()
    const { device: other } = await setup()
    const will = (topic: string) => ({ will: { topic, payload: Buffer.from('gone'), qos: 0, retain: false } })
    expect((await rawConnected(version, device.key, will('#'))).code).toBe(version === 5 ? 0x87 : 5)
    expect((await rawConnected(version, device.key, will(`devices/${other.id}/readings`))).code).toBe(version === 5 ? 0x87 : 5)
    expect((await rawConnected(version, device.key, will(`devices/${device.id}/readings`))).code).toBe(0)
  })
})

describe('MQTT: nothing held across connect cycles', () => {
  const gauge = async () => {
    const text = await (await env.request('GET', '/metrics')).text()
    return Number(text.split('\n').find((line) => line.startsWith('hrs_mqtt_connected_devices '))?.split(' ')[1])
  }

  test('connect → CONNACK → DISCONNECT, 20 at a time, and closing right after CONNECT: the gauge returns to the open connections', async () => {
    const { device } = await setup()
    const before = await gauge()
    const held = await rawConnected(4, device.key)
    expect(held.code).toBe(0)
    await waitFor(async () => (await gauge()) === before + 1, 5_000)
    for (let round = 0; round < 15; round++) {
      await Promise.all(Array.from({ length: 20 }, async (_, i) => {
        const version = i % 2 ? 5 : 4
        if (i % 4 === 0) {
          // CONNECT, then the socket closed at once (before or while the key is checked).
          const raw = await Raw.open(version)
          raw.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clean: true, keepalive: 60, clientId: `c-${round}-${i}`, username: 'firmware', password: Buffer.from(device.key) })
          if (i % 8 === 0) await Bun.sleep(1)
          raw.close()
          return
        }
        // Some share one client id: each takes the session over from the one before (it may close before its CONNACK).
        const shared = i % 3 === 0
        const { raw, connack } = await Raw.connected(version, device.key, { clientId: shared ? 'same-client-id' : `c-${round}-${i}` })
        if (!shared) expect(connack?.cmd).toBe('connack')
        raw.send({ cmd: 'disconnect' })
        await raw.next('never', 2_000)
        raw.close()
      }))
    }
    await waitFor(async () => (await gauge()) === before + 1, 5_000)
    held.raw.close()
    await waitFor(async () => (await gauge()) === before, 5_000)
  })
})
