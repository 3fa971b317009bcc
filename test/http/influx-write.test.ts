// InfluxDB line-protocol writes (ingest/influx/): the real, unmodified InfluxDB clients write to a real server on
// loopback with a device key, and every number they wrote is read back through GET /environment/readings; bad lines
// are refused by name while the good ones are stored; keys, accounts, limits and outages behave as on JSON ingest.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { gzipSync } from 'node:zlib'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { InfluxDB, Point } from '@influxdata/influxdb-client'
import { InfluxDB as InfluxV1 } from 'influx'
import { sqlStore } from '../../ingest/stores/sql.ts'
import type { ReadingsStore } from '../../ingest/stores/interface.ts'
import { seriesChannel } from '../../ingest/influx/series-channel.ts'
import { NATS_SERVER, startNats, type NatsDeployment } from '../../bench/lib/nats.ts'
import type { IngestLogConfig } from '../../src/config.ts'
import { createTestEnv, waitFor, type TestEnv } from '../helpers.ts'

/** The SQL store, with a switch that makes every write fail as an unreachable store would. */
function switchableStore(inner: ReadingsStore) {
  const control = { down: false }
  const store: ReadingsStore = Object.assign(Object.create(inner), {
    kind: inner.kind,
    async write(readings: Parameters<ReadingsStore['write']>[0]) {
      if (control.down) throw Object.assign(new Error('connect ECONNREFUSED (test: store down)'), { code: 'ECONNREFUSED' })
      return inner.write(readings)
    },
  })
  return { store, control }
}

let env: TestEnv
let store: { down: boolean }
beforeAll(async () => {
  env = await createTestEnv({ host: '127.0.0.1' }, { readings: (database) => { const s = switchableStore(sqlStore(database)); store = s.control; return s.store } })
})
afterAll(async () => { await env.close() })

type Owner = Awaited<ReturnType<TestEnv['account']>>
interface Device { id: string; key: string }
interface Row { ts: string; device_id: string; channel: string; metric: string | null; environment_id: string | null; value: number }

async function setup(): Promise<{ owner: Owner; device: Device }> {
  const owner = await env.account({ scopes: ['sensors:read', 'sensors:write', 'environment:read'] })
  const res = await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Collector' } })
  return { owner, device: await res.json() }
}
const port = () => Number(new URL(env.baseUrl).port)
const T0 = () => Date.now() - 60_000

/** Every reading of the device in the last hours, through the API, as [channel, ts ms, value], sorted. */
async function readBack(owner: Owner, deviceId: string, extra = ''): Promise<[string, number, number][]> {
  const from = new Date(Date.now() - 3 * 3600_000).toISOString()
  const res = await env.request('GET', `/api/v1/environment/readings?device_id=${deviceId}&from=${from}&limit=10000${extra}`, { token: owner.token })
  expect(res.status).toBe(200)
  const rows = (await res.json()).data as Row[]
  return rows.map((r): [string, number, number] => [r.channel, Date.parse(r.ts), r.value]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]))
}
const sorted = (rows: [string, number, number][]) => rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]))
/** A client process, run without blocking this process's event loop (the server it talks to runs in it). */
async function spawned(command: string[]): Promise<{ stdout: string; stderr: string; status: number | null }> {
  const child = Bun.spawn(command, { stdout: 'pipe', stderr: 'pipe', timeout: 30_000 })
  const [stdout, stderr, status] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { stdout, stderr, status }
}
const write = (path: string, body: string | Uint8Array, headers: Record<string, string> = {}) => fetch(`${env.baseUrl}${path}`, { method: 'POST', headers, body })

