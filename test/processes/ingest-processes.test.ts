// Acknowledged means stored: the real service as a child process, killed mid-load or stopped with SIGTERM.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import mqtt from 'mqtt'
import postgres from 'postgres'
import { freePort } from '../../bench/lib/processes.ts'
import { dropQuestdbTable, freshDatabase, REAL_REDIS_URL, waitFor } from '../helpers.ts'
import { runCli, startServer, tempDataDir } from '../process-helpers.ts'

let database: Awaited<ReturnType<typeof freshDatabase>>
let storeEnv: Record<string, string | undefined>
let token: string

beforeAll(async () => {
  database = await freshDatabase()
  storeEnv = database.databaseUrl
    ? { DATABASE_URL: database.databaseUrl, REDIS_URL: REAL_REDIS_URL, REDIS_PREFIX: `hrs_test_${Date.now().toString(36)}:`, DEMO: '0' }
    : { DATA_DIR: tempDataDir(), DEMO: '0' }
  const account = await runCli(['accounts', 'create', '--name', 'ingest test'], storeEnv)
  const accountId = /account (acct_\w+)/.exec(account.stdout)![1]!
  const key = await runCli(['keys', 'create', accountId, '--name', 'test', '--scopes', 'all'], storeEnv)
  token = /(hrs_pat_\w+)/.exec(key.stdout)![1]!
})
afterAll(async () => { await database.drop() })

async function deviceOn(baseUrl: string): Promise<{ id: string; key: string }> {
  const res = await fetch(`${baseUrl}/api/v1/sensors/devices`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'loader', channels: [{ key: 't1', metric: 'temperature' }] }),
  })
  return res.json()
}

/** Every stored reading of a device between `from` and `to`, as "channel@ts" strings. */
async function storedKeys(baseUrl: string, deviceId: string, from: number, to: number): Promise<Set<string>> {
  const keys = new Set<string>()
  let cursor = ''
  for (;;) {
    const res = await fetch(`${baseUrl}/api/v1/environment/readings?device_id=${deviceId}&from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&limit=10000${cursor}`, { headers: { authorization: `Bearer ${token}` } })
    const page = await res.json()
    for (const row of page.data) keys.add(`${row.channel}@${Date.parse(row.ts)}`)
    if (!page.has_more) return keys
    cursor = `&cursor=${page.next_cursor}`
  }
}

/**
 * Restarts the server on the same store and requires every acknowledged reading ("channel@ts") stored, and nothing
 * beyond what was sent (unacknowledged readings may or may not have landed).
 */
async function expectStoredAfterRestart(env: Record<string, string | undefined>, deviceId: string, base: number, acknowledged: string[], sent: number) {
  const restarted = await startServer(env)
  try {
    // QuestDB shows a committed batch to queries a moment after acknowledging it (it applies its WAL in the
    // background): read until every acknowledged reading shows, or give up and count what is missing.
    let stored = new Set<string>()
    await waitFor(async () => {
      stored = await storedKeys(restarted.baseUrl, deviceId, base, base + 3_600_000)
      return acknowledged.every((k) => stored.has(k))
    }, 30_000, 250).catch(() => {})
    const lost = acknowledged.filter((k) => !stored.has(k))
    expect({ acknowledged: acknowledged.length, lost: lost.slice(0, 5) }).toEqual({ acknowledged: acknowledged.length, lost: [] })
    expect(stored.size).toBeLessThanOrEqual(sent)
  } finally {
    expect(await restarted.stop()).toBe(0)
  }
}

