// Retention on the SQL store (issue 30): expiry drops whole partitions past each level's horizon and nothing else;
// two processes expiring at once; a window before the raw readings' horizon answered from rollups where they answer
// it exactly and refused where they cannot. Runs on PGlite, and on Postgres when DATABASE_URL is set.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { retentionHorizons } from '../../ingest/planner.ts'
import { SeriesCatalogue } from '../../ingest/series.ts'
import type { Reading } from '../../ingest/stores/interface.ts'
import { cellOf, expiredPartitions } from '../../ingest/stores/sql-layout.ts'
import { sqlStore } from '../../ingest/stores/sql.ts'
import type { ReadingsRetention } from '../../src/config.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

const DAY = 86_400_000
/** A week of raw readings, two of minute rollups, a year of hours, days forever. */
const RETENTION: ReadingsRetention = { rawDays: 7, minuteDays: 14, hourDays: 365, dayDays: 0 }

let env: TestEnv
let accountId: string
let deviceId: string
let token: string
const now = Date.now()
const today = Math.floor(now / DAY) * DAY
/** Readings every 20 minutes on two channels for the last 40 days. */
const readings: Reading[] = []

const partitions = async () => (await env.deps.database.query<{ name: string }>(`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent where p.relname = 'readings' order by 1`)).map((r) => r.name)
const stored = async (from: number, to: number) => Number((await env.deps.database.query<{ n: number }>(`select count(*)::int as n from sensor_readings where device_id = $1 and ts >= $2::timestamptz and ts < $3::timestamptz`, [deviceId, new Date(from).toISOString(), new Date(to).toISOString()]))[0]!.n)
const maintain = (store = env.deps.readings) => store.maintain(retentionHorizons(RETENTION, now), now)

beforeAll(async () => {
  env = await createTestEnv({ readingsRetention: RETENTION })
  // The server's own maintenance runs at its start (before these readings) and then hourly: stopped, so the tests
  // decide when expiry happens.
  await env.deps.ingest.maintenance?.stop()
  const owner = await env.account({ scopes: ['sensors:write', 'environment:read'] })
  accountId = owner.accountId
  token = owner.token
  const device = await (await env.request('POST', '/api/v1/sensors/devices', { token, body: { name: 'Keeper', channels: [{ key: 't1', metric: 'temperature' }, { key: 'h1', metric: 'humidity' }] } })).json()
  deviceId = device.id
  const start = today - 40 * DAY
  for (let ts = start; ts < now; ts += 20 * 60_000) {
    readings.push({ accountId, deviceId, channel: 't1', ts, value: 20 + ((ts / 60_000) % 17) / 4, metric: 'temperature', environmentId: null })
    readings.push({ accountId, deviceId, channel: 'h1', ts, value: 50 + ((ts / 60_000) % 13), metric: 'humidity', environmentId: null })
  }
  for (let i = 0; i < readings.length; i += 2_000) await env.deps.readings.write(readings.slice(i, i + 2_000))
}, 120_000)
afterAll(async () => { await env?.close() })

describe('expiry on the SQL store', () => {
  test('drops the raw partitions wholly before the horizon and nothing else; rollups keep the dropped days exactly', async () => {
    const horizons = retentionHorizons(RETENTION, now)
    const hourly = `/api/v1/environment/readings?device_id=${deviceId}&interval=1h&agg=avg,min,max,count,last&limit=1000`
    const window = `&from=${new Date(today - 30 * DAY).toISOString()}&to=${new Date(today - 20 * DAY).toISOString()}`
    // Answered before expiry, partly from raw readings where rollups would not be needed: the reference.
    const before = await (await env.request('GET', hourly + window, { token })).json()
    expect(before.data.length).toBe(10 * 24 * 2)
    const keptFrom = cellOf('week', horizons.raw)[0]
    const keptBefore = await stored(keptFrom, now + DAY)
    const expected = (await expiredPartitions(env.deps.database, horizons)).filter((name) => name.startsWith('readings_'))
    expect(expected.length).toBeGreaterThanOrEqual(4)

    const report = await maintain()
    expect(report.dropped.filter((name) => name.startsWith('readings_')).sort()).toEqual(expected)
    // Minute rollups past their own (longer) horizon went too; hour and day rollups are all still there.
    expect(report.dropped.some((name) => name.startsWith('reading_rollups_1m_'))).toBe(true)
    expect(report.dropped.some((name) => name.startsWith('reading_rollups_1h_') || name.startsWith('reading_rollups_1d_'))).toBe(false)
    for (const name of expected) expect(await partitions()).not.toContain(name)
    // Every reading of the partitions kept is still there; none before them.
    expect(await stored(keptFrom, now + DAY)).toBe(keptBefore)
    expect(await stored(0, keptFrom)).toBe(0)
    expect(keptFrom).toBeLessThanOrEqual(horizons.raw)

    // The dropped days, from the hour rollups: the same answer as before.
    const after = await (await env.request('GET', hourly + window, { token })).json()
    expect(after.data).toEqual(before.data)
  })

  test('two processes expiring at once: no error, each partition dropped once, the same result', async () => {
    const second = sqlStore(env.deps.database, undefined, new SeriesCatalogue(env.deps.database))
    try {
      // Make one more expired partition (a late reading for an old week) for them to race on.
      await env.deps.readings.write([{ accountId, deviceId, channel: 't1', ts: today - 35 * DAY + 1_000, value: 1, metric: 'temperature', environmentId: null }])
      const before = await partitions()
      const [a, b] = await Promise.all([maintain(), maintain(second)])
      const dropped = [...a.dropped, ...b.dropped].filter((name) => name.startsWith('readings_'))
      expect(dropped.length).toBe(1)
      expect(new Set(dropped).size).toBe(dropped.length)
      expect(await partitions()).toEqual(before.filter((name) => !dropped.includes(name)))
    } finally {
      await second.close()
    }
  })
})