describe('real InfluxDB clients, unmodified', () => {
  test('@influxdata/influxdb-client (v2 API: batching, gzip, token): every point read back, then mapped like any channel', async () => {
    const { owner, device } = await setup()
    const t0 = T0()
    const writeApi = new InfluxDB({ url: env.baseUrl, token: device.key }).getWriteApi('my-org', 'my-bucket', 'ms', { batchSize: 4, gzipThreshold: 0, flushInterval: 0, maxRetries: 2 })
    const expected: [string, number, number][] = []
    for (let i = 0; i < 10; i++) {
      writeApi.writePoint(new Point('weather').tag('room', 'viv 1').floatField('temp', 20 + i / 10).intField('hum', 60 + i).booleanField('door', i % 2 === 0).stringField('note', 'str').timestamp(new Date(t0 + i * 1000)))
      expected.push([seriesChannel('weather', ['room', 'viv 1'], 'temp'), t0 + i * 1000, 20 + i / 10], [seriesChannel('weather', ['room', 'viv 1'], 'hum'), t0 + i * 1000, 60 + i], [seriesChannel('weather', ['room', 'viv 1'], 'door'), t0 + i * 1000, i % 2 === 0 ? 1 : 0])
    }
    await writeApi.close()
    expect(await readBack(owner, device.id)).toEqual(sorted(expected))

    // The new series are the device's unmapped channels; mapped in the API (as in the console), later points carry the metric.
    await env.deps.ingest.devices.writeBack()
    const listed = await (await env.request('GET', `/api/v1/sensors/devices/${device.id}`, { token: owner.token })).json()
    const temp = seriesChannel('weather', ['room', 'viv 1'], 'temp')
    expect(listed.unmapped_channels.sort()).toEqual(['temp', 'hum', 'door'].map((field) => seriesChannel('weather', ['room', 'viv 1'], field)).sort())
    expect(temp).toMatch(/^weather\.viv_1\.temp\.\.[A-Za-z0-9_-]{9}$/)
    const patched = await env.request('PATCH', `/api/v1/sensors/devices/${device.id}`, { token: owner.token, body: { channels: [{ key: temp, metric: 'temperature' }] }, headers: { 'content-type': 'application/merge-patch+json', 'if-match': listed.etag ?? '*' } })
    expect(patched.status).toBe(200)
    const again = new InfluxDB({ url: env.baseUrl, token: device.key }).getWriteApi('my-org', 'my-bucket', 'ms')
    again.writePoint(new Point('weather').tag('room', 'viv 1').floatField('temp', 25.5).timestamp(new Date(t0 + 20_000)))
    await again.close()
    expect(await readBack(owner, device.id, '&metric=temperature')).toEqual([[temp, t0 + 20_000, 25.5]])
  })

  test('influx (node-influx, v1 API: u and p in the query): every point read back', async () => {
    const { owner, device } = await setup()
    const t0 = T0()
    const influx = new InfluxV1({ host: '127.0.0.1', port: port(), database: 'site', username: 'hub', password: device.key })
    await influx.writePoints([
      { measurement: 'cpu', tags: { host: 'a' }, fields: { usage: 12.5, count: 3 }, timestamp: new Date(t0) },
      { measurement: 'cpu', tags: { host: 'b' }, fields: { usage: 50 }, timestamp: new Date(t0 + 1) },
      { measurement: 'power', fields: { watts: 230, on: true, label: 'mains' }, timestamp: new Date(t0 + 2) },
    ], { precision: 'ms' })
    expect(await readBack(owner, device.id)).toEqual(sorted([
      [seriesChannel('cpu', ['host', 'a'], 'usage'), t0, 12.5], [seriesChannel('cpu', ['host', 'a'], 'count'), t0, 3],
      [seriesChannel('cpu', ['host', 'b'], 'usage'), t0 + 1, 50], ['power.watts', t0 + 2, 230], ['power.on', t0 + 2, 1],
    ]))
    // A refusal reaches the client as InfluxDB's error.
    await expect(new InfluxV1({ host: '127.0.0.1', port: port(), database: 'site', username: 'hub', password: 'hrs_dev_wrong' }).writePoints([{ measurement: 'cpu', fields: { v: 1 } }])).rejects.toThrow(/401|malformed, unknown, revoked/)
  })

  const python = '/usr/bin/python3'
  const hasPythonClient = existsSync(python) && spawnSync(python, ['-c', 'import influxdb'], { encoding: 'utf8' }).status === 0
  if (!hasPythonClient) console.log('influx-write.test: python3-influxdb test skipped: apt-get install python3-influxdb')
  test.skipIf(!hasPythonClient)('python3-influxdb (Debian\'s InfluxDB 1.x client: HTTP Basic, gzip): every point read back', async () => {
    const { owner, device } = await setup()
    const t0 = T0()
    const script = `
import sys
from influxdb import InfluxDBClient
c = InfluxDBClient(host='127.0.0.1', port=int(sys.argv[1]), username='hub', password=sys.argv[2], database='site', gzip=True)
ok = c.write_points([
  {"measurement": "°C", "tags": {"domain": "sensor", "entity_id": "viv_2"}, "fields": {"value": 27.25, "friendly_name_str": "Viv 2"}, "time": int(sys.argv[3])},
  {"measurement": "%", "tags": {"domain": "sensor", "entity_id": "viv_2_hum"}, "fields": {"value": 61}, "time": int(sys.argv[3]) + 1},
], time_precision='ms')
print(ok)
`
    const run = await spawned([python, '-c', script, String(port()), device.key, String(t0)])
    expect(run.stderr).toBe('')
    expect(run.stdout.trim()).toBe('True')
    expect(await readBack(owner, device.id)).toEqual(sorted([
      [seriesChannel('°C', ['domain', 'sensor', 'entity_id', 'viv_2'], 'value'), t0, 27.25],
      [seriesChannel('%', ['domain', 'sensor', 'entity_id', 'viv_2_hum'], 'value'), t0 + 1, 61],
    ]))
  })

  const hasInfluxCli = existsSync('/usr/bin/influx')
  if (!hasInfluxCli) console.log('influx-write.test: influx CLI test skipped: apt-get install influxdb-client')
  test.skipIf(!hasInfluxCli)('the influx CLI (InfluxDB 1.6, INSERT over /write with username and password)', async () => {
    const { owner, device } = await setup()
    const t0 = T0()
    const run = await spawned(['/usr/bin/influx', '-host', '127.0.0.1', '-port', String(port()), '-username', 'hub', '-password', device.key, '-database', 'site', '-precision', 'ms', '-execute', `INSERT weather,room=cli temp=18.5 ${t0}`])
    expect(run.stderr).toBe('')
    expect(run.status).toBe(0)
    expect(await readBack(owner, device.id)).toEqual([[seriesChannel('weather', ['room', 'cli'], 'temp'), t0, 18.5]])
  })
})

