import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { sensorReadings } from '../../db/schema/index.ts'
import { newId } from '../../src/ids.ts'
import { createTestEnv, problem, readingsStores, waitFor, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env.close() })

type Key = Awaited<ReturnType<TestEnv['account']>>
interface Device { id: string; key: string }

async function setup(channels: unknown[] = [{ key: 't1', metric: 'temperature' }, { key: 'h1', metric: 'humidity' }]): Promise<{ owner: Key; device: Device }> {
  const owner = await env.account({ scopes: ['sensors:read', 'sensors:write', 'environment:read'] })
  const res = await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub', channels } })
  return { owner, device: await res.json() }
}
const submit = (device: Device, body: unknown, headers: Record<string, string> = {}) =>
  env.request('POST', '/api/v1/sensors/readings', { token: device.key, body, headers })
const stored = (deviceId: string) =>
  env.deps.database.db.select().from(sensorReadings).where(eq(sensorReadings.device_id, deviceId)).orderBy(sensorReadings.ts, sensorReadings.channel)

describe('POST /sensors/readings', () => {
  test('valid readings are stored, mapped through the device configuration; bad ones are rejected by index', async () => {
    const { device } = await setup()
    const now = Date.now()
    const iso = new Date(now - 120_000).toISOString()
    const res = await submit(device, { readings: [
      { channel: 't1', value: 27.5, ts: now - 60_000 },
      { channel: 'h1', value: 61, ts: iso },
      { channel: 'x7', value: 3 },
      { channel: 't1', value: 'warm' },
      { channel: 't1', value: 1, ts: now + 3_600_000 },
      { channel: 't1', value: 2, ts: now - 60_000 },
      { channel: 'bad channel', value: 1 },
      { channel: 't1', value: 1, ts: 'yesterday' },
      { channel: 't1', value: 1, ts: 1_700_000_000 },
      { channel: 't1', value: 1, unit: 'C' },
      'not a reading',
    ] })
    expect(res.status).toBe(202)
    const body = await res.json()
    expect(body.accepted).toBe(3)
    expect(body.rejected.map((r: { index: number; code: string }) => [r.index, r.code])).toEqual([
      [3, 'invalid_value'], [4, 'timestamp_in_future'], [5, 'duplicate_reading'], [6, 'invalid_channel'], [7, 'invalid_timestamp'],
      [8, 'invalid_timestamp'], [9, 'invalid_reading'], [10, 'invalid_reading'],
    ])
    const rows = await stored(device.id)
    expect(rows.map((r) => [r.channel, r.value, r.metric])).toEqual([['h1', 61, 'humidity'], ['t1', 27.5, 'temperature'], ['x7', 3, null]])
    expect(rows[0]!.ts.toISOString()).toBe(iso)
    // Received without ts: stamped with the receive time.
    expect(Math.abs(rows[2]!.ts.getTime() - now)).toBeLessThan(10_000)
  })

  test('an unmapped channel is kept and listed on the device', async () => {
    const { owner, device } = await setup()
    await submit(device, { readings: [{ channel: 'x7', value: 3 }, { channel: 'x8', value: 4 }] })
    await env.deps.ingest.devices.writeBack()
    const read = await (await env.request('GET', `/api/v1/sensors/devices/${device.id}`, { token: owner.token })).json()
    expect(read.unmapped_channels).toEqual(['x7', 'x8'])
    expect(read.last_seen_at).not.toBeNull()
    // Mapping it later clears it from the list.
    const patched = await (await env.request('PATCH', `/api/v1/sensors/devices/${device.id}`, { token: owner.token, body: { channels: [{ key: 'x7', metric: 'uv_index' }] } })).json()
    expect(patched.unmapped_channels).toEqual(['x8'])
    await submit(device, { readings: [{ channel: 'x7', value: 5, ts: Date.now() - 1000 }] })
    const rows = await stored(device.id)
    expect(rows.filter((r) => r.channel === 'x7').map((r) => r.metric).sort()).toEqual(['uv_index', null].sort() as string[])
  })

  test('a retried batch adds nothing', async () => {
    const { device } = await setup()
    const ts = Date.now() - 5000
    const batch = { readings: [{ channel: 't1', value: 20, ts }, { channel: 'h1', value: 50, ts }] }
    for (let i = 0; i < 3; i++) expect((await submit(device, batch)).status).toBe(202)
    expect(await stored(device.id)).toHaveLength(2)
  })

  test('values up to 2^360 are kept; beyond it they are rejected, and one device\'s extreme values never fail another account\'s readings', async () => {
    const { owner, device } = await setup()
    const other = await setup()
    const ts = Date.UTC(2026, 10, 21, 10, 0, 0)
    const max = 2 ** 360
    // Two readings at the bound in one minute: their sums stay finite in every rollup, and the batch is stored.
    const edge = await submit(device, { readings: [{ channel: 't1', value: max, ts }, { channel: 't1', value: max, ts: ts + 1000 }, { channel: 'h1', value: -max, ts }] })
    expect(await edge.json()).toEqual({ accepted: 3, rejected: [] })
    // Past the bound: rejected by index, while another account's batch sent at the same time is stored.
    const [beyond, neighbour] = await Promise.all([
      submit(device, { readings: [{ channel: 't1', value: 1.7e308, ts: ts + 2000 }, { channel: 't1', value: -max * 2, ts: ts + 3000 }, { channel: 't1', value: 1, ts: ts + 4000 }] }),
      submit(other.device, { readings: [{ channel: 't1', value: 21.5, ts: ts + 2000 }] }),
    ])
    expect(beyond.status).toBe(202)
    expect((await beyond.json()).rejected).toEqual([
      { index: 0, code: 'invalid_value', message: 'value must be a finite number of magnitude at most 2^360 (about 2.35e108)' },
      { index: 1, code: 'invalid_value', message: 'value must be a finite number of magnitude at most 2^360 (about 2.35e108)' },
    ])
    expect(await neighbour.json()).toEqual({ accepted: 1, rejected: [] })
    expect((await stored(device.id)).map((r) => r.value)).toEqual([-max, max, max, 1])
    expect((await stored(other.device.id)).map((r) => r.value)).toEqual([21.5])
    await problem(await env.request('GET', `/api/v1/sensors/ping?key=${device.key}&t1=1e200`), 422, 'validation_failed')
    const hour = await (await env.request('GET', `/api/v1/environment/readings?from=${new Date(ts).toISOString()}&to=${new Date(ts + 3_600_000).toISOString()}&interval=1h&agg=avg,count&channel=t1`, { token: owner.token })).json()
    expect(hour.data.map((b: any) => [b.avg, b.count])).toEqual([[(max + max + 1) / 3, 3]])
  })

  test('whole-request problems: malformed JSON, wrong shape, too many readings, too large, wrong media type', async () => {
    const { device } = await setup()
    await problem(await submit(device, '{"readings": [', { 'content-type': 'application/json' }), 400, 'malformed_json')
    await problem(await submit(device, { readings: 'many' }), 422, 'validation_failed')
    await problem(await submit(device, { readings: [], extra: 1 }), 422, 'validation_failed')
    const tooMany = await problem(await submit(device, { readings: Array.from({ length: 5001 }, (_, i) => ({ channel: 't1', value: i, ts: Date.now() - i })) }), 422, 'validation_failed')
    expect(tooMany.errors[0].path).toBe('/body/readings')
    await problem(await submit(device, { readings: [{ channel: 't1', value: 1, pad: 'x'.repeat(1024 * 1024) }] }), 413, 'payload_too_large')
    await problem(await submit(device, 'channel=t1', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type')
    // JSON has no NaN; a number too large for a double parses as Infinity and is refused.
    const infinite = await submit(device, '{"readings":[{"channel":"t1","value":1e999}]}', { 'content-type': 'application/json' })
    expect((await infinite.json()).rejected).toEqual([{ index: 0, code: 'invalid_value', message: expect.any(String) }])
    expect(await stored(device.id)).toEqual([])
  })

  test('only device keys submit; a device key does nothing else', async () => {
    const { owner, device } = await setup()
    await problem(await env.request('POST', '/api/v1/sensors/readings', { token: owner.token, body: { readings: [{ channel: 't1', value: 1 }] } }), 403, 'insufficient_scope')
    await problem(await env.request('GET', '/api/v1/environment/readings', { token: device.key }), 403, 'device_key_not_allowed')
    await problem(await env.request('POST', '/api/v1/sensors/readings', { body: { readings: [{ channel: 't1', value: 1 }] } }), 401, 'authentication_required')
  })
})

describe('/sensors/ping', () => {
  test('GET with the key and channels in the query string; POST as a form or JSON; 204 each', async () => {
    const { device } = await setup()
    const t0 = Date.now() - 60_000
    expect((await env.request('GET', `/api/v1/sensors/ping?key=${device.key}&t1=27.5&h1=61&ts=${t0}`)).status).toBe(204)
    const form = await env.request('POST', '/api/v1/sensors/ping', { body: `key=${device.key}&t1=28&ts=${t0 + 1000}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(form.status).toBe(204)
    expect((await env.request('POST', '/api/v1/sensors/ping', { body: { key: device.key, t1: 29, ts: t0 + 2000 } })).status).toBe(204)
    expect((await env.request('POST', `/api/v1/sensors/ping?key=${device.key}`, { body: { t1: 30, ts: t0 + 3000 } })).status).toBe(204)
    expect((await env.request('GET', `/api/v1/sensors/ping?t1=31&ts=${t0 + 4000}`, { headers: { 'x-api-key': device.key } })).status).toBe(204)
    const rows = await stored(device.id)
    expect(rows.map((r) => [r.channel, r.value])).toEqual([['h1', 61], ['t1', 27.5], ['t1', 28], ['t1', 29], ['t1', 30], ['t1', 31]])
  })

  test('bad pings are 422 with paths and store nothing; a missing or wrong key is 401', async () => {
    const { device } = await setup()
    const bad = await problem(await env.request('GET', `/api/v1/sensors/ping?key=${device.key}&t1=warm`), 422, 'validation_failed')
    expect(bad.errors).toEqual([{ path: '/query/t1', message: expect.any(String) }])
    const many = Array.from({ length: 33 }, (_, i) => `c${i}=1`).join('&')
    await problem(await env.request('GET', `/api/v1/sensors/ping?key=${device.key}&${many}`), 422, 'validation_failed')
    await problem(await env.request('GET', `/api/v1/sensors/ping?key=${device.key}`), 422, 'validation_failed')
    await problem(await env.request('GET', `/api/v1/sensors/ping?key=${device.key}&t1=1&ts=${Date.now() + 3_600_000}`), 422, 'validation_failed')
    await problem(await env.request('GET', '/api/v1/sensors/ping?t1=1'), 401, 'authentication_required')
    await problem(await env.request('POST', '/api/v1/sensors/ping', { body: { t1: 1 } }), 401, 'authentication_required')
    await problem(await env.request('POST', '/api/v1/sensors/ping', { body: { key: 'hrs_dev_000000000000000000000000000000000000', t1: 1 } }), 401, 'invalid_token')
    expect(await stored(device.id)).toEqual([])
  })
})

describe('GET /environment/readings', () => {
  async function seed() {
    const { owner, device } = await setup()
    const base = Date.UTC(2026, 10, 20, 10, 0, 0)
    const readings = []
    for (let minute = 0; minute < 90; minute++) {
      readings.push({ channel: 't1', value: 20 + minute / 10, ts: base + minute * 60_000 })
      readings.push({ channel: 'h1', value: 50 + (minute % 7), ts: base + minute * 60_000 + 30_000 })
    }
    expect((await submit(device, { readings })).status).toBe(202)
    const q = (query: string) => env.request('GET', `/api/v1/environment/readings?from=${new Date(base).toISOString()}&to=${new Date(base + 3 * 3_600_000).toISOString()}&${query}`, { token: owner.token })
    return { owner, device, base, q }
  }

  test('raw rows in time order, filtered, paged without gaps or repeats', async () => {
    const { device, base, q } = await seed()
    const all: any[] = []
    let cursor = ''
    for (;;) {
      const page = await (await q(`limit=37${cursor}`)).json()
      all.push(...page.data)
      if (!page.has_more) break
      cursor = `&cursor=${page.next_cursor}`
    }
    expect(all).toHaveLength(180)
    expect(all[0]).toEqual({ ts: new Date(base).toISOString(), device_id: device.id, channel: 't1', metric: 'temperature', environment_id: null, value: 20 })
    const keys = all.map((r) => `${r.ts}|${r.channel}`)
    expect(new Set(keys).size).toBe(180)
    expect([...keys].sort()).toEqual(keys)
    const humidity = await (await q('metric=humidity&limit=1000')).json()
    expect(humidity.data).toHaveLength(90)
    expect((await (await q('channel=t1&limit=1000')).json()).data).toHaveLength(90)
    expect((await (await q(`device_id=${newId('device')}`)).json()).data).toEqual([])
  })

  test('buckets with aggregates, and the latest reading per series', async () => {
    const { base, q } = await seed()
    const hourly = await (await q('interval=1h&agg=avg,min,max,last,count&channel=t1')).json()
    expect(hourly.data.map((b: any) => [b.ts, b.count, b.min, b.max, b.last])).toEqual([
      [new Date(base).toISOString(), 60, 20, 25.9, 25.9],
      [new Date(base + 3_600_000).toISOString(), 30, 26, 28.9, 28.9],
    ])
    expect(hourly.data[0].avg).toBeCloseTo(22.95, 6)
    const defaultAgg = await (await q('interval=30m&channel=h1')).json()
    expect(Object.keys(defaultAgg.data[0]).sort()).toEqual(['avg', 'channel', 'device_id', 'environment_id', 'metric', 'ts'])
    expect(defaultAgg.data).toHaveLength(3)
    const latest = await (await q('latest=true')).json()
    expect(latest.data.map((r: any) => [r.channel, r.value])).toEqual([['h1', 50 + (89 % 7)], ['t1', 28.9]])
    await problem(await q('interval=1h&latest=true'), 400, 'invalid_parameter')
    await problem(await q('agg=avg'), 400, 'invalid_parameter')
    await problem(await q('interval=2h'), 400, 'invalid_parameter')
    await problem(await q('agg=median&interval=1h'), 400, 'invalid_parameter')
    await problem(await q('limit=10001'), 400, 'invalid_parameter')
  })

  test("another account sees none of these readings, even filtering by the device's id", async () => {
    const { device, base } = await seed()
    const stranger = await env.account({ scopes: ['environment:read'] })
    const res = await env.request('GET', `/api/v1/environment/readings?device_id=${device.id}&from=${new Date(base).toISOString()}&to=${new Date(base + 7_200_000).toISOString()}`, { token: stranger.token })
    expect((await res.json()).data).toEqual([])
    const latest = await env.request('GET', `/api/v1/environment/readings?latest=true`, { token: stranger.token })
    expect((await latest.json()).data).toEqual([])
  })
})

describe('rows stored for one account never leak into another', () => {
  test('stored rows carry the account of the device that sent them', async () => {
    const a = await setup()
    await submit(a.device, { readings: [{ channel: 't1', value: 1 }] })
    const rows = await env.deps.database.db.select().from(sensorReadings).where(and(eq(sensorReadings.device_id, a.device.id)))
    expect(rows.map((r) => r.account_id)).toEqual([a.owner.accountId])
  })
})

for (const { name, overrides, drop } of readingsStores('ingest-extremes')) {
  describe(`values at the edges of what a reading holds (${name})`, () => {
    let own: TestEnv
    beforeAll(async () => { own = await createTestEnv(overrides) })
    afterAll(async () => { await own?.close(); await drop() })

    test('readings of ±2^360 and subnormal ones are stored as sent, and every bucket of them is what its raw readings give', async () => {
      // Postgres refuses a float8 quotient that underflows to zero (5e-324 ÷ 2, an avg) and a sum past 1.8e308: the
      // first failed the read, the second the write. Each minute here is a bucket whose sums stay exact in any order.
      const owner = await own.account({ scopes: ['sensors:write', 'environment:read'] })
      const device = await (await own.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
      const base = Date.UTC(2026, 10, 22, 10, 0, 0)
      const max = 2 ** 360
      const minutes = [[5e-324, 0, -5e-324], [5e-324, 5e-324], [max, max], [-max, 1.5, -max], [0, -5e-324]]
      const readings = minutes.flatMap((values, minute) => values.map((value, i) => ({ channel: 't1', value, ts: base + minute * 60_000 + i * 10_000 })))
      expect(await (await own.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings } })).json()).toEqual({ accepted: readings.length, rejected: [] })
      await own.deps.readings.refreshRollups?.(0)
      await waitFor(() => own.deps.readings.caughtUp(), 10_000)
      const get = async (query: string) => {
        const res = await own.request('GET', `/api/v1/environment/readings?from=${new Date(base).toISOString()}&to=${new Date(base + 86_400_000).toISOString()}&${query}`, { token: owner.token })
        const text = await res.text()
        expect({ query, status: res.status }).toEqual({ query, status: 200 })
        return JSON.parse(text).data as Record<string, number>[]
      }
      expect((await get('limit=100')).map((r) => r.value)).toEqual(readings.map((r) => r.value))
      // As JSON writes it: an avg of -2.5e-324 rounds to -0, which JSON writes as 0.
      const bucketOf = (values: number[]) => JSON.parse(JSON.stringify({ avg: values.reduce((a, b) => a + b, 0) / values.length, min: Math.min(...values), max: Math.max(...values), count: values.length }))
      expect((await get('interval=1m&agg=avg,min,max,count')).map(({ avg, min, max, count }) => ({ avg, min, max, count }))).toEqual(minutes.map(bucketOf))
      for (const interval of ['1h', '1d']) {
        expect({ interval, rows: (await get(`interval=${interval}&agg=avg,min,max,count`)).map(({ avg, min, max, count }) => ({ avg, min, max, count })) }).toEqual({ interval, rows: [bucketOf(minutes.flat())] })
      }
    })
  })
}