describe('queries before the raw horizon', () => {
  const from = () => new Date(today - 20 * DAY).toISOString()
  test('raw pages and files reaching before it are refused, naming the retention', async () => {
    for (const path of [`/api/v1/environment/readings?device_id=${deviceId}&from=${from()}`, `/api/v1/environment/readings?device_id=${deviceId}&from=${from()}&format=csv`]) {
      const body = await problem(await env.request('GET', path, { token }), 422, 'beyond_retention')
      expect(body.detail).toContain('raw readings for 7 days')
      expect(body.retention_days).toEqual({ raw: 7, '1m': 14, '5m': 14, '1h': 365, '1d': 0 })
      expect(body.retained_from.raw).toBe(new Date(today - 7 * DAY).toISOString())
      expect(body.retained_from['1d']).toBeNull()
    }
  })

  test('buckets the kept rollups answer exactly are served; finer ones, or a from off their grid, are refused with an interval and from that fit', async () => {
    // 15-minute buckets 20 days back: minute rollups are kept 14 days, so no.
    const fine = await problem(await env.request('GET', `/api/v1/environment/readings?device_id=${deviceId}&interval=15m&from=${from()}`, { token }), 422, 'beyond_retention')
    expect(fine.suggested_interval).toBe('1h')
    expect(fine.suggested_from).toBe(from())
    // An hour's buckets from a from in the middle of an hour: the first, partial hour would need minute rollups.
    const offGrid = new Date(today - 20 * DAY + 30 * 60_000).toISOString()
    const shifted = await problem(await env.request('GET', `/api/v1/environment/readings?device_id=${deviceId}&interval=1h&from=${offGrid}`, { token }), 422, 'beyond_retention')
    expect(shifted.suggested_from).toBe(new Date(today - 20 * DAY).toISOString())
    // What the problem suggests is served, with every hour of every day.
    const served = await env.request('GET', `/api/v1/environment/readings?device_id=${deviceId}&interval=${fine.suggested_interval}&from=${fine.suggested_from}&to=${new Date(today - 19 * DAY).toISOString()}&agg=count`, { token })
    expect(served.status).toBe(200)
    const page = await served.json()
    expect(page.data.length).toBe(48)
    expect(page.data.every((row: { count: number }) => row.count === 3)).toBe(true)
    // Inside the raw window nothing changes: 15-minute buckets and raw pages are served.
    expect((await env.request('GET', `/api/v1/environment/readings?device_id=${deviceId}&interval=15m&from=${new Date(today - 6 * DAY).toISOString()}`, { token })).status).toBe(200)
    expect((await env.request('GET', `/api/v1/environment/readings?device_id=${deviceId}&from=${new Date(today - 6 * DAY).toISOString()}`, { token })).status).toBe(200)
    // The latest readings are what the store holds, whatever the window.
    expect((await env.request('GET', `/api/v1/environment/readings?device_id=${deviceId}&latest=true`, { token })).status).toBe(200)
  })

  test('days and hours from the rollups equal what the readings gave (a day and hour of rollups is a day and hour of readings)', async () => {
    const day = today - 30 * DAY
    const expected = readings.filter((r) => r.channel === 't1' && r.ts >= day && r.ts < day + DAY)
    const res = await env.request('GET', `/api/v1/environment/readings?device_id=${deviceId}&channel=t1&interval=1d&agg=avg,min,max,count,last&from=${new Date(day).toISOString()}&to=${new Date(day + DAY).toISOString()}`, { token })
    const [row] = (await res.json()).data
    expect(row.count).toBe(expected.length)
    expect(row.min).toBe(Math.min(...expected.map((r) => r.value)))
    expect(row.max).toBe(Math.max(...expected.map((r) => r.value)))
    expect(row.last).toBe(expected.at(-1)!.value)
    expect(row.avg).toBeCloseTo(expected.reduce((sum, r) => sum + r.value, 0) / expected.length, 9)
  })
})