describe('payloads as collectors send them', () => {
  test('Home Assistant (measurement °C, tags domain and entity_id, value beside string attributes): every number, nothing else', async () => {
    const { owner, device } = await setup()
    const ns = BigInt(T0()) * 1_000_000n
    const body = [
      `°C,domain=sensor,entity_id=viv_1_temperature value=27.5,friendly_name_str="Viv 1 temperature",device_class_str="temperature",state_class_str="measurement" ${ns}`,
      `%,domain=sensor,entity_id=viv_1_humidity value=61,friendly_name_str="Viv 1, humidity" ${ns}`,
      `binary_sensor.viv_1_door,domain=binary_sensor,entity_id=viv_1_door value=0i,friendly_name_str="Door" ${ns}`,
    ].join('\n')
    const before = await env.request('GET', '/metrics')
    const skippedBefore = Number(/hrs_line_protocol_string_fields_total (\d+)/.exec(await before.text())?.[1] ?? 0)
    const res = await write('/api/v2/write?org=home&bucket=ha&precision=ns', body, { authorization: `Token ${device.key}`, 'content-type': 'text/plain; charset=utf-8' })
    expect(res.status).toBe(204)
    const ms = Number(ns / 1_000_000n)
    expect(await readBack(owner, device.id)).toEqual(sorted([
      [seriesChannel('°C', ['domain', 'sensor', 'entity_id', 'viv_1_temperature'], 'value'), ms, 27.5],
      [seriesChannel('%', ['domain', 'sensor', 'entity_id', 'viv_1_humidity'], 'value'), ms, 61],
      [seriesChannel('binary_sensor.viv_1_door', ['domain', 'binary_sensor', 'entity_id', 'viv_1_door'], 'value'), ms, 0],
    ]))
    const after = await (await env.request('GET', '/metrics')).text()
    if (!/hrs_line_protocol_string_fields_total (\d+)/.test(after)) console.log(after.split('\n').filter((l) => l.includes('line_protocol')))
    expect(Number(/hrs_line_protocol_string_fields_total (\d+)/.exec(after)?.[1])).toBe(skippedBefore + 5)
  })

  test('Telegraf (outputs.influxdb_v2: gzip, seconds, several fields and tags per metric): every number', async () => {
    const { owner, device } = await setup()
    const s = Math.floor(T0() / 1000)
    const body = [
      `cpu,cpu=cpu-total,host=rack-pi usage_idle=97.5,usage_user=1.25,usage_system=1.25 ${s}`,
      `mem,host=rack-pi used_percent=41.2,available=512000000i,active=210000000u ${s}`,
      `system,host=rack-pi uptime=86400i,uptime_format="1 day,  0:00" ${s}`,
      '',
    ].join('\n')
    const res = await write('/api/v2/write?org=o&bucket=b&precision=s', gzipSync(body), { authorization: `Token ${device.key}`, 'content-encoding': 'gzip', 'user-agent': 'Telegraf/1.30' })
    expect(res.status).toBe(204)
    const rows = await readBack(owner, device.id)
    expect(rows.map(([, , value]) => value).sort((a, b) => a - b)).toEqual([1.25, 1.25, 41.2, 97.5, 86400, 210000000, 512000000])
    expect(rows.every(([, ts]) => ts === s * 1000)).toBe(true)
  })
})

