// The rollup tables the store keeps itself where QuestDB has no materialized views (7.4): a minute is recomputed once
// its mark has settled (no write for a minute), never while it is still being written, when its day is read raw
// anyway (ingest/stores/questdb-rollups.ts). Runs only when QUESTDB_ILP and QUESTDB_PG_URL point at a server without
// materialized views (before 8.3.1).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import type { BucketRow, Reading, ReadingsStore } from '../../ingest/stores/interface.ts'
import { questdbStore } from '../../ingest/stores/questdb.ts'
import { loadConfig } from '../../src/config.ts'
import { createTestEnv, dropQuestdbTable, waitFor, type TestEnv } from '../helpers.ts'

const QUESTDB_ILP = process.env.QUESTDB_ILP || undefined
const QUESTDB_PG_URL = process.env.QUESTDB_PG_URL || undefined
const admin = QUESTDB_ILP && QUESTDB_PG_URL ? postgres(QUESTDB_PG_URL, { max: 1, prepare: false, onnotice: () => {} }) : undefined
const hasViews = admin ? await admin.unsafe('select count() from materialized_views()').then(() => true, () => false) : false
if (!admin) console.log('readings-own-rollups.test: skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run it against a QuestDB server')
else if (hasViews) console.log('readings-own-rollups.test: skipped: this QuestDB keeps materialized views (8.3.1 on), so the store keeps no rollup tables of its own')

afterAll(async () => { await admin?.end() })

const DAY = 86_400_000
const accountId = 'acct_own_rollups'
const DAY_ONE = Math.floor(Date.now() / DAY) * DAY - 10 * DAY
/** One series, a reading every 10 minutes over a day. */
const dayOf = (value: number): Reading[] => Array.from({ length: 144 }, (_, i) => ({ accountId, deviceId: 'dev_a', channel: 't1', ts: DAY_ONE + i * 600_000, value, metric: 'temperature', environmentId: 'env_1' }))

describe.skipIf(!admin || hasViews)('own rollups (QuestDB 7.4)', () => {
  const table = `hrs_test_own_rollups_${Date.now().toString(36)}`
  let env: TestEnv
  let store: ReadingsStore
  const config = loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: table })
  const rolledUp = async () => Number((await admin!.unsafe(`select coalesce(sum(cnt), 0) n from ${table}_1m`))[0]!.n)
  const marks = async () => (await env.deps.database.query<{ n: number }>('select count(*)::int n from reading_rollup_marks where store = $1', [table]))[0]!.n
  const daily = (): Promise<BucketRow[]> => store.buckets({ accountId, from: DAY_ONE, to: DAY_ONE + DAY }, { interval: '1d', aggregates: ['count', 'avg'], groupBy: 'series' }, 10)

  beforeAll(async () => {
    env = await createTestEnv()
    store = await questdbStore(config, undefined, { records: env.deps.database, log: (message, error) => console.error(message, error) })
  })
  afterAll(async () => {
    await store?.close()
    await dropQuestdbTable(admin!, table)
    await env?.close()
  })

  test('a minute just written is not recomputed (its day is read raw); once settled it is, and its mark goes', async () => {
    await store.write(dayOf(10))
    await waitFor(async () => Number((await admin!.unsafe(`select count() n from ${table}`))[0]!.n) === 144, 30_000, 50)
    expect(await marks()).toBe(144)

    // A refresh with the store's own settling time: every mark was written a moment ago, so nothing is recomputed.
    await store.refreshRollups!()
    expect(await rolledUp()).toBe(0)
    expect(await marks()).toBe(144)
    // The day is marked, so it is read raw, whole.
    expect(await daily()).toMatchObject([{ ts: DAY_ONE, count: 144, avg: 10 }])

    // Settling at once (no write is under way): every minute is recomputed and its mark removed.
    await store.refreshRollups!(0)
    expect(await rolledUp()).toBe(144)
    expect(await marks()).toBe(0)
    expect(await daily()).toMatchObject([{ ts: DAY_ONE, count: 144, avg: 10 }])
  }, 120_000)
})
