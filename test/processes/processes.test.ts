// The service as an operator runs it: child processes on loopback, signals, several workers, other processes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import mqtt, { type MqttClient } from 'mqtt'
import { freePort } from '../../bench/lib/processes.ts'
import { createAccount } from '../../src/accounts.ts'
import { createKey, revokeKey } from '../../src/auth/keys.ts'
import { ALL_SCOPES } from '../../src/auth/scopes.ts'
import { loadConfig } from '../../src/config.ts'
import { createDeps, type Deps } from '../../src/deps.ts'
import { createDevice, deleteDevice } from '../../src/modules/sensors/service.ts'
import { freshDatabase, REAL_DATABASE_URL, REAL_REDIS_URL, waitFor } from '../helpers.ts'
import { runCli, startServer, tempDataDir } from '../process-helpers.ts'

const shared = Boolean(REAL_DATABASE_URL && REAL_REDIS_URL)
const redisPrefix = `hrs_test_${Date.now().toString(36)}:`
let database: Awaited<ReturnType<typeof freshDatabase>>
/** The store every child process of this file uses: a fresh Postgres database, or a fresh PGlite directory. */
let storeEnv: Record<string, string | undefined>
const envFor = (db: { databaseUrl?: string }): Record<string, string | undefined> =>
  db.databaseUrl ? { DATABASE_URL: db.databaseUrl, REDIS_URL: REAL_REDIS_URL, REDIS_PREFIX: redisPrefix } : { DATA_DIR: tempDataDir() }

beforeAll(async () => {
  database = await freshDatabase()
  storeEnv = envFor(database)
})
afterAll(async () => { await database.drop() })

describe('start-up', () => {
  test('the first start on an empty store prints a working demo key with every scope; later starts do not', async () => {
    const env = { ...storeEnv, DEMO: '1' }
    const first = await startServer(env)
    const key = /demo key: (hrs_pat_[0-9A-Za-z]{36})/.exec(first.output())?.[1]
    expect(key).toBeDefined()
    const me = await (await fetch(`${first.baseUrl}/api/v1/me`, { headers: { authorization: `Bearer ${key}` } })).json()
    expect([...me.scopes].sort()).toEqual([...ALL_SCOPES].sort())
    expect(await first.stop()).toBe(0)
    const second = await startServer(env)
    expect(second.output()).not.toContain('demo key')
    expect(await second.stop()).toBe(0)
  })

  test('DEMO=0 never seeds', async () => {
    const fresh = await freshDatabase()
    const env = envFor(fresh)
    const server = await startServer({ ...env, DEMO: '0' })
    expect(server.output()).not.toContain('demo key')
    expect(await server.stop()).toBe(0)
    await fresh.drop()
  })
})

describe('SIGTERM', () => {
  test('stops accepting, finishes in-flight requests, and exits 0', async () => {
    const server = await startServer({ ...storeEnv, DEMO: '0', TEST_ROUTES: '1' })
    const inFlight = fetch(`${server.baseUrl}/api/v1/_test/slow?ms=800`)
    await waitFor(async () => (await (await fetch(`${server.baseUrl}/api/v1/_test/slow/in-flight`)).json()).in_flight === 1, 10_000, 10)
    const exited = server.stop('SIGTERM')
    const res = await inFlight
    expect(res.status).toBe(200)
    expect((await res.json()).slept_ms).toBe(800)
    expect(await exited).toBe(0)
    await expect(fetch(`${server.baseUrl}/healthz`)).rejects.toThrow()
  })
})

