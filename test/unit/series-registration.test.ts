// Writers registering the same new series at once (ingest/series.ts): the first batches of a fleet, several store
// writes in flight in one process and more in others, each with its own catalogue. They must all get the same ids
// and none may fail: inserted in join order, concurrent registrations deadlocked in Postgres (a bench run's ingest
// log writer lost 23 store writes to it, each redelivered a second later). Runs on PGlite, and on Postgres when
// DATABASE_URL is set (where the deadlock was).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { SeriesCatalogue } from '../../ingest/series.ts'
import type { Reading } from '../../ingest/stores/interface.ts'
import { createTestEnv, shuffled, type TestEnv } from '../helpers.ts'

let env: TestEnv
let accountId: string

beforeAll(async () => {
  env = await createTestEnv()
  accountId = (await env.account()).accountId
})
afterAll(async () => { await env?.close() })

test('eight writers registering the same 2,000 new series at once, in different orders, all succeed with the same ids (half of them taking ids first for a hook, as kept-latest.ts does)', async () => {
  for (let round = 0; round < 3; round++) {
    const readings: Reading[] = []
    for (let d = 0; d < 200; d++) {
      for (let c = 0; c < 10; c++) {
        readings.push({ accountId, deviceId: `dev_r${round}_${d}`, channel: `c${c}`, metric: c % 2 ? 'humidity' : 'temperature', environmentId: null, ts: 1_700_000_000_000, value: c })
      }
    }
    const writers = Array.from({ length: 8 }, () => new SeriesCatalogue(env.deps.database))
    const orders = writers.map((_, i) => shuffled(readings, round * 10 + i + 1))
    // Ids taken first and handed to the hook before the insert (beforeRegistering), by every other writer.
    const planned = new Set<number>()
    const hook = async (series: readonly { id: number }[]) => { for (const s of series) planned.add(s.id) }
    const results = await Promise.allSettled(writers.map((catalogue, i) => catalogue.idsOf(orders[i]!, i % 2 ? hook : undefined)))
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([])
    // The same series has the same id whichever writer registered it.
    const idOf = new Map<string, number>()
    results.forEach((result, i) => {
      const ids = (result as PromiseFulfilledResult<{ series: number[] }>).value.series
      orders[i]!.forEach((r, k) => {
        const key = `${r.deviceId}/${r.channel}`
        const known = idOf.get(key)
        if (known === undefined) idOf.set(key, ids[k]!)
        else expect(ids[k]).toBe(known)
      })
    })
    expect(planned.size).toBeGreaterThan(0)
    expect(idOf.size).toBe(2_000)
    expect(new Set(idOf.values()).size).toBe(2_000)
  }
}, 60_000)
