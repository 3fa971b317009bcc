// The start deadline of a postgres.js pool (db/client.ts, cancelQueriesNotStarted) tells a Postgres that cannot be
// reached from a pool that is busy: a query waiting its turn behind others that are being run is not cancelled,
// however long the queue (the outage side, 503 within 2 s, is test/processes/postgres-outage.test.ts).
// Postgres only (the wrapper is postgres.js's): it runs when DATABASE_URL is set.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { openPostgres, type Database } from '../../db/client.ts'
import { REAL_DATABASE_URL } from '../helpers.ts'

let database: Database | undefined
beforeAll(async () => { if (REAL_DATABASE_URL) database = await openPostgres(REAL_DATABASE_URL) })
afterAll(async () => { await database?.close() })

test.skipIf(!REAL_DATABASE_URL)('a read queued behind others on a busy pool waits its turn past the start deadline instead of failing', async () => {
  const reader = database!.openReader({ connections: 1, statementTimeoutMs: 10_000 })
  try {
    // One connection, eight reads of 0.3 s: the last waits 2.1 s for it, twice the start deadline.
    const started = performance.now()
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => reader.query<{ n: number }>(`select ${i} as n from pg_sleep(0.3)`, [], new AbortController().signal)))
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value[0]!.n : (r.reason as Error).message))).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
    expect(performance.now() - started).toBeGreaterThan(2_000)
  } finally {
    await reader.close()
  }
})
