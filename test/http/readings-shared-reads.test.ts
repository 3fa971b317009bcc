// Identical readings questions in flight share one read (ingest/shared-reads.ts, issue 57): the store reads once, every
// answer is byte for byte the one a read of its own gives, another account asking the same question at the same
// moment gets its own rows from a read of its own, and a client that goes away leaves the others' read running.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sqlStore } from '../../ingest/stores/sql.ts'
import type { ReadingsStore } from '../../ingest/stores/interface.ts'
import { JOIN_MS } from '../../ingest/shared-reads.ts'
import { createTestEnv, waitFor, type TestEnv } from '../helpers.ts'
import { loadConfig } from '../../src/config.ts'

/** The store, counting bucket and latest reads, each held until the gate opens while one is closed. */
const reads = { buckets: 0, latest: 0 }
let gate: Promise<void> | undefined
let open = () => {}
const closeGate = () => { gate = new Promise<void>((resolve) => { open = resolve }) }
const openGate = () => { open(); gate = undefined }
function gated(store: ReadingsStore): ReadingsStore {
  return {
    ...store,
    buckets: async (...args) => { reads.buckets++; await gate; return store.buckets(...args) },
    latest: async (...args) => { reads.latest++; await gate; return store.latest(...args) },
  }
}

const HOUR = 3_600_000
const to = Math.floor(Date.now() / HOUR) * HOUR
const from = to - 6 * HOUR
const question = `/api/v1/environment/readings?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&interval=1h&agg=avg,min,max,count`
let env: TestEnv
const tokens: string[] = []

beforeAll(async () => {
  // Nothing kept (ingest/kept-buckets.ts): every read counted here is one the store makes for a request.
  env = await createTestEnv({ readingsQueries: { ...loadConfig({}).readingsQueries, keptRows: 0 } }, { readings: (database) => gated(sqlStore(database)) })
  // Two accounts with a device each, the same channel, different values: 10 and 20.
  for (const value of [10, 20]) {
    const { token } = await env.account({ scopes: ['sensors:write', 'environment:read'] })
    tokens.push(token)
    const device = (await (await env.request('POST', '/api/v1/sensors/devices', { token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })).json()) as { key: string }
    const readings = []
    for (let ts = from; ts < to; ts += 10 * 60_000) readings.push({ channel: 't1', value: value + (ts % 3), ts: new Date(ts).toISOString() })
    expect((await env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings } })).status).toBe(202)
  }
})
afterAll(async () => { await env?.close() })

/** Lets a join window pass, so the next request reads afresh, and counts from zero. */
async function fresh() {
  await Bun.sleep(JOIN_MS + 50)
  reads.buckets = 0
  reads.latest = 0
}
const sharedCount = () => env.deps.metrics.readingsSharedReads.get()
const get = (path: string, token: string, signal?: AbortSignal) => fetch(env.baseUrl + path, { headers: { authorization: `Bearer ${token}` }, signal })

