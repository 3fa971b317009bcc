// The ingest log as a cluster runs it (issue 22): a 3-node nats-server cluster with an R3 stream and 3 server
// processes on their own ports sharing Postgres and Redis, ingest driven at all three, then one NATS node and one
// server killed with SIGKILL: every acknowledged reading is stored, once, and the survivors keep answering. And a
// writer killed with SIGKILL mid-batch: another writer stores what it had taken. Needs real Postgres and Redis
// (DATABASE_URL, REDIS_URL) and nats-server; skipped, saying so, otherwise.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createAccount } from '../../src/accounts.ts'
import { loadConfig } from '../../src/config.ts'
import { createDeps, type Deps } from '../../src/deps.ts'
import { createDevice } from '../../src/modules/sensors/service.ts'
import { NATS_SERVER, startNats, type NatsDeployment } from '../../bench/lib/nats.ts'
import type { Child } from '../../bench/lib/processes.ts'
import { freshDatabase, REAL_DATABASE_URL, REAL_REDIS_URL, waitFor } from '../helpers.ts'
import { startServer, startWriter } from '../process-helpers.ts'

const runnable = Boolean(REAL_DATABASE_URL && REAL_REDIS_URL && NATS_SERVER)
if (!runnable) console.warn('ingest-log-cluster.test: skipped: needs DATABASE_URL, REDIS_URL and nats-server')

interface Device { id: string; key: string }