describe('the same ingest path', () => {
  test('alert rules judge line-protocol readings as they judge JSON ones', async () => {
    const owner = await env.account({ scopes: ['alerts:read', 'alerts:write', 'sensors:read', 'sensors:write'] })
    const hub = await (await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub', channels: [{ key: 'viv.temp', metric: 'temperature' }] } })).json()
    const created = await env.request('POST', '/api/v1/environment/alert-rules', { token: owner.token, body: { name: 'Too hot', device_id: hub.id, channel: 'viv.temp', metric: 'temperature', max: 30, for_seconds: 60 } })
    expect(created.status).toBe(201)
    const rule = await created.json()
    const t0 = Math.floor(Date.now() / 1000 - 600) * 1000
    const body = [0, 30, 70].map((s, i) => `viv temp=${31 + i} ${(t0 + s * 1000) / 1000}`).join('\n')
    expect((await write('/api/v2/write?precision=s', body, { authorization: `Token ${hub.key}` })).status).toBe(204)
    await env.deps.alerts.flush()
    const alerts = await (await env.request('GET', '/api/v1/environment/alerts', { token: owner.token })).json()
    expect(alerts.data).toHaveLength(1)
    expect(alerts.data[0]).toMatchObject({ rule_id: rule.id, kind: 'threshold', state: 'open', device_id: hub.id, channel: 'viv.temp', metric: 'temperature', triggered_at: new Date(t0 + 70_000).toISOString() })
  })
})

describe('refusals', () => {
  test('bad lines are named (v1: error, v2: code and message, with problem members) while the good lines are stored', async () => {
    const { owner, device } = await setup()
    const t0 = T0()
    // A float InfluxDB takes but a reading may not hold (over 2^360) drops its whole line, as a bad field does there.
    const body = `good v=1 ${t0}\nbad v=1 abc\n# comment\n\ngood v=2 ${t0 + 1}\nworse,t= v=1\nold v=1 1000\nhuge v=2,w=1e200 ${t0 + 5}\n`
    const v1 = await write('/write?db=x&precision=ms', body, { authorization: `Token ${device.key}` })
    expect(v1.status).toBe(400)
    expect(v1.headers.get('content-type')).toBe('application/json; charset=utf-8')
    const one = await v1.json()
    expect(one.error).toBe(`partial write: unable to parse 'bad v=1 abc' (line 2): invalid timestamp "abc"; unable to parse 'worse,t= v=1' (line 6): missing tag value for tag key "t"; unable to parse 'old v=1 1000' (line 7): timestamp before 2000-01-01 (check the precision); unable to parse 'huge v=2,w=1e200 ${t0 + 5}' (line 8): value of field key "w" is beyond what a reading holds (a finite number of magnitude at most 2^360) dropped=4`)
    expect(one).toMatchObject({ status: 400, code: 'invalid_parameter', detail: one.error, errors: [{ path: '/body/line/2' }, { path: '/body/line/6' }, { path: '/body/line/7' }, { path: '/body/line/8' }] })
    expect(one.request_id).toBe(v1.headers.get('x-request-id'))
    expect(await readBack(owner, device.id)).toEqual([['good.v', t0, 1], ['good.v', t0 + 1, 2]])

    const v2 = await write('/api/v2/write?org=o&bucket=b&precision=ms', `good v=3 ${t0 + 2}\nnot line protocol`, { authorization: `Token ${device.key}` })
    expect(v2.status).toBe(400)
    expect(await v2.json()).toMatchObject({ code: 'invalid', message: `partial write: unable to parse 'not line protocol' (line 2): missing field value for field key "line" dropped=1`, problem_code: 'invalid_parameter', status: 400 })
    // Nothing good: no "partial", nothing stored.
    const none = await write('/api/v2/write', 'garbage', { authorization: `Token ${device.key}` })
    expect((await none.json()).message).toBe(`unable to parse 'garbage' (line 1): missing fields dropped=1`)
    expect(await readBack(owner, device.id)).toEqual([['good.v', t0, 1], ['good.v', t0 + 1, 2], ['good.v', t0 + 2, 3]])
  })

  test('credentials: missing or unknown 401; a revoked key (deleted device) 401; a personal token 403; one account cannot write into another', async () => {
    const a = await setup()
    const b = await setup()
    const line = `m v=1 ${T0()}`
    const missing = await write('/api/v2/write', line)
    expect(missing.status).toBe(401)
    expect(await missing.json()).toMatchObject({ code: 'unauthorized', problem_code: 'authentication_required' })
    const unknown = await write('/write?db=x&u=hub&p=hrs_dev_000000000000000000000000000000abcdef', line)
    expect(unknown.status).toBe(401)
    expect((await unknown.json()).code).toBe('invalid_token')
    expect((await write('/write', line, { authorization: 'Digest x' })).status).toBe(401)
    const personal = await write('/api/v2/write', line, { authorization: `Token ${a.owner.token}` })
    expect(personal.status).toBe(403)
    expect((await personal.json()).code).toBe('forbidden')

    // A's key writes A's device, whatever db, bucket or username name B's device or account.
    const basic = `Basic ${Buffer.from(`${b.device.id}:${a.device.key}`).toString('base64')}`
    expect((await write(`/write?db=${b.device.id}&rp=${b.owner.accountId}&precision=ms`, `m v=7 ${T0()}`, { authorization: basic })).status).toBe(204)
    expect((await write(`/api/v2/write?org=${b.owner.accountId}&bucket=${b.device.id}`, `m v=8`, { authorization: `Token ${a.device.key}` })).status).toBe(204)
    expect((await readBack(a.owner, a.device.id)).map(([, , v]) => v)).toEqual([7, 8])
    expect(await readBack(b.owner, b.device.id)).toEqual([])
    // B's owner cannot read A's device's readings.
    expect(await readBack(b.owner, a.device.id)).toEqual([])

    expect((await env.request('DELETE', `/api/v1/sensors/devices/${a.device.id}`, { token: a.owner.token })).status).toBe(204)
    const revoked = await write('/api/v2/write', `m v=9`, { authorization: `Token ${a.device.key}` })
    expect(revoked.status).toBe(401)
    expect(revoked.headers.get('www-authenticate')).toContain('error="invalid_token"')
  })

  test('precision, encoding, size and UTF-8: a clear 4xx each, nothing stored', async () => {
    const { owner, device } = await setup()
    const auth = { authorization: `Token ${device.key}` }
    const bad = async (res: Response, status: number, message: RegExp) => {
      expect(res.status).toBe(status)
      expect((await res.json()).message).toMatch(message)
    }
    await bad(await write('/api/v2/write?precision=n', 'm v=1', auth), 400, /precision must be one of ns, us, ms, s/)
    expect((await write('/write?precision=n', 'm v=1', auth)).status).toBe(204)
    await bad(await write('/api/v2/write', 'm v=1', { ...auth, 'content-encoding': 'br' }), 415, /gzip or identity/)
    await bad(await write('/api/v2/write', 'm v=1', { ...auth, 'content-encoding': 'gzip' }), 400, /not valid gzip/)
    await bad(await write('/api/v2/write', gzipSync(Buffer.alloc(2 * 1024 * 1024, 'm v=1\n')), { ...auth, 'content-encoding': 'gzip' }), 413, /gunzipped/)
    await bad(await write('/api/v2/write', `m v=${'1'.repeat(1024 * 1024)}`, auth), 413, /at most 1048576 bytes/)
    await bad(await write('/api/v2/write', `${'m'.repeat(10 * 1024 * 1024)} v=1`, auth), 413, /at most 1048576 bytes/)
    await bad(await write('/api/v2/write', new Uint8Array([0x6d, 0x20, 0x76, 0x3d, 0x31, 0x0a, 0x6d, 0xff, 0x20, 0x76, 0x3d, 0x31]), auth), 400, /not valid UTF-8/)
    await bad(await write('/api/v2/write', `m v=1 ${'9'.repeat(25)}`, auth), 400, /out of range/)
    await bad(await write('/api/v2/write', `m,${Array.from({ length: 100_000 }, (_, i) => `t${i}=v`).join(',')} v=1 abc`, auth), 400, /invalid timestamp/)
    await bad(await write('/api/v2/write', 'm v=1\0', auth), 400, /invalid field value/)
    // The whole body was "m v=1" each time it was taken (precision n): one reading, nothing from the refusals.
    expect((await readBack(owner, device.id)).map(([c, , v]) => [c, v])).toEqual([['m.v', 1]])
  })

  test('a body that writes U+FFFD itself is valid UTF-8 and stored; bytes that are not UTF-8 beside it still refuse the body', async () => {
    const { owner, device } = await setup()
    const auth = { authorization: `Token ${device.key}` }
    const t0 = T0()
    // The handler reads a plain body as text, which makes U+FFFD of invalid bytes: a U+FFFD sent as such must pass.
    const encoded = new TextEncoder().encode(`m,unit=\uFFFD v=2 ${t0}\n`)
    expect((await write('/api/v2/write?precision=ms', encoded, auth)).status).toBe(204)
    const invalid = new Uint8Array([...encoded, 0x6d, 0xff, 0x20, 0x76, 0x3d, 0x31])
    const refused = await write('/api/v2/write?precision=ms', invalid, auth)
    expect(refused.status).toBe(400)
    expect((await refused.json()).message).toMatch(/not valid UTF-8/)
    // Without a Content-Length (chunked), the same, a chunk ending inside the U+FFFD: the body is gathered, then read.
    const later = new TextEncoder().encode(`m,unit=\uFFFD v=3 ${t0 + 1}\n`)
    const chunked = new ReadableStream<Uint8Array>({ start(controller) { controller.enqueue(later.subarray(0, 8)); controller.enqueue(later.subarray(8)); controller.close() } })
    const sent = await fetch(`${env.baseUrl}/api/v2/write?precision=ms`, { method: 'POST', headers: auth, body: chunked, duplex: 'half' } as RequestInit)
    expect(sent.status).toBe(204)
    const channel = seriesChannel('m', ['unit', '\uFFFD'], 'v')
    expect(await readBack(owner, device.id)).toEqual([[channel, t0, 2], [channel, t0 + 1, 3]])
  })

  test('over the device key\'s rate limit: 429 with Retry-After, counted with its JSON ingest', async () => {
    const limited = await createTestEnv({ deviceRateLimitPerMinute: 3 })
    try {
      const owner = await limited.account({ scopes: ['sensors:write'] })
      const device = await (await limited.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Fast' } })).json()
      expect((await limited.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings: [{ channel: 't1', value: 1 }] } })).status).toBe(202)
      for (let i = 0; i < 2; i++) expect((await fetch(`${limited.baseUrl}/api/v2/write`, { method: 'POST', headers: { authorization: `Token ${device.key}` }, body: `m v=${i}` })).status).toBe(204)
      const refused = await fetch(`${limited.baseUrl}/write`, { method: 'POST', headers: { authorization: `Token ${device.key}` }, body: 'm v=9' })
      expect(refused.status).toBe(429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(refused.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60')
      expect(await refused.json()).toMatchObject({ code: 'rate_limited', status: 429 })
    } finally {
      await limited.close()
    }
  })

  test('with the readings store down: 503 with Retry-After and nothing stored; the same body retried once it is back is stored once', async () => {
    const { owner, device } = await setup()
    const t0 = T0()
    const body = `m v=1 ${t0}\nm v=2 ${t0 + 1}`
    const auth = { authorization: `Token ${device.key}` }
    store.down = true
    let retryAfter: number
    try {
      const refused = await write('/api/v2/write?precision=ms', body, auth)
      expect(refused.status).toBe(503)
      retryAfter = Number(refused.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThan(0)
      expect(await refused.json()).toMatchObject({ code: 'unavailable', problem_code: 'service_unavailable' })
      expect(await readBack(owner, device.id)).toEqual([])
    } finally {
      store.down = false
    }
    // Retried as Retry-After says (InfluxDB clients retry a 503): acknowledged means stored, and a second retry adds nothing.
    await Bun.sleep(retryAfter * 1000)
    expect((await write('/api/v2/write?precision=ms', body, auth)).status).toBe(204)
    expect((await write('/write?precision=ms', body, auth)).status).toBe(204)
    expect(await readBack(owner, device.id)).toEqual([['m.v', t0, 1], ['m.v', t0 + 1, 2]])
  })
})

if (!NATS_SERVER) console.log('influx-write.test: ingest-log runs skipped: no nats-server on this machine (apt-get install nats-server)')
describe.skipIf(!NATS_SERVER)('through the durable ingest log (INGEST_LOG)', () => {
  let nats: NatsDeployment
  let logged: TestEnv
  let logStore: { down: boolean }
  beforeAll(async () => {
    nats = await startNats(1)
    const ingestLog: IngestLogConfig = {
      servers: nats.servers.split(','), stream: 'HRS_TEST_INFLUX', subjectPrefix: 'test.influx', replicas: 1,
      maxAgeSeconds: 3600, maxBytes: 64 * 1024 * 1024, writer: true, writerBatchSize: 20_000, writerFlushMs: 100, ackWaitSeconds: 5, lagBoundSeconds: 5,
    }
    logged = await createTestEnv({ ingestLog }, { readings: (database) => { const s = switchableStore(sqlStore(database)); logStore = s.control; return s.store } })
  })
  afterAll(async () => {
    await logged?.close()
    await nats?.close()
  })

  test('acknowledged by the log (204), visible once the writer stored it; with the store down still acknowledged, and nothing lost once it is back', async () => {
    const owner = await logged.account({ scopes: ['sensors:write', 'environment:read'] })
    const device = await (await logged.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Logged' } })).json()
    const count = async () => (await logged.deps.database.query<{ n: number | string }>('select count(*) as n from sensor_readings where device_id = $1', [device.id]))[0]!.n
    const t0 = T0()
    const send = (lines: string) => fetch(`${logged.baseUrl}/api/v2/write?precision=ms`, { method: 'POST', headers: { authorization: `Token ${device.key}` }, body: lines })
    expect((await send(`m v=1 ${t0}\nm v=2 ${t0 + 1}`)).status).toBe(204)
    await waitFor(async () => Number(await count()) === 2, 10_000)
    logStore.down = true
    try {
      for (let i = 0; i < 5; i++) expect((await send(`m v=${10 + i} ${t0 + 10 + i}`)).status).toBe(204)
      await Bun.sleep(300)
      expect(Number(await count())).toBe(2)
    } finally {
      logStore.down = false
    }
    await waitFor(async () => Number(await count()) === 7, 20_000)
    const res = await logged.request('GET', `/api/v1/environment/readings?device_id=${device.id}&from=${new Date(t0 - 1000).toISOString()}`, { token: owner.token })
    expect(((await res.json()).data as Row[]).map((r) => r.value).sort((a, b) => a - b)).toEqual([1, 2, 10, 11, 12, 13, 14])
  })
})

describe('the OpenAPI document', () => {
  test('describes both endpoints, their credentials and their InfluxDB-shaped errors', async () => {
    const doc = await (await env.request('GET', '/api/v1/openapi.json')).json()
    for (const [path, operationId] of [['/write', 'influxV1Write'], ['/api/v2/write', 'influxV2Write']] as const) {
      const operation = doc.paths[path].post
      expect(operation.operationId).toBe(operationId)
      expect(operation.security).toEqual([{ influxToken: [] }, { influxBasic: [] }, { influxPasswordQuery: [] }, { deviceKey: [] }])
      expect(Object.keys(operation.responses).sort()).toEqual(['204', '400', '401', '403', '413', '415', '429', '500', '503'])
      expect(operation.responses['400'].content['application/json']).toBeDefined()
    }
    expect(Object.keys(doc.components.securitySchemes)).toEqual(expect.arrayContaining(['influxToken', 'influxBasic', 'influxPasswordQuery']))
  })
})