describe('identical questions in flight', () => {
  test('five at once: one read, five answers byte for byte equal to a read of its own', async () => {
    await fresh()
    const before = sharedCount()
    closeGate()
    const answers = Array.from({ length: 5 }, () => get(question, tokens[0]!))
    await waitFor(async () => reads.buckets >= 1, 2_000)
    await Bun.sleep(100)
    openGate()
    const texts = await Promise.all(answers.map(async (a) => { const res = await a; expect(res.status).toBe(200); return res.text() }))
    expect(reads.buckets).toBe(1)
    expect(sharedCount()).toBe(before + 4)
    // A read of its own, once the join window has passed.
    await fresh()
    const alone = await (await get(question, tokens[0]!)).text()
    expect(reads.buckets).toBe(1)
    for (const text of texts) expect(text).toBe(alone)
    const rows = (JSON.parse(alone) as { data: { avg: number; count: number }[] }).data
    expect(rows).toHaveLength(6)
    expect(rows.every((r) => r.count === 6 && r.avg >= 10 && r.avg < 13)).toBe(true)
  })

  test('asked again once answered: the answer is reused within JOIN_MS of the read\'s start, read afresh after it', async () => {
    await fresh()
    const before = sharedCount()
    const first = await (await get(question, tokens[0]!)).text()
    const again = await (await get(question, tokens[0]!)).text()
    expect({ reads: reads.buckets, shared: sharedCount() - before, same: again === first }).toEqual({ reads: 1, shared: 1, same: true })
    // The other account's same question is never the first one's answer.
    const other = (await (await get(question, tokens[1]!)).json()) as { data: { avg: number }[] }
    expect(other.data.every((r) => r.avg >= 20 && r.avg < 23)).toBe(true)
    expect(reads.buckets).toBe(2)
    await Bun.sleep(JOIN_MS + 50)
    expect(await (await get(question, tokens[0]!)).text()).toBe(first)
    expect(reads.buckets).toBe(3)
  })

  test('a failed read is not kept: the next asker reads again', async () => {
    await fresh()
    const real = env.deps.readings.buckets
    let failures = 1
    env.deps.readings.buckets = async (...args) => { if (failures-- > 0) { reads.buckets++; throw new Error('store went away') } return real(...args) }
    try {
      expect((await get(question, tokens[0]!)).status).toBeGreaterThanOrEqual(500)
      expect((await get(question, tokens[0]!)).status).toBe(200)
      expect(reads.buckets).toBe(2)
    } finally {
      env.deps.readings.buckets = real
    }
  })

  test('another account asking the same question at the same moment reads its own rows', async () => {
    await fresh()
    closeGate()
    const answers = [get(question, tokens[0]!), get(question, tokens[1]!)]
    await waitFor(async () => reads.buckets >= 2, 2_000)
    openGate()
    const [one, two] = await Promise.all(answers.map(async (a) => (await (await a).json()) as { data: { avg: number }[] }))
    expect(reads.buckets).toBe(2)
    expect(one!.data.every((r) => r.avg >= 10 && r.avg < 13)).toBe(true)
    expect(two!.data.every((r) => r.avg >= 20 && r.avg < 23)).toBe(true)
  })

  test('a different page position or page size is a read of its own', async () => {
    await fresh()
    closeGate()
    const answers = [get(`${question}&limit=2`, tokens[0]!), get(`${question}&limit=3`, tokens[0]!)]
    await waitFor(async () => reads.buckets >= 2, 2_000)
    openGate()
    const [two, three] = await Promise.all(answers.map(async (a) => (await (await a).json()) as { data: unknown[] }))
    expect([two!.data.length, three!.data.length]).toEqual([2, 3])
  })

  test('latest values are shared the same way', async () => {
    await fresh()
    closeGate()
    const answers = Array.from({ length: 3 }, () => get('/api/v1/environment/readings?latest=true', tokens[1]!))
    await waitFor(async () => reads.latest >= 1, 2_000)
    await Bun.sleep(100)
    openGate()
    const texts = await Promise.all(answers.map(async (a) => (await a).text()))
    expect(reads.latest).toBe(1)
    expect(new Set(texts).size).toBe(1)
    expect((JSON.parse(texts[0]!) as { data: { value: number }[] }).data[0]!.value).toBeGreaterThanOrEqual(20)
  })

  test('a client that goes away gives up its own wait; the others still get their answer from the one read', async () => {
    await fresh()
    closeGate()
    const leaving = new AbortController()
    const first = get(question, tokens[0]!, leaving.signal).then(() => 'answered', () => 'gone')
    await waitFor(async () => reads.buckets >= 1, 2_000)
    const staying = get(question, tokens[0]!)
    await Bun.sleep(100)
    leaving.abort()
    expect(await first).toBe('gone')
    await Bun.sleep(100)
    openGate()
    const res = await staying
    expect(res.status).toBe(200)
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(6)
    expect(reads.buckets).toBe(1)
  })
})
