// postgres.js as patched at install (patches/postgres+3.4.9.patch): a query that fails after Postgres sent some of
// its rows (a statement cancelled or timed out, an error on a later row) must not leave its row count to the next
// query on the connection. Unpatched, that query resolved with as many holes before its own rows
// (porsager/postgres#1119), and a readings export broke off on "undefined is not an object (evaluating
// 's.device_id')" when a step was cancelled. Postgres only (the driver is postgres.js): it runs when DATABASE_URL is set.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { openPostgres, type Database } from '../../db/client.ts'
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
