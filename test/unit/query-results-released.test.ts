// The records pool's start deadline (db/client.ts, cancelQueriesNotStarted) lists every query it is handed. A
// postgres.js query is the promise of its rows, so the list must not keep a finished query's rows alive: when it
// did, each result outlived the collector's young generation until the next sweep (a quarter second), and our
// server's GC pauses were 2.5× a hand-written server's at the same pages (bench `hand-written`, 2026-11-29).
// Postgres only (the wrapper is postgres.js's): it runs when DATABASE_URL is set.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { openPostgres, type Database } from '../../db/client.ts'
import { REAL_DATABASE_URL } from '../helpers.ts'

let database: Database | undefined
beforeAll(async () => { if (REAL_DATABASE_URL) database = await openPostgres(REAL_DATABASE_URL) })
afterAll(async () => { await database?.close() })

/** Runs a query of 2,000 rows and keeps only a weak reference to its rows. */
async function weakResult(db: Database): Promise<WeakRef<object>> {
  const rows = await db.query<{ n: number }>('select generate_series(1, 2000) as n')
  expect(rows).toHaveLength(2000)
  return new WeakRef(rows)
}

test.skipIf(!REAL_DATABASE_URL)('a finished query\'s rows are garbage as soon as the caller drops them, not at the deadline\'s next sweep', async () => {
  const results: WeakRef<object>[] = []
  for (let i = 0; i < 5; i++) results.push(await weakResult(database!))
  // A fresh turn of the event loop, so that no deref of this job keeps a result alive; then a full collection,
  // well within the sweep's quarter second.
  await Bun.sleep(1)
  Bun.gc(true)
  expect(results.filter((result) => result.deref() !== undefined)).toHaveLength(0)
})
