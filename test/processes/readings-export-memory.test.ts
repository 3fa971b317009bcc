// A CSV export streams: the service (src/main.ts as a child process) exports a million readings in one file while
// its resident memory stays within 50 MB of what it holds idle. The readings go straight into the store (fast),
// the export comes over HTTP; the child's RSS is sampled from /proc every 20 ms while the body is read.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import postgres from 'postgres'
import type { Reading, ReadingsStore } from '../../ingest/stores/interface.ts'
import { questdbStore } from '../../ingest/stores/questdb.ts'
import { sqlStore } from '../../ingest/stores/sql.ts'
import { loadConfig } from '../../src/config.ts'
import { openDatabase } from '../../src/deps.ts'
import { dropQuestdbTable, freshDatabase, REAL_REDIS_URL, waitFor } from '../helpers.ts'
import { runCli, startServer, tempDataDir } from '../process-helpers.ts'

const QUESTDB_ILP = process.env.QUESTDB_ILP || undefined
const QUESTDB_PG_URL = process.env.QUESTDB_PG_URL || undefined
const onQuestDb = Boolean(QUESTDB_ILP && QUESTDB_PG_URL)
const questTable = `hrs_test_export_rss_${Date.now().toString(36)}`
/**
 * Two channels of one device, one reading a minute each: 500,000 minutes is about 347 days. On embedded PGlite a
 * million readings take about two minutes to store and export on a shared 2-core machine, so the test uses
 * 300,000 there (about 40 s); Postgres and QuestDB export the full million.
 */
const READINGS = Number(process.env.EXPORT_RSS_READINGS ?? (process.env.DATABASE_URL || (QUESTDB_ILP && QUESTDB_PG_URL) ? 1_000_000 : 300_000))
const MINUTES = READINGS / 2
const LIMIT_MB = 50
const START = Date.UTC(2025, 0, 1)

let database: Awaited<ReturnType<typeof freshDatabase>>
let serverEnv: Record<string, string | undefined>
let token: string
let accountId: string

const rssBytes = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024

async function fill(store: ReadingsStore) {
  const batch = 20_000
  for (let minute = 0; minute < MINUTES; minute += batch / 2) {
    const readings: Reading[] = []
    for (let m = minute; m < Math.min(MINUTES, minute + batch / 2); m++) {
      const ts = START + m * 60_000
      readings.push({ accountId, deviceId: 'dev_rss', channel: 't1', ts, value: 20 + (m % 1000) / 100, metric: 'temperature', environmentId: 'env_rss' })
      readings.push({ accountId, deviceId: 'dev_rss', channel: 'h1', ts, value: 40 + (m % 500) / 10, metric: 'humidity', environmentId: 'env_rss' })
    }
    await store.write(readings)
  }
}

beforeAll(async () => {
  database = await freshDatabase()
  // Readings of January 2025, kept for ever (the default 90 days would expire them and refuse the window).
  serverEnv = database.databaseUrl
    ? { DATABASE_URL: database.databaseUrl, REDIS_URL: REAL_REDIS_URL, REDIS_PREFIX: `hrs_test_${Date.now().toString(36)}:`, DEMO: '0', READINGS_RETENTION_DAYS: '0' }
    : { DATA_DIR: tempDataDir(), DEMO: '0', READINGS_RETENTION_DAYS: '0' }
  const account = await runCli(['accounts', 'create', '--name', 'export test'], serverEnv)
  accountId = /account (acct_\w+)/.exec(account.stdout)![1]!
  token = /(hrs_pat_\w+)/.exec((await runCli(['keys', 'create', accountId, '--name', 'test', '--scopes', 'all'], serverEnv)).stdout)![1]!
  const started = performance.now()
  if (onQuestDb) {
    serverEnv = { ...serverEnv, QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: questTable }
    const store = await questdbStore(loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: questTable }))
    try {
      await fill(store)
      await waitFor(async () => (await store.raw({ accountId, from: START + (MINUTES - 1) * 60_000, to: START + MINUTES * 60_000 }, 10)).length === 2, 60_000, 200)
    } finally {
      await store.close()
    }
  } else {
    // PGlite allows one process on a data directory: the readings go in before the server opens it.
    const db = await openDatabase(loadConfig({}, { databaseUrl: database.databaseUrl, dataDir: serverEnv.DATA_DIR }))
    try { await fill(sqlStore(db)) } finally { await db.close() }
  }
  console.log(`readings-export-memory: ${READINGS} readings stored in ${Math.round(performance.now() - started)} ms (${onQuestDb ? 'QuestDB' : database.databaseUrl ? 'Postgres' : 'PGlite'})`)
}, 300_000)

