// A reconnect storm over MQTT (issue 31): every device of a site reconnects at once with a key the server has not
// cached (after a restart, or on a new node). The keys are read many per query, and a database that fails to
// answer for a while keeps devices waiting instead of refusing them; CONNACK 3 only when it stays down.
import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import mqtt from 'mqtt'
import { Authenticator } from '../../src/auth/authenticator.ts'
import { patiently } from '../../src/auth/patience.ts'
import { createDevice } from '../../src/modules/sensors/service.ts'
import { hashToken } from '../../src/tokens.ts'
import { createTestEnv, type TestEnv } from '../helpers.ts'

const DEVICES = 200
let env: TestEnv
let port: number
const devices: { id: string; key: string }[] = []

beforeAll(async () => {
  env = await createTestEnv({ host: '127.0.0.1', mqtt: { port: 0, tlsPort: undefined, tlsCertFile: undefined, tlsKeyFile: undefined } })
  port = env.mqtt!.port!
  // Made as POST /sensors/devices makes them (the API's rate limit would slow two hundred of them down).
  const owner = await env.account({ scopes: ['sensors:write'] })
  for (let i = 0; i < DEVICES; i++) {
    const { row, key } = await createDevice(env.deps, owner.accountId, { name: `Hub ${i}`, channels: [{ key: 't1', metric: 'temperature' }] })
    devices.push({ id: row.id, key: key! })
  }
})
afterAll(async () => { await env.close() })

/** CONNECT with a key: the CONNACK's code (0 accepted), MQTT 3.1.1. */
async function connackCode(key: string): Promise<number> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, { protocolVersion: 4, username: 'firmware', password: key, reconnectPeriod: 0, connectTimeout: 30_000 })
  try {
    return await new Promise<number>((resolve) => {
      client.once('connect', () => resolve(0))
      client.once('error', (error: any) => resolve(error.code ?? -1))
    })
  } finally {
    client.end(true)
  }
}

/** Reads of keys the authenticator makes (each one query), spied on; `fail` makes the first ones throw. */
function countReads(authenticator: Authenticator, fail: (call: number) => boolean = () => false) {
  const calls: number[] = []
  const original = (authenticator as any).readKeys.bind(authenticator)
  const spy = spyOn(authenticator as any, 'readKeys').mockImplementation(async (hashes: any) => {
    calls.push(hashes.length)
    if (fail(calls.length)) throw Object.assign(new Error('canceling statement due to user request'), { code: '57014' })
    return original(hashes)
  })
  return { calls, restore: () => spy.mockRestore() }
}

describe('MQTT reconnect storm', () => {
  test(`${DEVICES} keys checked at once by an empty cache: a few queries, each key's own principal (unknown keys none)`, async () => {
    const authenticator = new Authenticator(env.deps.database.db, env.deps.shared, 60_000)
    const reads = countReads(authenticator)
    try {
      const unknown = devices[0]!.key.slice(0, -4) + 'zzzz'
      const principals = await Promise.all([...devices.map((device) => authenticator.verify(device.key)), authenticator.verify(unknown)])
      expect(principals.map((principal) => principal?.deviceId ?? null)).toEqual([...devices.map((device) => device.id), null])
      // Two reads go at once; the keys arriving meanwhile queue and go together (the made-up key fails its
      // checksum and is never read).
      expect(reads.calls).toEqual([1, 1, DEVICES - 2])
    } finally {
      reads.restore()
    }
  })

  test(`${DEVICES} devices with uncached keys connect over MQTT at once: none refused`, async () => {
    const codes = await Promise.all(devices.map((device) => connackCode(device.key)))
    expect(codes.filter((code) => code !== 0)).toEqual([])
  })

  test('a database failing for a while keeps a key check (and a CONNECT) waiting, not refused', async () => {
    // A fresh authenticator's cache is empty: every key is read again.
    const authenticator = new Authenticator(env.deps.database.db, env.deps.shared, 60_000)
    const reads = countReads(authenticator, (call) => call <= 3)
    try {
      const verified = await patiently(() => authenticator.verify(devices[0]!.key), 5_000)
      expect(verified?.deviceId).toBe(devices[0]!.id)
      expect(reads.calls.length).toBe(4)
    } finally {
      reads.restore()
    }
    // Through the listener: the first key reads fail, the CONNECT is answered 0 once one succeeds.
    const listenerReads = countReads(env.deps.authenticator, (call) => call <= 2)
    try {
      const device = devices[1]!
      // Forget the key so it is read again.
      await env.deps.authenticator.invalidateKey(hashToken(device.key))
      expect(await connackCode(device.key)).toBe(0)
    } finally {
      listenerReads.restore()
    }
  })

  test('a database that stays down: CONNACK 3 (server unavailable) once the patience is spent', async () => {
    const reads = countReads(env.deps.authenticator, () => true)
    try {
      const device = devices[2]!
      await env.deps.authenticator.invalidateKey(hashToken(device.key))
      const started = Date.now()
      expect(await connackCode(device.key)).toBe(3)
      expect(Date.now() - started).toBeGreaterThan(5_000)
      expect(reads.calls.length).toBeGreaterThan(3)
    } finally {
      reads.restore()
    }
  }, 30_000)
})
