// Writers storing the same readings at once (ingest/stores/sql.ts): a device retrying requests whose first tries are
// still being written, an ingest log redelivering a batch whose first write has not finished, several servers taking
// one fleet's retries. Each batch holds the readings in its own order (requests interleave differently), and a
// unique key makes an insert wait for another transaction's uncommitted row with that key: taken in different
// orders, two writers each wait on the other, and Postgres cancels one (deadlock detected), failing its batch: at
// 20,000 readings a batch (the ingest log writer's), some of eight writers failed every run. All must succeed, and
// each reading be stored and counted in the rollups once. Runs on PGlite, and on Postgres when DATABASE_URL is set
// (where the deadlock was; with 2,000 readings a batch it did not show).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sqlStore } from '../../ingest/stores/sql.ts'
import type { Reading } from '../../ingest/stores/interface.ts'
import { createTestEnv, shuffled, type TestEnv } from '../helpers.ts'

let env: TestEnv

beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env?.close() })

test('eight writers storing the same 20,000 readings at once, in different orders, all succeed and store each once', async () => {
  const accountId = 'acct_lock_order'
  const from = Date.UTC(2026, 10, 20, 6, 0, 0)
  // The series exist first (ingest/series.ts registers them in key order already): what is left is the readings.
  const store = sqlStore(env.deps.database)
  const devices = Array.from({ length: 200 }, (_, d) => `dev_lock_${d}`)
  await store.write(devices.map((deviceId) => ({ accountId, deviceId, channel: 'c0', metric: 'temperature', environmentId: null, ts: from - 60_000, value: 0 })))
  for (let round = 0; round < 3; round++) {
    const readings: Reading[] = []
    for (const deviceId of devices) {
      for (let k = 0; k < 100; k++) readings.push({ accountId, deviceId, channel: 'c0', metric: 'temperature', environmentId: null, ts: from + round * 3_600_000 + k * 1000, value: k })
    }
    const writers = Array.from({ length: 8 }, () => sqlStore(env.deps.database))
    const results = await Promise.allSettled(writers.map((writer, i) => writer.write(shuffled(readings, round * 10 + i + 1))))
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([])
  }
  const [stored] = await env.deps.database.query<{ n: number }>(`select count(*)::int as n from reading_rows r join reading_series s on s.id = r.series_id where s.account_id = $1 and r.ts >= $2::timestamptz`, [accountId, new Date(from).toISOString()])
  expect(stored!.n).toBe(3 * 20_000)
  // The minute rollups count each reading once: every write that stored nothing added nothing.
  const [counted] = await env.deps.database.query<{ n: number }>(`select sum(count)::int as n from reading_rollups_1m m join reading_series s on s.id = m.series_id where s.account_id = $1 and m.bucket >= $2::timestamptz`, [accountId, new Date(from).toISOString()])
  expect(counted!.n).toBe(3 * 20_000)
}, 60_000)
