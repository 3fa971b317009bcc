// The ingest log as a cluster runs it (issues 22 and 60): a 3-node nats-server cluster with the log in three R3 lanes
// and 3 server processes on their own ports sharing Postgres and Redis, ingest driven at all three, then the node
// leading a lane killed with SIGKILL (or stopped with SIGSTOP) and a server killed: every acknowledged reading is
// stored, once, and no batch sent to a surviving server waits more than a second for its acknowledgement. And a
// writer killed with SIGKILL mid-batch: another writer stores what it had taken. Needs real Postgres and Redis
// (DATABASE_URL, REDIS_URL) and nats-server; skipped, saying so, otherwise.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
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

  // Issue 60: the log in three lanes, whose leaders the servers keep on the three nodes. The leader of a lane is lost
  // under load (killed, or stopped as a partition would), then a server is killed: ingest keeps acknowledging, every
  // batch within a second, while JetStream elects that lane's new leader; stored = acknowledged, none twice.
  for (const loss of ['killed', 'stopped'] as const) {
    test(`3 NATS nodes (R3, 3 lanes) and 3 servers: a lane's leader ${loss === 'killed' ? 'killed (SIGKILL)' : 'stopped (SIGSTOP, a partition)'} under load, then a server killed; no batch waits over 1 s, stored = acknowledged, no duplicates`, async () => {
      const nats = await startNats(3)
      deployments.push(nats)
      const stream = `LANES_${loss.toUpperCase()}`
      const env = serverEnv(nats, stream, { INGEST_LOG_REPLICAS: '3', INGEST_LOG_LANES: '3' })
      const lanes = [stream, `${stream}_1`, `${stream}_2`]
      // One after another: the first migrates and creates the lanes, the others find them.
      const servers: Child[] = []
      for (let i = 0; i < 3; i++) { const s = await startServer(env); servers.push(s); children.push(s) }
      const nc = await connect({ servers: nats.servers.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 250, pingInterval: 1_000, maxPingOut: 2 })
      const jsm = await jetstreamManager(nc, { timeout: 2_000 })
      const leaders = async () => Promise.all(lanes.map(async (name) => (await jsm.streams.info(name)).cluster?.leader))
      try {
        // The servers spread the lanes' leaders over the three nodes (JetStream alone often leads two from one).
        // The leaders of the read that found them spread: read again, a lane may be between leaders (a server's
        // step-down electing a new one), and `leaders()` gave undefined for lane 0 once (2026-12-07).
        let spreadLeaders: (string | undefined)[] = []
        const spread = async () => {
          const now = await leaders().catch(() => [])
          if (!now.every(Boolean) || new Set(now).size !== 3) return false
          spreadLeaders = now
          return true
        }
        let spreadMs = await waitFor(spread, 60_000, 250)
        let drift = ''
        if (loss === 'killed') {
          // Drift, as after a node's restart: lane 1's leader stepped down until it is lane 0's; the servers spread them again.
          // A stream's info can time out while its lane elects (2026-12-07, CI): that read counts as not yet.
          await waitFor(async () => {
            const [first, second] = await leaders().catch(() => [])
            if (first && first === second) return true
            await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${lanes[1]}`, undefined, { timeout: 2_000 }).catch(() => {})
            await Bun.sleep(500)
            return false
          }, 30_000, 0)
          drift = ` after drifting to ${(await leaders().catch(() => ['(between leaders)'])).join(', ')},`
          spreadMs = await waitFor(spread, 40_000, 250)
        }
        const [leader] = spreadLeaders
        const node = nats.nodes.find((n) => n.name === leader)
        if (!node) throw new Error(`no node named ${leader} (leaders ${(await leaders().catch(() => ['(between leaders)'])).join(', ')})`)
        const fleet = await devices(9)
        const acknowledged = new Map<string, number[]>(fleet.map((d) => [d.id, []]))
        const t0 = Date.now() - 3_600_000
        let running = true
        let killedServer = -1
        /** Answers of the servers that were not killed: status → count, and the longest wait for one. */
        const statuses: Record<string, number> = {}
        let longestWaitMs = 0
        let longestAt = 0
        let lostAt = 0
        const load = fleet.map(async (device, i) => {
          for (let n = 0; running; n++) {
            // Each device spreads its batches over the three servers, as a load balancer would.
            const target = (i + n) % 3
            const server = servers[target]!
            const readings = Array.from({ length: 25 }, (_, j) => ({ channel: 't1', value: j, ts: t0 + n * 25 + j }))
            let status = 'no answer'
            const started = performance.now()
            try {
              const response = await fetch(`${server.baseUrl}/api/v1/sensors/readings`, {
                method: 'POST', signal: AbortSignal.timeout(5_000),
                headers: { authorization: `Bearer ${device.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings }),
              })
              status = String(response.status)
              await response.arrayBuffer()
              if (response.status === 202) acknowledged.get(device.id)!.push(...readings.map((r) => r.ts))
            } catch { /* the killed server: no answer, nothing acknowledged */ }
            if (target !== killedServer) {
              statuses[status] = (statuses[status] ?? 0) + 1
              const waited = performance.now() - started
              if (waited > longestWaitMs) { longestWaitMs = waited; longestAt = Date.now() }
            }
            if (status !== '202') await Bun.sleep(50)
          }
        })
        const total = () => [...acknowledged.values()].reduce((sum, list) => sum + list.length, 0)
        await waitFor(async () => total() >= 5_000, 20_000, 50)

        lostAt = Date.now()
        if (loss === 'killed') await node.kill()
        else node.pause()
        const atLoss = total()
        // Ready while the lost lane has no leader (its election takes seconds): the other lanes take the appends.
        await Bun.sleep(1_000)
        const readyDuringLoss = await Promise.all([servers[0]!, servers[2]!].map(async (s) => (await fetch(`${s.baseUrl}/readyz`)).status))
        // Past the election of the lane's new leader (4 to 7 s in nats-server 2.9) and the stopped node's
        // connections being noticed (3 to 5 s), then a server killed, as in issue 22's test.
        await Bun.sleep(7_000)
        killedServer = 1
        await servers[1]!.stop('SIGKILL')
        const atServerKill = total()
        await Bun.sleep(3_000)
        // For the log line only: a lane may still be electing, or this connection still on the stopped node.
        const newLeaders = await Promise.all(lanes.map(async (name) => (await jsm.streams.info(name).catch(() => undefined))?.cluster?.leader ?? 'none yet'))
        // The partition heals: the stopped node runs on and rejoins.
        if (loss === 'stopped') node.resume()
        await waitFor(async () => total() >= atServerKill + 5_000, 30_000, 50)
        running = false
        await Promise.all(load)

        // The writers of the two surviving servers drain every lane, the killed server's unacknowledged messages included.
        // Waited for reading by reading: a count would pass early, since batches posted to the killed server that it
        // never answered may be stored too (2026-12-07: counts matched while 225 acknowledged readings were still
        // to come, and the test failed on them).
        const missingOf = async (device: Device) => {
          const stored = await storedOf(device)
          return acknowledged.get(device.id)!.filter((ts) => !stored.distinct.has(ts)).length
        }
        const drained = await waitFor(async () => {
          for (const device of fleet) if (await missingOf(device) > 0) return false
          return true
        }, 90_000, 200).catch(() => Number.NaN)
        let missing = 0
        let duplicates = 0
        for (const device of fleet) {
          const stored = await storedOf(device)
          duplicates += stored.all - stored.distinct.size
          missing += await missingOf(device)
        }
        const metrics = await (await fetch(`${servers[0]!.baseUrl}/metrics`)).text()
        const failovers = [...metrics.matchAll(/^hrs_ingest_log_failovers_total\{lane="([^"]+)"\} (\d+)/gm)].map((m) => `${m[1]} ${m[2]}`).join(', ')
        console.log(`ingest-log-cluster.test (leader ${loss}): leaders spread${drift} ${Math.round(spreadMs)} ms after ${drift ? 'the drift' : 'start'}; ${lanes[0]}'s leader ${leader} ${loss}, lanes then led by ${newLeaders.join(', ')}; ${total()} readings acknowledged (${atLoss} before the loss, ${atServerKill} before the server kill); answers of the servers not killed ${JSON.stringify(statuses)}; /readyz 1 s after the loss ${readyDuringLoss.join(', ')}; longest wait ${Math.round(longestWaitMs)} ms, ${longestAt - lostAt} ms after the loss; server 0's failovers: ${failovers || 'none'}; all stored ${Math.round(drained)} ms after the load stopped; missing ${missing}, duplicates ${duplicates}`)
        expect({ missing, duplicates }).toEqual({ missing: 0, duplicates: 0 })
        // Every batch sent to a server that stayed up was acknowledged, none after more than a second.
        expect(Object.keys(statuses)).toEqual(['202'])
        expect(longestWaitMs).toBeLessThan(1_000)
        expect(readyDuringLoss).toEqual([200, 200])
      } finally {
        await nc.close()
      }
    }, 180_000)
  }

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
