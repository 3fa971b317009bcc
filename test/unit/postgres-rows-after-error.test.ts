// postgres.js as patched at install (patches/postgres+3.4.9.patch): a query that fails after Postgres sent some of
// its rows (a statement cancelled or timed out, an error on a later row) must not leave its row count to the next
// query on the connection. Unpatched, that query resolved with as many holes before its own rows
// (porsager/postgres#1119), and a readings export broke off on "undefined is not an object (evaluating
// 's.device_id')" when a step was cancelled. Postgres only (the driver is postgres.js): it runs when DATABASE_URL is set.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { openPostgres, ReadCancelled, type Database } from '../../db/client.ts'
import { REAL_DATABASE_URL } from '../helpers.ts'

let database: Database | undefined
beforeAll(async () => { if (REAL_DATABASE_URL) database = await openPostgres(REAL_DATABASE_URL) })
afterAll(async () => { await database?.close() })

test.skipIf(!REAL_DATABASE_URL)('the query after one that failed mid-rows on the same connection gets its own rows, no holes', async () => {
  const reader = database!.openReader({ connections: 1, statementTimeoutMs: 10_000 })
  const never = new AbortController().signal
  try {
    // One connection: the second query is sent behind the first, which streams three rows, then divides by zero.
    const failing = reader.query(`select i, 1 / (4 - i) as boom from generate_series(1, 10) as i`, [], never).then(() => 'answered', (error: Error) => error.message)
    const next = reader.query<{ x: number }>(`select x from generate_series(1, 5) as x`, [], never)
    expect(await failing).toBe('division by zero')
    const rows = await next
    expect({ length: rows.length, xs: [...rows].map((r) => r?.x) }).toEqual({ length: 5, xs: [1, 2, 3, 4, 5] })
  } finally {
    await reader.close()
  }
})

// Also patched: a query cancelled before the pool handed it to a connection (its handler runs a microtask after
// then(), and a request's deadline can fire in between) left that connection marked busy with nothing running, so
// every later query on a one-connection reader waited forever.
test.skipIf(!REAL_DATABASE_URL)('a read cancelled before it reached a connection leaves the connection to the next read', async () => {
  const reader = database!.openReader({ connections: 1, statementTimeoutMs: 10_000 })
  /** The read's outcome, or "still waiting" if it has none after 10 s: the bug was a wait without end. */
  const outcome = (read: Promise<{ v: string }[]>) => Promise.race([
    read.then((rows) => rows.map((r) => r.v).join(), (error: Error) => (error instanceof ReadCancelled ? 'cancelled' : error.message)),
    Bun.sleep(10_000).then(() => 'still waiting'),
  ])
  try {
    for (const abortedAt of ['before the read', 'as it starts']) {
      const controller = new AbortController()
      if (abortedAt === 'before the read') controller.abort()
      const cancelled = reader.query<{ v: string }>(`select 'cancelled' as v`, [], controller.signal)
      controller.abort()
      expect({ abortedAt, outcome: await outcome(cancelled) }).toEqual({ abortedAt, outcome: 'cancelled' })
      expect({ abortedAt, outcome: await outcome(reader.query<{ v: string }>(`select 'next' as v`, [], new AbortController().signal)) }).toEqual({ abortedAt, outcome: 'next' })
    }
  } finally {
    await reader.close()
  }
}, 30_000)