describe.skipIf(!runnable)('the ingest log in a cluster', () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>
  let deps: Deps
  let accountId: string
  const children: Child[] = []
  const deployments: NatsDeployment[] = []
  const redisPrefix = `hrs_test_${Date.now().toString(36)}:`

  beforeAll(async () => {
    database = await freshDatabase()
    deps = await createDeps(loadConfig({}, { databaseUrl: database.databaseUrl, redisUrl: REAL_REDIS_URL, redisPrefix, logLevel: 'error', ingestLog: undefined }))
    accountId = (await createAccount(deps.database.db, { name: 'cluster', plan: 'breeder' })).id
  })
  afterAll(async () => {
    for (const child of children) await child.stop('SIGKILL').catch(() => {})
    for (const nats of deployments) await nats.close()
    await deps?.close()
    await database?.drop()
  })

  const devices = async (n: number): Promise<Device[]> => Promise.all(Array.from({ length: n }, async (_, i) => {
    const { row, key } = await createDevice(deps, accountId, { name: `d${i}`, channels: [{ key: 't1', metric: 'temperature' }] })
    return { id: row.id, key: key! }
  }))
  const storedOf = async (device: Device): Promise<{ all: number; distinct: Set<number> }> => {
    const rows = await deps.database.query<{ ts: Date }>('select ts from sensor_readings where device_id = $1', [device.id])
    return { all: rows.length, distinct: new Set(rows.map((r) => new Date(r.ts).getTime())) }
  }
  const serverEnv = (nats: NatsDeployment, stream: string, extra: Record<string, string> = {}) => ({
    DATABASE_URL: database.databaseUrl, REDIS_URL: REAL_REDIS_URL, REDIS_PREFIX: redisPrefix, DEMO: '0',
    INGEST_LOG: nats.servers, INGEST_LOG_STREAM: stream, INGEST_LOG_SUBJECT_PREFIX: `t.${stream.toLowerCase()}`,
    INGEST_LOG_ACK_WAIT_SECONDS: '2', DEVICE_RATE_LIMIT_PER_MINUTE: '1000000', ...extra,
  })

  test('3 NATS nodes (R3) and 3 servers: kill a node and a server under load; stored = acknowledged, no duplicates, the survivors answer', async () => {
    const nats = await startNats(3)
    deployments.push(nats)
    const env = serverEnv(nats, 'CLUSTER', { INGEST_LOG_REPLICAS: '3' })
    // One after another: the first migrates and creates the stream, the others find it.
    const servers: Child[] = []
    for (let i = 0; i < 3; i++) { const s = await startServer(env); servers.push(s); children.push(s) }
    const fleet = await devices(9)
    const acknowledged = new Map<string, number[]>(fleet.map((d) => [d.id, []]))
    const t0 = Date.now() - 3_600_000
    let running = true
    const statuses: Record<string, number> = {}
    const load = fleet.map(async (device, i) => {
      for (let n = 0; running; n++) {
        // Each device spreads its batches over the three servers, as a load balancer would.
        const server = servers[(i + n) % 3]!
        const readings = Array.from({ length: 25 }, (_, j) => ({ channel: 't1', value: j, ts: t0 + n * 25 + j }))
        let status = 'refused'
        try {
          const response = await fetch(`${server.baseUrl}/api/v1/sensors/readings`, {
            method: 'POST', signal: AbortSignal.timeout(5_000),
            headers: { authorization: `Bearer ${device.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings }),
          })
          status = String(response.status)
          await response.arrayBuffer()
          if (response.status === 202) acknowledged.get(device.id)!.push(...readings.map((r) => r.ts))
        } catch { /* the killed server: no answer, nothing acknowledged */ }
        statuses[status] = (statuses[status] ?? 0) + 1
        if (status !== '202') await Bun.sleep(50)
      }
    })
    const total = () => [...acknowledged.values()].reduce((sum, list) => sum + list.length, 0)
    await waitFor(async () => total() >= 5_000, 20_000, 50)

    await nats.nodes[1]!.kill()
    await servers[1]!.stop('SIGKILL')
    const atKill = total()
    await waitFor(async () => total() >= atKill + 5_000, 30_000, 50)
    running = false
    await Promise.all(load)

    // The survivors answer: health, and a fresh batch (after a refused publish, ingest pauses a second: Retry-After).
    for (const survivor of [servers[0]!, servers[2]!]) {
      expect((await fetch(`${survivor.baseUrl}/healthz`)).status).toBe(200)
      const ts = t0 - 1 - (survivor.port % 1000)
      await waitFor(async () => (await fetch(`${survivor.baseUrl}/api/v1/sensors/readings`, {
        method: 'POST', headers: { authorization: `Bearer ${fleet[0]!.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ readings: [{ channel: 't1', value: 1, ts }] }),
      })).status === 202, 10_000, 250)
      acknowledged.get(fleet[0]!.id)!.push(ts)
    }
    // The writers of the two surviving servers drain the log, the killed server's unacknowledged messages included.
    const drained = await waitFor(async () => {
      for (const device of fleet) if ((await storedOf(device)).distinct.size < new Set(acknowledged.get(device.id)).size) return false
      return true
    }, 60_000, 200)
    let missing = 0
    let duplicates = 0
    for (const device of fleet) {
      const stored = await storedOf(device)
      duplicates += stored.all - stored.distinct.size
      missing += acknowledged.get(device.id)!.filter((ts) => !stored.distinct.has(ts)).length
    }
    console.log(`ingest-log-cluster.test: ${total()} readings acknowledged (${atKill} before the kills), statuses ${JSON.stringify(statuses)}; all stored ${Math.round(drained)} ms after the load stopped; missing ${missing}, duplicates ${duplicates}`)
    expect({ missing, duplicates }).toEqual({ missing: 0, duplicates: 0 })
  }, 180_000)

  test('a writer killed with SIGKILL mid-batch: another writer stores what it had taken', async () => {
    const nats = await startNats(1)
    deployments.push(nats)
    // The server only publishes; the writers run alone.
    const env = serverEnv(nats, 'WRITERS')
    const server = await startServer({ ...env, INGEST_LOG_WRITER: '0' })
    children.push(server)
    const [device] = await devices(1)
    const t0 = Date.now() - 7_200_000
    const batches = 200
    await Promise.all(Array.from({ length: 8 }, async (_, worker) => {
      for (let n = worker; n < batches; n += 8) {
        const readings = Array.from({ length: 500 }, (_, j) => ({ channel: 't1', value: j, ts: t0 + n * 500 + j }))
        const response = await fetch(`${server.baseUrl}/api/v1/sensors/readings`, {
          method: 'POST', headers: { authorization: `Bearer ${device!.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings }),
        })
        expect(response.status).toBe(202)
      }
    }))
    const acknowledged = batches * 500
    const first = await startWriter(env)
    children.push(first)
    // Killed once it has stored part of the backlog: it holds messages it has taken and not acknowledged.
    await waitFor(async () => (await storedOf(device!)).all > 0, 20_000, 5)
    await first.stop('SIGKILL')
    const atKill = (await storedOf(device!)).all
    expect(atKill).toBeLessThan(acknowledged)
    const second = await startWriter(env)
    children.push(second)
    const drained = await waitFor(async () => (await storedOf(device!)).all >= acknowledged, 60_000, 100)
    const stored = await storedOf(device!)
    console.log(`ingest-log-cluster.test: writer killed with ${atKill} of ${acknowledged} readings stored; the second writer stored the rest in ${Math.round(drained)} ms`)
    expect({ all: stored.all, distinct: stored.distinct.size }).toEqual({ all: acknowledged, distinct: acknowledged })
  }, 120_000)
})