afterAll(async () => {
  await database?.drop()
  if (onQuestDb) {
    const admin = postgres(QUESTDB_PG_URL!, { max: 1, prepare: false, onnotice: () => {} })
    await dropQuestdbTable(admin, questTable)
    await admin.end()
  }
})

test(`a CSV export of ${READINGS} readings keeps the server within ${LIMIT_MB} MB of its idle RSS`, async () => {
  const server = await startServer(serverEnv)
  try {
    const pid = server.proc.pid
    const query = `from=${new Date(START).toISOString()}&to=${new Date(START + MINUTES * 60_000).toISOString()}`
    const get = (q: string) => fetch(`${server.baseUrl}/api/v1/environment/readings?${query}&${q}`, { headers: { authorization: `Bearer ${token}` } })
    // Warm the paths (JSON and a small CSV file) so idle means ready, then settle.
    for (let i = 0; i < 3; i++) {
      expect((await get('limit=1000')).status).toBe(200)
      expect((await (await get('format=csv&limit=20000')).text()).split('\r\n')).toHaveLength(20_002)
    }
    await Bun.sleep(1000)
    const idle = rssBytes(pid)
    let peak = idle
    const sampler = setInterval(() => { try { peak = Math.max(peak, rssBytes(pid)) } catch { /* exited */ } }, 20)
    const started = performance.now()
    let lines = 0
    let bytes = 0
    let tail = ''
    try {
      const res = await get(`format=csv&limit=${READINGS}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('link')).toBeNull()
      const decoder = new TextDecoder()
      for await (const chunk of res.body!) {
        bytes += chunk.byteLength
        const text = tail + decoder.decode(chunk, { stream: true })
        const parts = text.split('\r\n')
        tail = parts.pop()!
        lines += parts.length
      }
    } finally {
      clearInterval(sampler)
    }
    const seconds = (performance.now() - started) / 1000
    const growthMb = (peak - idle) / 2 ** 20
    console.log(`readings-export-memory: ${lines - 1} rows, ${(bytes / 2 ** 20).toFixed(1)} MB of CSV in ${seconds.toFixed(1)} s; server RSS idle ${(idle / 2 ** 20).toFixed(1)} MB, peak ${(peak / 2 ** 20).toFixed(1)} MB, growth ${growthMb.toFixed(1)} MB`)
    expect(tail).toBe('')
    expect(lines - 1).toBe(READINGS)
    expect(growthMb).toBeLessThan(LIMIT_MB)
    // The collections that kept it there are counted, each a stop of the whole process (hrs_readings_csv_collections_seconds).
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text()
    const collections = Number(/^hrs_readings_csv_collections_seconds_count\{kind="full"\} (\d+)$/m.exec(metrics)?.[1] ?? 0)
    console.log(`readings-export-memory: ${collections} full collections asked for, ${Number(/^hrs_readings_csv_collections_seconds_sum\{kind="full"\} (\S+)$/m.exec(metrics)?.[1] ?? 0).toFixed(2)} s in all`)
    expect(collections).toBeGreaterThan(0)
  } finally {
    await server.stop()
  }
}, 300_000)
