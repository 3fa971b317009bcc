// Migration 0010 adds the five-minute rollups to a database whose minute rollups are already kept: rolled up from
// the minutes, they must be what the write keeps for new readings. A database is written with five-minute rollups
// kept by the write, their table is then dropped as though an earlier version had run, and the migration applied
// again: the rows it makes equal the ones the write made, bucket for bucket.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Database } from '../../db/client.ts'
import { openPglite, openPostgres } from '../../db/client.ts'
import type { Reading } from '../../ingest/stores/interface.ts'
import { sqlStore } from '../../ingest/stores/sql.ts'
import { freshDatabase } from '../helpers.ts'

const DAY = 86_400_000
let fresh: Awaited<ReturnType<typeof freshDatabase>>
let database: Database

beforeAll(async () => {
  fresh = await freshDatabase()
  database = fresh.databaseUrl ? await openPostgres(fresh.databaseUrl) : await openPglite('memory://')
  await database.migrate()
})
afterAll(async () => { await database?.close(); await fresh?.drop() })

test('the five-minute rollups migration 0010 makes from the minute rollups equal those the write keeps', async () => {
  const store = sqlStore(database)
  // Three weeks of readings (three partitions), every 40 s on 6 series, in batches out of time order, one sent twice.
  // Values are quarters, so every sum is exact whatever order it is added in.
  const first = Math.floor(Date.now() / DAY) * DAY - 20 * DAY
  const readings: Reading[] = []
  for (let ts = first; ts < first + 20 * DAY; ts += 40_000) {
    for (let d = 0; d < 3; d++) {
      for (const channel of ['t1', 'h1']) readings.push({ accountId: 'acc_five', deviceId: `dev_${d}`, channel, ts, value: ((ts / 40_000 + d) % 101) / 4, metric: channel === 't1' ? 'temperature' : 'humidity', environmentId: 'env_1' })
    }
  }
  const batches: Reading[][] = []
  for (let i = 0; i < readings.length; i += 5_000) batches.push(readings.slice(i, i + 5_000))
  for (const batch of [...batches].reverse()) await store.write(batch)
  await store.write(batches[3]!)
  const rows = () => database.query<Record<string, unknown>>(`select series_id, bucket, count, sum, min, max, first_ts, first_value, last_ts, last_value from reading_rollups_5m order by series_id, bucket`)
  const kept = await rows()
  expect(kept).toHaveLength(6 * 20 * 288)
  expect(kept.reduce((n, r) => n + Number(r.count), 0)).toBe(readings.length)
  await store.close()

  // As an earlier version left it: no five-minute table, migration 0010 not applied.
  await database.query('drop table reading_rollups_5m')
  await database.query(`delete from drizzle.__drizzle_migrations where created_at = (select max(created_at) from drizzle.__drizzle_migrations)`)
  await database.migrate()
  expect(await rows()).toEqual(kept)
  // Later writes go on into the partition the migration made and the weeks after it.
  const again = sqlStore(database)
  await again.write([{ ...readings[0]!, ts: Date.now() + 7 * DAY, value: 1 }])
  expect((await database.query<{ n: number }>(`select count(*)::int as n from reading_rollups_5m`))[0]!.n).toBe(kept.length + 1)
  await again.close()
}, 300_000)