/** Loads the server with readings from four devices' lanes, kills it with SIGKILL, restarts it and looks for every acknowledged reading. */
async function killedMidLoad(env: Record<string, string | undefined>) {
  const server = await startServer({ ...env, INGEST_FLUSH_MS: '5' })
  const device = await deviceOn(server.baseUrl)
  const base = Date.now() - 3_600_000
  const acknowledged: string[] = []
  let sent = 0
  let stop = false
  const loader = async (lane: number) => {
    for (let batch = 0; !stop; batch++) {
      const readings = Array.from({ length: 50 }, (_, i) => ({ channel: `c${lane}`, value: i, ts: base + batch * 50 + i }))
      sent += readings.length
      try {
        const res = await fetch(`${server.baseUrl}/api/v1/sensors/readings`, {
          method: 'POST', headers: { authorization: `Bearer ${device.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings }),
        })
        if (res.status === 202) {
          const body = await res.json()
          expect(body.rejected).toEqual([])
          acknowledged.push(...readings.map((r) => `${r.channel}@${r.ts}`))
        }
      } catch {
        return // the server is gone
      }
    }
  }
  const lanes = [0, 1, 2, 3].map(loader)
  await Bun.sleep(1500)
  server.proc.kill('SIGKILL')
  stop = true
  await Promise.all(lanes)
  await server.stop()
  expect(acknowledged.length).toBeGreaterThan(500)

  await expectStoredAfterRestart(env, device.id, base, acknowledged, sent)
}

/**
 * The same over MQTT: QoS 1 publishes from MQTT.js clients (3.1.1 and 5), the server killed with SIGKILL mid-load,
 * and every publish it acknowledged (PUBACK) found stored after a restart.
 */
async function killedMidMqttLoad(env: Record<string, string | undefined>) {
  const mqttPort = freePort()
  const server = await startServer({ ...env, INGEST_FLUSH_MS: '5', MQTT_PORT: String(mqttPort), DEVICE_RATE_LIMIT_PER_MINUTE: '1000000' })
  const device = await deviceOn(server.baseUrl)
  const base = Date.now() - 3_600_000
  const acknowledged: string[] = []
  let sent = 0
  const loader = async (lane: number) => {
    const client = mqtt.connect(`mqtt://127.0.0.1:${mqttPort}`, { protocolVersion: lane % 2 ? 5 : 4, username: 'loader', password: device.key, reconnectPeriod: 0 })
    const gone = new Promise<'gone'>((resolve) => client.once('close', () => resolve('gone')))
    await Promise.race([new Promise((resolve) => client.once('connect', resolve)), gone])
    for (let batch = 0; client.connected; batch++) {
      const readings = Array.from({ length: 50 }, (_, i) => ({ channel: `m${lane}`, value: i, ts: base + batch * 50 + i }))
      sent += readings.length
      const outcome = await Promise.race([client.publishAsync(`devices/${device.id}/readings`, JSON.stringify({ readings }), { qos: 1 }).then(() => 'acked' as const, () => 'refused' as const), gone])
      if (outcome === 'acked') acknowledged.push(...readings.map((r) => `${r.channel}@${r.ts}`))
      else break
    }
    client.end(true)
  }
  const lanes = [0, 1, 2, 3].map(loader)
  // Killed once the load is well under way (a few hundred acknowledged publishes), not after a fixed time.
  await waitFor(async () => acknowledged.length >= 10_000, 30_000, 10)
  server.proc.kill('SIGKILL')
  await Promise.all(lanes)
  await server.stop()

  await expectStoredAfterRestart(env, device.id, base, acknowledged, sent)
}

/** QuestDB's readings table of this file, when QUESTDB_ILP and QUESTDB_PG_URL point at a server. */
const questdb = process.env.QUESTDB_ILP && process.env.QUESTDB_PG_URL
  ? { QUESTDB_ILP: process.env.QUESTDB_ILP, QUESTDB_PG_URL: process.env.QUESTDB_PG_URL, QUESTDB_TABLE: `hrs_test_kill_${Date.now().toString(36)}` }
  : undefined
if (!questdb) console.log('ingest-processes.test: the QuestDB kill test is skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run it against a QuestDB server')
afterAll(async () => {
  if (!questdb) return
  const admin = postgres(questdb.QUESTDB_PG_URL, { max: 1, prepare: false, onnotice: () => {} })
  await dropQuestdbTable(admin, questdb.QUESTDB_TABLE)
  await admin.end()
})

describe('ingest durability', () => {
  test('killed mid-load (SIGKILL), the service has stored every reading it acknowledged', async () => {
    await killedMidLoad(storeEnv)
  }, 90_000)

  test('over MQTT (QoS 1), killed mid-load (SIGKILL), the service has stored every publish it acknowledged', async () => {
    await killedMidMqttLoad(storeEnv)
  }, 90_000)

  test.skipIf(!questdb)('on the QuestDB store, killed mid-load (SIGKILL), QuestDB holds every reading the service acknowledged', async () => {
    await killedMidLoad({ ...storeEnv, ...questdb })
  }, 90_000)

  test.skipIf(!questdb)('over MQTT on the QuestDB store, killed mid-load (SIGKILL), QuestDB holds every publish the service acknowledged', async () => {
    await killedMidMqttLoad({ ...storeEnv, ...questdb })
  }, 90_000)

  test('SIGTERM answers the batch still waiting for its flush, stores it, and exits 0', async () => {
    const server = await startServer({ ...storeEnv, INGEST_FLUSH_MS: '2000' })
    const device = await deviceOn(server.baseUrl)
    const ts = Date.now() - 60_000
    const pending = fetch(`${server.baseUrl}/api/v1/sensors/readings`, {
      method: 'POST', headers: { authorization: `Bearer ${device.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ readings: [{ channel: 't1', value: 21.5, ts }] }),
    })
    // SIGTERM once the server holds the batch (it waits for its 2 s flush), not after a guessed delay.
    await waitFor(async () => /^hrs_ingest_queued_readings 1$/m.test(await (await fetch(`${server.baseUrl}/metrics`)).text()), 10_000, 20)
    const exited = server.stop('SIGTERM')
    const res = await pending
    expect(res.status).toBe(202)
    expect(await exited).toBe(0)
    const restarted = await startServer(storeEnv)
    try {
      expect(await storedKeys(restarted.baseUrl, device.id, ts - 1, ts + 1)).toEqual(new Set([`t1@${ts}`]))
    } finally {
      await restarted.stop()
    }
  }, 60_000)
})
