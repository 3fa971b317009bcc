// Latest readings on QuestDB (issue 57): where every series the catalogue holds for the filter has a reading in a tail
// of the window (its last minutes, or the recent partitions), latest() reads that alone; otherwise the whole window.
// Either way the answer is the one a read of the whole window gives, which is what this checks, against the same
// table read without a catalogue (the whole window always). Runs only when QUESTDB_ILP and QUESTDB_PG_URL point at a server.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import type { RawRow, Reading, ReadingsFilter, ReadingsStore } from '../../ingest/stores/interface.ts'
import { questdbStore } from '../../ingest/stores/questdb.ts'
import { loadConfig } from '../../src/config.ts'
import { createTestEnv, dropQuestdbTable, waitFor, type TestEnv } from '../helpers.ts'

const QUESTDB_ILP = process.env.QUESTDB_ILP || undefined
const QUESTDB_PG_URL = process.env.QUESTDB_PG_URL || undefined
const admin = QUESTDB_ILP && QUESTDB_PG_URL ? postgres(QUESTDB_PG_URL, { max: 1, prepare: false, onnotice: () => {} }) : undefined
if (!admin) console.log('readings-latest-questdb.test: skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run it against a QuestDB server')
afterAll(async () => { await admin?.end() })

const DAY = 86_400_000
const NOW = Date.now()
const accountId = 'acct_latest_qdb'
/** Room 1: 3 devices × 2 channels reporting every 10 minutes up to now over 3 days. Room 2: one device silent for 10 days. */
const readings: Reading[] = []
for (let ts = NOW - 3 * DAY; ts < NOW; ts += 600_000) {
  for (const deviceId of ['dev_a', 'dev_b', 'dev_c']) {
    for (const channel of ['t1', 'h1']) readings.push({ accountId, deviceId, channel, ts, value: (ts / 600_000 + deviceId.charCodeAt(4)) % 50, metric: channel === 't1' ? 'temperature' : 'humidity', environmentId: 'env_1' })
  }
}
for (let ts = NOW - 14 * DAY; ts < NOW - 10 * DAY; ts += 3_600_000) readings.push({ accountId, deviceId: 'dev_old', channel: 't1', ts, value: ts % 7, metric: 'temperature', environmentId: 'env_2' })
/** Room 3: one device reporting every 2 hours, its last reading 40 minutes ago: past the last minutes, within today and yesterday. */
for (let ts = NOW - 40 * 60_000 - 2 * DAY; ts <= NOW - 40 * 60_000; ts += 2 * 3_600_000) readings.push({ accountId, deviceId: 'dev_slow', channel: 't1', ts, value: ts % 11, metric: 'temperature', environmentId: 'env_3' })

describe.skipIf(!admin)('latest readings on QuestDB from the recent partitions', () => {
  const table = `hrs_test_latest_${Date.now().toString(36)}`
  const config = loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table })
  let env: TestEnv
  let store: ReadingsStore
  let whole: ReadingsStore
  let listed = 0

  beforeAll(async () => {
    env = await createTestEnv()
    const catalogue = env.deps.series
    const counting = Object.assign(Object.create(Object.getPrototypeOf(catalogue)), catalogue, { list: (...args: Parameters<typeof catalogue.list>) => { listed++; return catalogue.list(...args) } })
    store = await questdbStore(config, counting)
    whole = await questdbStore(config)
    await store.write(readings)
    await waitFor(async () => Number((await admin!.unsafe(`select count() n from ${table}`))[0]!.n) === readings.length, 60_000, 100)
  }, 120_000)
  afterAll(async () => {
    await store?.close()
    await whole?.close()
    await dropQuestdbTable(admin!, table)
    await env?.close()
  })

  const everything = { from: 0, to: NOW + 366 * DAY }
  const same = async (filter: ReadingsFilter, limit = 100, after?: [string, string]): Promise<RawRow[]> => {
    const rows = await store.latest(filter, limit, after)
    expect(rows).toEqual(await whole.latest(filter, limit, after))
    return rows
  }

  test('a room whose every series reports: its latest values, as the whole window gives them', async () => {
    listed = 0
    const rows = await same({ accountId, environmentId: 'env_1', ...everything })
    expect(listed).toBe(1)
    expect(rows).toHaveLength(6)
    for (const row of rows) expect(NOW - row.ts).toBeLessThan(600_000 + 1)
    // Paged: two rows, then the rest after the second.
    const first = await same({ accountId, environmentId: 'env_1', ...everything }, 2)
    const rest = await same({ accountId, environmentId: 'env_1', ...everything }, 100, [first[1]!.device_id, first[1]!.channel])
    expect([...first, ...rest]).toEqual(rows)
  })

  test('a room reporting every two hours: from today and yesterday (its last reading is older than the last minutes)', async () => {
    const rows = await same({ accountId, environmentId: 'env_3', ...everything })
    expect(rows.map((r) => [r.device_id, r.ts])).toEqual([['dev_slow', NOW - 40 * 60_000]])
  })

  test('a series silent for days is answered too (the whole window is read)', async () => {
    const rows = await same({ accountId, ...everything })
    expect(rows).toHaveLength(8)
    const old = rows.find((r) => r.device_id === 'dev_old')!
    expect(old.ts).toBeLessThan(NOW - 10 * DAY)
    expect(await same({ accountId, environmentId: 'env_2', ...everything })).toEqual([old])
  })

  test('a window ending in the past, and one starting inside the recent partitions', async () => {
    expect(await same({ accountId, from: 0, to: NOW - 2 * DAY })).toHaveLength(8)
    expect(await same({ accountId, from: NOW - 3_600_000, to: NOW + DAY })).toHaveLength(7)
    expect(await same({ accountId, environmentId: 'env_1', channel: 't1', ...everything })).toHaveLength(3)
  })
})
