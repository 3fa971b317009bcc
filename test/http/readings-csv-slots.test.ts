// Heavy CSV exports (issue 56): a file's first step is read, and its slot taken, before the status line goes out, so
// an export over the account's slots is a 429 problem, never a 200 that dies; a file that breaks off after its
// headers ends without the chunked terminator (the client sees a transfer error) and is counted in /metrics.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sqlStore } from '../../ingest/stores/sql.ts'
import type { Reading, ReadingsStore } from '../../ingest/stores/interface.ts'
import { READINGS_QUERY_DEFAULTS } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

const DAY = Date.UTC(2025, 8, 1)
const iso = (ms: number) => new Date(ms).toISOString()

/** Bucket reads of the store take `delayMs` (the heavy ones hold their slot meanwhile); the account in `failing` has its reads fail from its second on. */
function slowStore(store: ReadingsStore, delayMs: number, failing: { accountId: string; reads: number }, slowRaw: { accountId: string }): ReadingsStore {
  return {
    ...store,
    raw: async (...args) => {
      if (args[0].accountId === slowRaw.accountId) await Bun.sleep(delayMs)
      return store.raw(...args)
    },
    buckets: async (...args) => {
      if (args[0].accountId === failing.accountId && ++failing.reads > 1) throw new Error('the readings store went away')
      await Bun.sleep(delayMs)
      return store.buckets(...args)
    },
  }
}

describe('heavy CSV exports over the account\'s slots', () => {
  let env: TestEnv
  const lines: string[] = []
  const failing = { accountId: '', reads: 0 }
  const slowRaw = { accountId: '' }
  let owner: Awaited<ReturnType<TestEnv['account']>>
  // A day of minute buckets of two series (2,880 rows) is heavy at 100 rows; files are read in steps of 500 rows.
  const query = `from=${iso(DAY)}&to=${iso(DAY + 86_400_000)}&interval=1m&fill=null&agg=avg,count&format=csv&limit=1000000`

  beforeAll(async () => {
    env = await createTestEnv(
      { host: '127.0.0.1', logLevel: 'warn', readingsQueries: { ...READINGS_QUERY_DEFAULTS, heavyRows: 100, perAccount: 2, heavyConcurrency: 2, csvStepRows: 500 } },
      { readings: (database) => slowStore(sqlStore(database), 150, failing, slowRaw), log: createLogger('warn', (text) => { lines.push(text) }) },
    )
    owner = await env.account({ scopes: ['environment:read'] })
    const readings: Reading[] = []
    for (let m = 0; m < 1440; m += 7) {
      for (const channel of ['t1', 'h1']) readings.push({ accountId: owner.accountId, deviceId: `dev_${owner.accountId}`, channel, ts: DAY + m * 60_000 + 1_000, value: m / 10 + 0.1, metric: 'temperature', environmentId: 'env_1' })
    }
    await env.deps.readings.write(readings)
  })
  afterAll(async () => { await env?.close() })

  test('four at once from one account: each a full file, or a 429 problem with Retry-After before any body byte; nothing uncaught in the log', async () => {
    const whole = await (await env.request('GET', `/api/v1/environment/readings?${query}`, { token: owner.token })).text()
    expect(whole.split('\r\n').length - 2).toBe(2880)
    // Four questions, each ending a millisecond earlier than the one before (the same rows): identical ones would share
    // one read and one slot (ingest/shared-reads.ts).
    const answers = await Promise.all(Array.from({ length: 4 }, async (_, i) => {
      const res = await env.request('GET', `/api/v1/environment/readings?${query.replace(`to=${iso(DAY + 86_400_000)}`, `to=${iso(DAY + 86_400_000 - i)}`)}`, { token: owner.token })
      if (res.status === 429) {
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
        await problem(res, 429, 'too_many_queries')
        return 429
      }
      expect(res.status).toBe(200)
      expect(await res.text()).toBe(whole)
      return 200
    }))
    // Two slots: two files, two refusals (at least one of each whatever the timing).
    expect(answers.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1)
    expect(answers.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1)
    expect(answers.filter((s) => s === 200).length).toBeLessThanOrEqual(2)
    expect(lines.filter((line) => /uncaught|too_many_queries|"level":"error"/.test(line))).toEqual([])
  }, 60_000)

  test('a file that breaks off after its headers ends without its terminator, is counted in /metrics, and logs one warning', async () => {
    const counted = () => env.deps.metrics.readingsCsvBroken.get()
    const before = counted()
    failing.accountId = owner.accountId
    failing.reads = 0
    const res = await env.request('GET', `/api/v1/environment/readings?${query}`, { token: owner.token })
    // The first step was read before the status line: the failure comes after it.
    expect(res.status).toBe(200)
    const outcome = await res.text().then((text) => ({ complete: true, text }), (error: Error) => ({ complete: false, text: String(error) }))
    expect(outcome.complete).toBe(false)
    expect(counted()).toBe(before + 1)
    const metrics = await (await env.request('GET', '/metrics')).text()
    expect(metrics).toContain(`hrs_readings_csv_broken_total ${before + 1}`)
    expect(lines.filter((line) => line.includes('readings_csv_broken'))).toHaveLength(1)
    expect(lines.filter((line) => /uncaught|"level":"error"/.test(line))).toEqual([])
    failing.accountId = ''
  }, 60_000)

  test('a reading stored while a file is sent, before its last row, is in that file: it never falls between two files', async () => {
    const writer = await env.account({ scopes: ['environment:read'] })
    const device = `dev_${writer.accountId}`
    const readings: Reading[] = []
    for (let m = 0; m < 1440; m++) for (const channel of ['t1', 'h1']) readings.push({ accountId: writer.accountId, deviceId: device, channel, ts: DAY + m * 60_000, value: m, metric: 'temperature', environmentId: null })
    await env.deps.readings.write(readings)
    slowRaw.accountId = writer.accountId
    // Raw readings, 2,000 to a file (heavy at 100 rows), read in steps of 500, each read taking 150 ms.
    const path = (cursor?: string) => `/api/v1/environment/readings?from=${iso(DAY)}&to=${iso(DAY + 86_400_000)}&format=csv&limit=2000${cursor ? `&cursor=${cursor}` : ''}`
    const res = await env.request('GET', path(), { token: writer.token })
    expect(res.status).toBe(200)
    // The file's end is known (its headers are here); its fourth step (rows 1,500 on: minute 750 on) is not read yet.
    const late: Reading = { accountId: writer.accountId, deviceId: device, channel: 't1', ts: DAY + 900 * 60_000 + 30_000, value: -1, metric: 'temperature', environmentId: null }
    await env.deps.readings.write([late])
    const first = (await res.text()).split('\r\n').slice(1, -1)
    expect(first).toHaveLength(2001)
    expect(first).toContain(`${iso(late.ts)},${device},t1,temperature,,-1`)
    const second = await env.request('GET', path(res.headers.get('next-cursor')!), { token: writer.token })
    const rest = (await second.text()).split('\r\n').slice(1, -1)
    expect(second.headers.get('next-cursor')).toBeNull()
    // Every reading once: 2,880 and the late one.
    expect(new Set([...first, ...rest]).size).toBe(2881)
    expect(first.length + rest.length).toBe(2881)
    slowRaw.accountId = ''
  }, 60_000)
})
