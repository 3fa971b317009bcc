// Pages read ahead (ingest/query.ts, ingest/read-ahead.ts): which requests start reading the next page while the
// client takes in this one, and that a walk still reads each page once and answers exactly the rows of one page.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sqlStore } from '../../ingest/stores/sql.ts'
import type { ReadingsStore } from '../../ingest/stores/interface.ts'
import { loadConfig } from '../../src/config.ts'
import { createTestEnv, waitFor, type TestEnv } from '../helpers.ts'

/** The store, counting its bucket and raw reads and noting where each bucket read starts (after which bucket). */
function counted(store: ReadingsStore, reads: { buckets: number; raw: number; bucketsAfter: number[] }): ReadingsStore {
  return {
    ...store,
    buckets: (...args) => { reads.buckets++; reads.bucketsAfter.push(args[3]?.[0] ?? -1); return store.buckets(...args) },
    raw: (...args) => { reads.raw++; return store.raw(...args) },
  }
}

const HOUR = 3_600_000
const reads = { buckets: 0, raw: 0, bucketsAfter: [] as number[] }
let env: TestEnv
let token = ''
/** 12 hours of readings every 10 minutes on 2 channels: 24 hourly buckets (3 pages at limit=10), 144 raw rows. */
const to = Math.floor(Date.now() / HOUR) * HOUR
const from = to - 12 * HOUR
const window = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`

beforeAll(async () => {
  // heavyRows 30: the 24-row hourly query is light; pages of 40 of the same 12 hours by the minute (1,440 rows) heavy.
  // Nothing kept (ingest/kept-buckets.ts): every read counted here is one the store makes for a page.
  env = await createTestEnv({ readingsQueries: { ...loadConfig({}).readingsQueries, heavyRows: 30, keptRows: 0 } }, { readings: (database) => counted(sqlStore(database), reads) })
  token = (await env.account({ scopes: ['sensors:write', 'environment:read'] })).token
  const res = await env.request('POST', '/api/v1/sensors/devices', { token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }, { key: 'h1', metric: 'humidity' }] } })
  const device = (await res.json()) as { key: string }
  const readings = []
  for (let ts = from; ts < to; ts += 10 * 60_000) readings.push({ channel: 't1', value: ts % 7, ts: new Date(ts).toISOString() }, { channel: 'h1', value: ts % 11, ts: new Date(ts).toISOString() })
  expect((await env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings } })).status).toBe(202)
})
afterAll(async () => { await env?.close() })

async function get(path: string) {
  const res = await env.request('GET', path, { token })
  expect(res.status).toBe(200)
  return (await res.json()) as { data: { ts: string }[]; next_cursor: string | null }
}
/** Lets reads started after an answer went out (a read ahead) finish, then counts from zero. */
async function settled() {
  await Bun.sleep(100)
  reads.buckets = 0
  reads.raw = 0
  reads.bucketsAfter = []
}

describe('reading ahead', () => {
  test('a light bucketed query\'s first page starts reading the second; the walk reads each page once and equals one page', async () => {
    const whole = await get(`/api/v1/environment/readings?${window}&interval=1h&limit=100`)
    expect(whole.data).toHaveLength(24)
    await settled()
    const first = await get(`/api/v1/environment/readings?${window}&interval=1h&limit=10`)
    // The second page is read once the first has been answered.
    await waitFor(async () => reads.buckets === 2, 2_000)
    expect(reads.buckets).toBe(2)
    const rows = [...first.data]
    let cursor = first.next_cursor
    while (cursor) {
      const page = await get(`/api/v1/environment/readings?${window}&interval=1h&limit=10&cursor=${encodeURIComponent(cursor)}`)
      rows.push(...page.data)
      cursor = page.next_cursor
    }
    await Bun.sleep(100)
    // Three pages, three reads: the second and third were the ones read ahead, and the last page starts none.
    expect(reads.buckets).toBe(3)
    expect(rows).toEqual(whole.data)
  })

  test('a heavy query\'s first page reads nothing ahead (a first page may be all a client wants); its second page does', async () => {
    await settled()
    const first = await get(`/api/v1/environment/readings?${window}&interval=1m&limit=40`)
    expect(first.next_cursor).toBeString()
    // Sparse minutes take the planner a few reads per page; a read of the next page starts after this page's last bucket.
    const afterFirst = Date.parse(first.data.at(-1)!.ts)
    await Bun.sleep(200)
    expect(reads.bucketsAfter).not.toContain(afterFirst)
    const second = await get(`/api/v1/environment/readings?${window}&interval=1m&limit=40&cursor=${encodeURIComponent(first.next_cursor!)}`)
    expect(reads.bucketsAfter).toContain(afterFirst)
    const afterSecond = Date.parse(second.data.at(-1)!.ts)
    await waitFor(async () => reads.bucketsAfter.includes(afterSecond), 2_000)
    expect(reads.bucketsAfter).toContain(afterSecond)
  })

  test('a raw query\'s first page reads nothing ahead either', async () => {
    await settled()
    const first = await get(`/api/v1/environment/readings?${window}&limit=10`)
    expect(first.next_cursor).toBeString()
    const answered = reads.raw
    expect(answered).toBeGreaterThan(0)
    await Bun.sleep(200)
    expect(reads.raw).toBe(answered)
  })
})