describe.if(shared)('several processes (real Postgres and Redis)', () => {
  let deps: Deps
  beforeAll(async () => { deps = await createDeps(loadConfig({}, { databaseUrl: database.databaseUrl, redisUrl: REAL_REDIS_URL, redisPrefix, logLevel: 'error' })) })
  afterAll(async () => { await deps.close() })

  test('a key revoked in this process is refused by another process within one second', async () => {
    const server = await startServer({ ...storeEnv, DEMO: '0' })
    try {
      const account = await createAccount(deps.database.db, { name: 'revocation' })
      const { key, token } = await createKey(deps.database.db, { accountId: account.id, kind: 'personal', name: 'k' })
      const me = () => fetch(`${server.baseUrl}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } })
      expect((await me()).status).toBe(200) // now cached in the server process
      const revoked = await revokeKey(deps.database.db, key.id)
      await deps.authenticator.invalidateKey(revoked!.tokenHash)
      const took = await waitFor(async () => (await me()).status === 401, 1_000, 10)
      expect(took).toBeLessThan(1_000)
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })

  test('a device deleted through this process stops ingesting in another process at once', async () => {
    const server = await startServer({ ...storeEnv, DEMO: '0' })
    try {
      const account = await createAccount(deps.database.db, { name: 'device deletion', plan: 'breeder' })
      const { row, key } = await createDevice(deps, account.id, { name: 'hub', channels: [{ key: 't1', metric: 'temperature' }] })
      const ping = () => fetch(`${server.baseUrl}/api/v1/sensors/ping?key=${key}&t1=20`)
      expect((await ping()).status).toBe(204) // the key and the device are now cached in the server process
      await deleteDevice(deps, account.id, row.id, null)
      const took = await waitFor(async () => (await ping()).status === 401, 1_000, 10)
      expect(took).toBeLessThan(1_000)
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })

  test('an alert opened by one process is closed by another that only sees the recovery, once each', async () => {
    const [a, b] = await Promise.all([startServer({ ...storeEnv, DEMO: '0' }), startServer({ ...storeEnv, DEMO: '0' })])
    try {
      const account = await createAccount(deps.database.db, { name: 'alerts across processes', plan: 'breeder' })
      const { token } = await createKey(deps.database.db, { accountId: account.id, kind: 'personal', name: 'k', scopes: ALL_SCOPES })
      const call = async (server: { baseUrl: string }, method: string, path: string, body?: unknown, key = token) =>
        fetch(`${server.baseUrl}/api/v1${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
      const device = await (await call(a, 'POST', '/sensors/devices', { name: 'hub', channels: [{ key: 't1', metric: 'temperature' }] })).json()
      expect((await call(a, 'POST', '/environment/alert-rules', { device_id: device.id, channel: 't1', metric: 'temperature', max: 30 })).status).toBe(201)
      let ts = Date.now() - 60_000
      const reading = async (server: { baseUrl: string }, value: number) =>
        expect((await call(server, 'POST', '/sensors/readings', { readings: [{ channel: 't1', value, ts: ts++ }] }, device.key)).status).toBe(202)
      const alerts = async (state: string) => (await (await call(a, 'GET', `/environment/alerts?state=${state}`)).json()).data
      // Process b learns of the rule through Redis, then opens the alert on readings only it sees.
      await waitFor(async () => { await reading(b, 35); return (await alerts('open')).length === 1 }, 5_000, 100)
      // Process a never saw an out-of-range reading: it closes the alert because b told it the alert is open.
      await waitFor(async () => { await reading(a, 25); return (await alerts('resolved')).length === 1 }, 5_000, 100)
      const [alert] = await alerts('resolved')
      expect(alert).toMatchObject({ device_id: device.id, channel: 't1', resolved_value: 25, resolved_reason: 'recovered' })
      expect(await alerts('open')).toEqual([])
      const events = await deps.database.query<{ type: string }>(`select type from outbox_events where account_id = $1 and type like 'environment.alert.%' order by created_at`, [account.id])
      expect(events.map((e) => e.type)).toEqual(['environment.alert.triggered', 'environment.alert.resolved'])
    } finally {
      expect(await a.stop()).toBe(0)
      expect(await b.stop()).toBe(0)
    }
  })

  test('WORKERS=2 starts two processes sharing the port; SIGTERM stops them all cleanly', async () => {
    const server = await startServer({ ...storeEnv, DEMO: '0', TEST_ROUTES: '1', WORKERS: '2' })
    try {
      const pids = new Set<number>()
      await waitFor(async () => {
        // New connections each time: the kernel spreads connections, not requests, over the workers, and a pooled
        // keep-alive connection would keep landing on the worker that accepted it.
        const answers = await Promise.all(Array.from({ length: 8 }, () => fetch(`${server.baseUrl}/api/v1/_test/slow?ms=20`, { keepalive: false, headers: { connection: 'close' } }).then((r) => r.json())))
        for (const a of answers) pids.add(a.pid)
        return pids.size >= 2
      }, 10_000)
      expect(pids.size).toBe(2)
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })

  test('WORKERS=2 with MQTT_PORT: both workers listen on the one MQTT port; deleting the device through one closes its connections on every worker', async () => {
    const mqttPort = freePort()
    const server = await startServer({ ...storeEnv, DEMO: '0', WORKERS: '2', MQTT_PORT: String(mqttPort) })
    const clients: MqttClient[] = []
    try {
      const account = await createAccount(deps.database.db, { name: 'mqtt workers', plan: 'breeder' })
      const { token } = await createKey(deps.database.db, { accountId: account.id, kind: 'personal', name: 'k', scopes: ALL_SCOPES })
      const device = await (await fetch(`${server.baseUrl}/api/v1/sensors/devices`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'hub', channels: [{ key: 't1', metric: 'temperature' }] }) })).json()
      const ts = Date.now() - 60_000
      // Eight connections: the kernel spreads them over the two workers.
      for (let i = 0; i < 8; i++) {
        const client = mqtt.connect(`mqtt://127.0.0.1:${mqttPort}`, { protocolVersion: 5, username: `c${i}`, password: device.key, reconnectPeriod: 0 })
        clients.push(client)
        await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('error', reject) })
        await client.publishAsync(`devices/${device.id}/readings`, JSON.stringify({ readings: [{ channel: 't1', value: i, ts: ts + i }] }), { qos: 1 })
      }
      const rows = await deps.database.query<{ n: number }>('select count(*)::int as n from sensor_readings where device_id = $1', [device.id])
      expect(rows[0]!.n).toBe(8)
      const closed = clients.map((client) => new Promise<void>((resolve) => (client.connected ? client.once('close', () => resolve()) : resolve())))
      expect((await fetch(`${server.baseUrl}/api/v1/sensors/devices/${device.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })).status).toBe(204)
      await Promise.all(closed)
    } finally {
      for (const client of clients) client.end(true)
      expect(await server.stop()).toBe(0)
    }
  })
})
if (!shared) console.log('processes.test: multi-process revocation and WORKERS=2 skipped: they need DATABASE_URL and REDIS_URL (PGlite and the in-process store belong to one process)')

describe.if(!REAL_DATABASE_URL)('embedded store ownership', () => {
  test('the CLI refuses an embedded database a running server holds, and works once it stops', async () => {
    const dataDir = tempDataDir()
    const server = await startServer({ DATA_DIR: dataDir, DEMO: '0' })
    const refused = await runCli(['accounts', 'list'], { DATA_DIR: dataDir })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`in use by process ${server.proc.pid}`)
    expect(await server.stop()).toBe(0)
    expect((await runCli(['accounts', 'list'], { DATA_DIR: dataDir })).code).toBe(0)
  })
})

describe('operator CLI', () => {
  test('creates accounts and keys, lists and revokes keys, sets status and allowlist', async () => {
    const fresh = await freshDatabase()
    const env = envFor(fresh)
    try {
      const created = await runCli(['accounts', 'create', '--name', 'Cli Test', '--plan', 'keeper'], env)
      expect(created.code).toBe(0)
      const accountId = /account (acct_\w+)/.exec(created.stdout)![1]!
      expect((await runCli(['accounts', 'set-plan', accountId, 'professional'], env)).stdout).toContain('professional')
      expect((await runCli(['accounts', 'allowlist', accountId, 'on'], env)).code).toBe(0)
      expect((await runCli(['accounts', 'list'], env)).stdout).toMatch(new RegExp(`${accountId}\\tprofessional\\tallowlisted`))
      const key = await runCli(['keys', 'create', accountId, '--name', 'ci', '--scopes', 'animals:read,activities:write', '--expires-in', '30'], env)
      expect(key.code).toBe(0)
      const token = /token \(shown once\): (hrs_pat_\w+)/.exec(key.stdout)![1]!
      const keyId = /key (key_\w+)/.exec(key.stdout)![1]!
      const listed = await runCli(['keys', 'list', accountId], env)
      expect(listed.stdout).toContain(`${keyId}\tpersonal\thrs_pat_…${token.slice(-4)}\tactive`)
      expect(listed.stdout).not.toContain(token)
      expect((await runCli(['keys', 'create', accountId, '--name', 'x', '--scopes', 'animals:rwx'], env)).code).toBe(2)
      expect((await runCli(['keys', 'revoke', keyId], env)).code).toBe(0)
      expect((await runCli(['keys', 'list', accountId], env)).stdout).toContain('revoked')
      expect((await runCli(['keys', 'revoke', keyId], env)).code).toBe(2)
      expect((await runCli(['status', 'set', 'limited'], env)).code).toBe(0)
      expect((await runCli(['status', 'get'], env)).stdout.trim()).toBe('limited')
      expect((await runCli(['status', 'set', 'sideways'], env)).code).toBe(2)
      expect((await runCli(['nonsense'], env)).code).toBe(2)
    } finally {
      await fresh.drop()
    }
  })
})
