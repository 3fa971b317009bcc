// Our ILP/HTTP writer (ingest/stores/ilp.ts) and the QuestDB store's use of it. Without QuestDB: the text it
// encodes (ILP versions 1 and 2), the configuration it accepts or refuses, the version it settles on, and what it
// does with /write's answers (a loopback HTTP server standing in for QuestDB's /settings and /write). With
// QUESTDB_ILP and QUESTDB_PG_URL: round trips through a real QuestDB, against the official client writing the same
// rows, and versions 1 and 2 against each other where the server offers 2.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sender } from '@questdb/nodejs-client'
import postgres from 'postgres'
import type { Reading } from '../../ingest/stores/interface.ts'
import { describeIlpError, escapeIlp, IlpBody, ilpTarget, ilpVersion, seriesPrefix } from '../../ingest/stores/ilp.ts'
import { ilpReadingsWriter, questdbStore, SeriesPrefixes } from '../../ingest/stores/questdb.ts'
import { loadConfig } from '../../src/config.ts'
import { dropQuestdbTable, waitFor } from '../helpers.ts'

const QUESTDB_ILP = process.env.QUESTDB_ILP || undefined
const QUESTDB_PG_URL = process.env.QUESTDB_PG_URL || undefined
const questdb = Boolean(QUESTDB_ILP && QUESTDB_PG_URL)
if (!questdb) console.log('ilp-writer.test: QuestDB round trips skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run them against a QuestDB server')
// The server's major version (7 or 9 here) and whether it offers ILP version 2, asked before the tests are chosen.
const server = questdb ? await questdbServer() : undefined
if (server && !server.offersV2) console.log(`ilp-writer.test: ILP version 1 against version 2 skipped: QuestDB ${server.version} does not offer version 2 (9.x does)`)

async function questdbServer(): Promise<{ version: string; major: number; offersV2: boolean }> {
  const sql = postgres(QUESTDB_PG_URL!, { max: 1, prepare: false, onnotice: () => {} })
  try {
    const [row] = await sql.unsafe('select build() build')
    const version = /QuestDB (\d+\.\d+\.\d+)/.exec(String(row!.build))?.[1] ?? 'unknown'
    return { version, major: Number(version.split('.')[0]), offersV2: (await ilpVersion(ilpTarget(QUESTDB_ILP!))) === 2 }
  } finally {
    await sql.end()
  }
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

const reading = (over: Partial<Reading> = {}): Reading => ({
  accountId: 'acct_1', deviceId: 'sdev_1', channel: 't1', ts: Date.UTC(2026, 10, 20, 12), value: 27.5, metric: 'temperature', environmentId: 'env_1', ...over,
})

describe('ILP text', () => {
  test('tag values escape comma, space, equals, CR, LF and backslash with a backslash; other text passes through', () => {
    expect(escapeIlp('a,b c=d')).toBe('a\\,b\\ c\\=d')
    expect(escapeIlp('line\nbreak\rreturn')).toBe('line\\\nbreak\\\rreturn')
    expect(escapeIlp('back\\slash')).toBe('back\\\\slash')
    expect(escapeIlp('plain_ünï-✓.1')).toBe('plain_ünï-✓.1')
    expect(escapeIlp('"quoted"')).toBe('"quoted"')
  })

  test('a series prefix names the table and every non-null tag once, then the field', () => {
    expect(seriesPrefix('readings', [['account_id', 'acct 1'], ['metric', null], ['environment_id', '']], 'value')).toBe('readings,account_id=acct\\ 1 value=')
    const prefixes = new SeriesPrefixes('sensor_readings')
    expect(text(prefixes.of(reading({ channel: 'a,b=c d' })))).toBe('sensor_readings,account_id=acct_1,device_id=sdev_1,channel=a\\,b\\=c\\ d,metric=temperature,environment_id=env_1 value=')
    expect(text(prefixes.of(reading({ metric: null, environmentId: null })))).toBe('sensor_readings,account_id=acct_1,device_id=sdev_1,channel=t1 value=')
  })

  test('a cached prefix is rebuilt when the channel is mapped differently', () => {
    const prefixes = new SeriesPrefixes('r')
    const before = prefixes.of(reading())
    expect(prefixes.of(reading())).toBe(before)
    expect(text(prefixes.of(reading({ metric: 'humidity' })))).toBe('r,account_id=acct_1,device_id=sdev_1,channel=t1,metric=humidity,environment_id=env_1 value=')
    expect(text(prefixes.of(reading({ environmentId: null })))).toBe('r,account_id=acct_1,device_id=sdev_1,channel=t1,metric=temperature value=')
  })

  test('version 1: a row is its prefix, the value as the shortest text that reads back the same double, and the timestamp in ms', () => {
    const body = new IlpBody(1)
    const prefix = new TextEncoder().encode('r,tag=a value=')
    body.row(prefix, 27.5, 1_763_640_000_000)
    body.row(prefix, -3, 946_684_800_000)
    body.row(prefix, -0, 946_684_800_000)
    expect(text(body.take())).toBe('r,tag=a value=27.5 1763640000000\nr,tag=a value=-3 946684800000\nr,tag=a value=-0 946684800000\n')
    const values = [0.1, 1 / 3, -1e-7, 1e21, 1.7976931348623157e308, 5e-324, 1e-300, 2 ** 53 + 2, 123456.789, 0.1 + 0.2]
    for (const value of values) body.row(prefix, value, 0)
    const lines = text(body.take()).split('\n').slice(0, -1)
    expect(lines.map((l) => Number(l.slice('r,tag=a value='.length).split(' ')[0]))).toEqual(values)
  })

  test('version 2: the value is `=`, type byte 16 and the double\'s 8 bytes little-endian; the timestamp stays text', () => {
    const body = new IlpBody(2)
    const prefix = new TextEncoder().encode('r value=')
    body.row(prefix, -0, 1_763_640_000_000)
    body.row(prefix, 0.1 + 0.2, 1_763_640_000_001)
    const bytes = body.take()
    const double = (value: number) => { const b = Buffer.alloc(8); b.writeDoubleLE(value); return [...b] }
    expect([...bytes]).toEqual([
      ...Buffer.from('r value=='), 16, ...double(-0), ...Buffer.from(' 1763640000000\n'),
      ...Buffer.from('r value=='), 16, ...double(0.1 + 0.2), ...Buffer.from(' 1763640000001\n'),
    ])
  })

  test('a body past the buffer\'s first size grows, and take() leaves the next batch empty', () => {
    const body = new IlpBody(1)
    const prefix = new TextEncoder().encode(`r,tag=${'x'.repeat(1000)} value=`)
    for (let i = 0; i < 200; i++) body.row(prefix, i, i)
    const lines = text(body.take()).split('\n')
    expect(lines.length).toBe(201)
    expect(lines[199]).toBe(`r,tag=${'x'.repeat(1000)} value=199 199`)
    body.row(prefix, 1, 2)
    expect(text(body.take())).toBe(`r,tag=${'x'.repeat(1000)} value=1 2\n`)
  })
})

describe('QuestDB error answers', () => {
  const body = JSON.stringify({ code: 'invalid', message: 'failed to parse line protocol:errors encountered on line(s):\nerror in line 2: table: r, column: value; cast error from protocol type: FLOAT to column type: LONG', line: 2, errorId: 'abc-7' })

  test('the JSON body becomes one line naming the status, code, line (and what it carried) and error id', () => {
    const error = describeIlpError(400, body, (line) => (line === 2 ? 'device sdev_1, channel t1' : undefined))
    expect(error.message).toBe('QuestDB refused the batch (HTTP 400, code invalid, line 2 (device sdev_1, channel t1), error id abc-7): failed to parse line protocol:errors encountered on line(s): error in line 2: table: r, column: value; cast error from protocol type: FLOAT to column type: LONG')
    expect(error.status).toBe(400)
    expect(error.line).toBe(2)
    expect(error.message).not.toContain('\n')
  })

  test('a body that is not QuestDB JSON is quoted, shortened, on one line', () => {
    expect(describeIlpError(502, '<html>\n<body>Bad Gateway</body>\n</html>').message).toBe('QuestDB /write answered HTTP 502: <html> <body>Bad Gateway</body> </html>')
    expect(describeIlpError(500, '').message).toBe('QuestDB /write answered HTTP 500 with no body')
    expect(describeIlpError(500, '{"error":"x"}').message).toBe('QuestDB /write answered HTTP 500: {"error":"x"}')
    expect(describeIlpError(500, 'x'.repeat(1000)).message.length).toBeLessThan(400)
  })
})

describe('QUESTDB_ILP, read by the official client\'s parser', () => {
  test('addr, username/password and token keep their meaning', () => {
    expect(ilpTarget('http::addr=db.example:9100;')).toMatchObject({ url: 'http://db.example:9100/write?precision=ms', requestTimeoutMs: 10_000, tls: undefined })
    expect(ilpTarget('http::addr=db.example;').url).toBe('http://db.example:9000/write?precision=ms')
    expect(ilpTarget('http::addr=h:1;username=admin;password=quest;').headers.authorization).toBe(`Basic ${btoa('admin:quest')}`)
    expect(ilpTarget('http::addr=h:1;token=abc;').headers.authorization).toBe('Bearer abc')
    expect(ilpTarget('http::addr=h:1;request_timeout=2500;').requestTimeoutMs).toBe(2500)
    expect(ilpTarget('http::addr=h:1;auto_flush=off;protocol_version=1;').url).toBe('http://h:1/write?precision=ms')
    expect(ilpTarget('http::addr=h:1;').protocolVersion).toBe('auto')
    expect(ilpTarget('http::addr=h:1;protocol_version=1;').protocolVersion).toBe(1)
    expect(ilpTarget('http::addr=h:1;protocol_version=2;')).toMatchObject({ protocolVersion: 2, settingsUrl: 'http://h:1/settings' })
  })

  test('tls_verify and tls_ca apply to https; tls_roots is refused with the client\'s own message', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ilp-'))
    writeFileSync(join(dir, 'ca.pem'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
    expect(ilpTarget('https::addr=h:9000;').tls).toEqual({ rejectUnauthorized: true, ca: undefined })
    expect(ilpTarget('https::addr=h:9000;tls_verify=unsafe_off;').tls).toEqual({ rejectUnauthorized: false, ca: undefined })
    expect(ilpTarget(`https::addr=h:9000;tls_ca=${join(dir, 'ca.pem')};`).tls?.ca).toContain('BEGIN CERTIFICATE')
    expect(() => ilpTarget('https::addr=h:9000;tls_roots=/x.jks;tls_roots_password=p;')).toThrow("'tls_roots' and 'tls_roots_password' options are not supported")
  })

  test('what the writer cannot honour is refused at start, naming the option', () => {
    expect(() => ilpTarget('tcp::addr=h:9009;')).toThrow('http or https transport')
    expect(() => ilpTarget('http::addr=h:9000;retry_timeout=5000;')).toThrow("option 'retry_timeout' is not supported by our writer")
    expect(() => ilpTarget('http::addr=h:9000;auto_flush_rows=100;')).toThrow("option 'auto_flush_rows' is not supported")
    expect(() => ilpTarget('http::addr=h:9000;stdlib_http=on;')).toThrow("option 'stdlib_http' is not supported")
    expect(() => ilpTarget('http::addr=h:9000;auto_flush=on;')).toThrow("'auto_flush=on' is not supported")
    expect(() => ilpTarget('http::addr=h:9000;protocol_version=3;')).toThrow('protocol_version=3 is not supported: the writer sends ILP version 1 (text) or 2 (binary doubles)')
    expect(() => ilpTarget('http::addr=h:9000;username=admin;')).toThrow('username and password go together')
    expect(() => ilpTarget('http::addr=h:9000;bogus=1;')).toThrow("QUESTDB_ILP: Unknown configuration key: 'bogus'")
    expect(() => ilpTarget('http::')).toThrow("'addr' is required")
  })
})

describe('group-commit defaults follow the readings store', () => {
  test('Postgres: 10 000-reading batches, 2 at a time; QuestDB: 2000, 4 at a time; INGEST_* still decide', () => {
    expect(loadConfig({})).toMatchObject({ ingestBatchSize: 10_000, ingestFlushConcurrency: 2 })
    expect(loadConfig({ QUESTDB_ILP: 'http::addr=h:9000' })).toMatchObject({ ingestBatchSize: 2000, ingestFlushConcurrency: 4 })
    expect(loadConfig({}, { questdbIlp: 'http::addr=h:9000' })).toMatchObject({ ingestBatchSize: 2000, ingestFlushConcurrency: 4 })
    expect(loadConfig({ QUESTDB_ILP: 'http::addr=h:9000', INGEST_BATCH_SIZE: '500', INGEST_FLUSH_CONCURRENCY: '1' })).toMatchObject({ ingestBatchSize: 500, ingestFlushConcurrency: 1 })
  })
})

describe('the QuestDB store against a stand-in /settings and /write on loopback', () => {
  // Stands in for QuestDB: /settings answers as `settings` says (7.4's `{}` unless a test changes it), /write
  // records what arrives and answers as told.
  const seen: { url: string; authorization: string | null; body: Uint8Array }[] = []
  const asked: string[] = []
  let settings: () => Response = () => Response.json({})
  let answer: () => Response | Promise<Response> = () => new Response(null, { status: 204 })
  const server = Bun.serve({
    port: 0, hostname: '127.0.0.1',
    async fetch(request) {
      if (new URL(request.url).pathname === '/settings') {
        asked.push(request.headers.get('authorization') ?? '')
        return settings()
      }
      seen.push({ url: request.url, authorization: request.headers.get('authorization'), body: new Uint8Array(await request.arrayBuffer()) })
      return answer()
    },
  })
  afterAll(() => server.stop(true))
  const QUESTDB_9_SETTINGS = { config: { 'release.version': '9.3.2', 'line.proto.support.versions': [1, 2, 3] }, 'preferences.version': 0, preferences: {} }

  // The store's write() without its PG-wire side (the table and the queries).
  const write = async (readings: Reading[], config = `http::addr=127.0.0.1:${server.port};username=u;password=p;`) => (await ilpReadingsWriter(config, 'r'))(readings)
  const versionOf = (config: string) => ilpVersion(ilpTarget(`http::addr=127.0.0.1:${server.port};${config}`))

  test('auto sends version 2 where /settings lists it, else 1 (7.4\'s `{}`, a 404); a forced 1 does not ask', async () => {
    asked.length = 0
    settings = () => Response.json(QUESTDB_9_SETTINGS)
    expect(await versionOf('')).toBe(2)
    expect(await versionOf('protocol_version=2;')).toBe(2)
    settings = () => Response.json({ config: { 'line.proto.support.versions': [1] } })
    expect(await versionOf('')).toBe(1)
    settings = () => Response.json({})
    expect(await versionOf('')).toBe(1)
    settings = () => new Response('Not Found', { status: 404 })
    expect(await versionOf('')).toBe(1)
    expect(asked.length).toBe(5)
    expect(await versionOf('protocol_version=1;')).toBe(1)
    expect(asked.length).toBe(5)
  })

  test('a forced 2 the server does not offer, and a /settings that fails, are refused at start', async () => {
    settings = () => Response.json({})
    await expect(versionOf('protocol_version=2;')).rejects.toThrow(`QUESTDB_ILP: protocol_version=2, but the QuestDB at http://127.0.0.1:${server.port} does not offer ILP version 2 (its /settings lists no line protocol versions; QuestDB 7.x reads text ILP only); set protocol_version=1 or remove it (auto)`)
    settings = () => Response.json({ config: { 'line.proto.support.versions': [1] } })
    await expect(versionOf('protocol_version=2;')).rejects.toThrow('(its /settings lists versions 1)')
    settings = () => new Response('unauthorized', { status: 401 })
    await expect(versionOf('')).rejects.toThrow(`QuestDB http://127.0.0.1:${server.port}/settings (asked which ILP versions it reads) answered HTTP 401: unauthorized`)
    settings = () => Response.json({})
  })

  test('with version 2 offered, a batch is one POST of binary doubles, /settings asked with the credentials', async () => {
    seen.length = 0
    asked.length = 0
    settings = () => Response.json(QUESTDB_9_SETTINGS)
    await write([reading({ value: 0.1 + 0.2 })])
    settings = () => Response.json({})
    expect(asked).toEqual([`Basic ${btoa('u:p')}`])
    const value = Buffer.alloc(8)
    value.writeDoubleLE(0.1 + 0.2)
    expect(Buffer.from(seen[0]!.body)).toEqual(Buffer.concat([
      Buffer.from('r,account_id=acct_1,device_id=sdev_1,channel=t1,metric=temperature,environment_id=env_1 value=='), Buffer.from([16]), value, Buffer.from(' 1795176000000\n'),
    ]))
  })

  test('a batch is one POST of every row, with the credentials, resolved on 204', async () => {
    seen.length = 0
    answer = () => new Response(null, { status: 204 })
    await write([reading(), reading({ channel: 'h 1', value: 61, ts: Date.UTC(2026, 10, 20, 12, 0, 1) })])
    expect(seen.map((s) => ({ ...s, body: text(s.body) }))).toEqual([{
      url: `http://127.0.0.1:${server.port}/write?precision=ms`, authorization: `Basic ${btoa('u:p')}`,
      body: 'r,account_id=acct_1,device_id=sdev_1,channel=t1,metric=temperature,environment_id=env_1 value=27.5 1795176000000\n' +
        'r,account_id=acct_1,device_id=sdev_1,channel=h\\ 1,metric=temperature,environment_id=env_1 value=61 1795176001000\n',
    }])
  })

  test('batches in flight at once each arrive whole; a batch answered leaves its buffer to the next', async () => {
    seen.length = 0
    // Each answer waits, so the three batches are all in flight while the next ones are encoded.
    answer = () => Bun.sleep(50).then(() => new Response(null, { status: 204 }))
    const writer = await ilpReadingsWriter(`http::addr=127.0.0.1:${server.port};`, 'r')
    const batch = (first: number) => Array.from({ length: 300 }, (_, i) => reading({ value: first + i, ts: Date.UTC(2026, 10, 20, 12) + i }))
    const line = (value: number, i: number) => `r,account_id=acct_1,device_id=sdev_1,channel=t1,metric=temperature,environment_id=env_1 value=${value} ${Date.UTC(2026, 10, 20, 12) + i}\n`
    const expected = (first: number) => Array.from({ length: 300 }, (_, i) => line(first + i, i)).join('')
    await Promise.all([writer(batch(1000)), writer(batch(2000)), writer(batch(3000))])
    await writer(batch(4000))
    answer = () => new Response(null, { status: 204 })
    expect(seen.map((s) => text(s.body)).sort()).toEqual([expected(1000), expected(2000), expected(3000), expected(4000)])
  })

  test('a series is registered once, before its first reading is sent; a failed registration sends nothing', async () => {
    seen.length = 0
    answer = () => new Response(null, { status: 204 })
    const registered: string[][] = []
    let refuse = false
    const writer = await ilpReadingsWriter(`http::addr=127.0.0.1:${server.port};`, 'r', async (readings) => {
      // What reached /write by the time the registration ran: it must come after.
      registered.push([`sent ${seen.length}`, ...readings.map((r) => `${r.channel}:${r.metric}`)])
      if (refuse) throw new Error('catalogue down')
    })
    await writer([reading(), reading({ channel: 'h1', ts: Date.UTC(2026, 10, 20, 12, 0, 1) }), reading({ ts: Date.UTC(2026, 10, 20, 12, 0, 2) })])
    await writer([reading({ ts: Date.UTC(2026, 10, 20, 12, 0, 3) }), reading({ channel: 'h1', ts: Date.UTC(2026, 10, 20, 12, 0, 4) })])
    // The channel mapped to another metric is another series.
    await writer([reading({ metric: 'humidity', ts: Date.UTC(2026, 10, 20, 12, 0, 5) })])
    expect(registered).toEqual([['sent 0', 't1:temperature', 'h1:temperature', 't1:temperature'], ['sent 2', 't1:humidity']])
    expect(seen.length).toBe(3)
    refuse = true
    await expect(writer([reading({ channel: 'new' })])).rejects.toThrow('catalogue down')
    expect(seen.length).toBe(3)
    refuse = false
    await writer([reading({ channel: 'new' })])
    expect(registered.at(-1)).toEqual(['sent 3', 'new:temperature'])
    expect(text(seen[3]!.body)).toBe('r,account_id=acct_1,device_id=sdev_1,channel=new,metric=temperature,environment_id=env_1 value=27.5 1795176000000\n')
  })

  test('a refusal rejects the write with QuestDB\'s reason on one line', async () => {
    answer = () => Response.json({ code: 'invalid', message: 'error in line 1: bad', line: 1, errorId: 'e-1' }, { status: 400 })
    await expect(write([reading()])).rejects.toThrow('QuestDB refused the batch (HTTP 400, code invalid, line 1 (device sdev_1, channel t1, ts 2026-11-20T12:00:00.000Z, value 27.5), error id e-1): error in line 1: bad')
  })

  test('a server error, and a 2xx other than 204, are told apart: only 2xx acknowledges', async () => {
    answer = () => new Response('overloaded', { status: 503 })
    await expect(write([reading()])).rejects.toThrow('QuestDB /write answered HTTP 503: overloaded')
    answer = () => new Response('ok', { status: 200 })
    await write([reading()])
  })

  test('no answer within request_timeout fails the write', async () => {
    answer = () => new Promise((resolve) => setTimeout(() => resolve(new Response(null, { status: 204 })), 2000))
    const started = Date.now()
    await expect(write([reading()], `http::addr=127.0.0.1:${server.port};request_timeout=200;`)).rejects.toThrow('QuestDB /write failed: no answer within 200 ms')
    expect(Date.now() - started).toBeLessThan(1500)
  })

  test('a connection closed without an answer is tried once more; a second failure fails the write', async () => {
    // A raw TCP stand-in: it drops the first `drops` connections as soon as a request arrives, then answers 204.
    // It has no /settings: the writers it meets are told version 1.
    const { createServer } = await import('node:net')
    const standIn = async (drops: number) => {
      let connections = 0
      const requests: string[] = []
      const tcp = createServer((socket) => {
        const dropped = connections++ < drops
        socket.on('data', (chunk) => {
          if (dropped) return void socket.destroy()
          requests.push(chunk.toString())
          socket.end('HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n')
        })
      })
      await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve))
      return { tcp, requests, port: (tcp.address() as { port: number }).port, connections: () => connections }
    }
    const once = await standIn(1)
    try {
      await write([reading()], `http::addr=127.0.0.1:${once.port};protocol_version=1;`)
      expect(once.connections()).toBe(2)
      expect(once.requests.length).toBe(1)
    } finally {
      once.tcp.close()
    }
    const twice = await standIn(2)
    try {
      await expect(write([reading()], `http::addr=127.0.0.1:${twice.port};protocol_version=1;`)).rejects.toThrow('QuestDB /write failed')
      expect(twice.connections()).toBe(2)
    } finally {
      twice.tcp.close()
    }
  })

  test('nothing listening fails the write', async () => {
    const closed = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
    const port = closed.port
    closed.stop(true)
    await expect(write([reading()], `http::addr=127.0.0.1:${port};protocol_version=1;`)).rejects.toThrow('QuestDB /write failed')
    await expect(write([reading()], `http::addr=127.0.0.1:${port};`)).rejects.toThrow(`QuestDB http://127.0.0.1:${port}/settings (asked which ILP versions it reads) failed`)
  })
})

/** A double as text that tells -0 from 0 (toEqual does not everywhere). */
const exactly = (value: unknown) => (Object.is(value, -0) ? '-0' : value)

describe.skipIf(!questdb)('round trips through a real QuestDB', () => {
  const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
  const ours = `hrs_test_ilp_${suffix}`
  const theirs = `hrs_test_ilp_client_${suffix}`
  const wrong = `hrs_test_ilp_wrong_${suffix}`
  const admin = questdb ? postgres(QUESTDB_PG_URL!, { max: 1, prepare: false, onnotice: () => {} }) : undefined
  afterAll(async () => {
    for (const t of [ours, theirs, wrong]) { if (admin) await dropQuestdbTable(admin, t) }
    await admin?.end()
  })

  const base = Date.UTC(2026, 10, 20, 6)
  const awkward = ['a,b', 'a b', 'a=b', 'line\nbreak', 'back\\slash', 'ünïcode ✓', 'cr\rreturn']
  const values = [0, -0, 27.5, -1e-7, 1e21, 1.7976931348623157e308, 5e-324, 123456.789, 1 / 3, -42]
  const readings: Reading[] = [
    ...awkward.map((text, i) => reading({ deviceId: `dev ${text}`, channel: text, metric: `m ${text}`, environmentId: `env ${text}`, ts: base + i, value: i })),
    ...values.map((value, i) => reading({ channel: 'v', ts: base + 1000 + i, value })),
    reading({ channel: 'unmapped', metric: null, environmentId: null, ts: base + 2000, value: 1 }),
  ]
  const rowsOf = async (table: string) => admin!.unsafe<Record<string, unknown>[]>(`select cast(ts as long) ts, account_id, device_id, channel, metric, environment_id, value from ${table} order by ts`)

  test('every tag text and number comes back as written, and as the official client writes it', async () => {
    const store = await questdbStore(loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: ours }))
    try {
      await store.write(readings)
    } finally {
      await store.close()
    }
    await admin!.unsafe(`create table ${theirs} (ts timestamp, account_id symbol, device_id symbol, channel symbol, metric symbol, environment_id symbol, value double) timestamp(ts) partition by day wal`)
    // The client under Bun: protocol_version given (7.4 has no /settings to detect it) and Node's http transport.
    const sender = await Sender.fromConfig(`${QUESTDB_ILP!.replace(/;?$/, ';')}protocol_version=1;stdlib_http=on;auto_flush=off;`)
    for (const r of readings) {
      sender.table(theirs).symbol('account_id', r.accountId).symbol('device_id', r.deviceId).symbol('channel', r.channel)
      if (r.metric) sender.symbol('metric', r.metric)
      if (r.environmentId) sender.symbol('environment_id', r.environmentId)
      await sender.floatColumn('value', r.value).at(r.ts, 'ms')
    }
    await sender.flush()
    await sender.close()

    await waitFor(async () => (await rowsOf(ours)).length === readings.length && (await rowsOf(theirs)).length === readings.length, 30_000, 100)
    const stored = await rowsOf(ours)
    expect(stored.map((r) => ({ ts: Number(r.ts) / 1000, device: r.device_id, channel: r.channel, metric: r.metric, environment: r.environment_id, value: exactly(r.value) }))).toEqual(
      readings.map((r) => ({ ts: r.ts, device: r.deviceId, channel: r.channel, metric: r.metric, environment: r.environmentId, value: exactly(r.value) })),
    )
    // The client writes -0 as "0" (JS prints it so): ours keeps the sign, as version 2's binary double does.
    const signless = (rows: Record<string, unknown>[]) => rows.map((r) => ({ ...r, value: r.value === 0 ? 0 : r.value }))
    expect(signless(stored)).toEqual(signless(await rowsOf(theirs)))
  })

  test('QuestDB\'s refusal reaches the log line with the reading it was about', async () => {
    // A table whose value column is a long: QuestDB refuses a double for it.
    await admin!.unsafe(`create table ${wrong} (ts timestamp, account_id symbol, device_id symbol, channel symbol, metric symbol, environment_id symbol, value long) timestamp(ts) partition by day wal`)
    const store = await questdbStore(loadConfig({}, { questdbIlp: QUESTDB_ILP, questdbPgUrl: QUESTDB_PG_URL, questdbTable: wrong }))
    try {
      await expect(store.write([reading({ value: 1.5 })])).rejects.toThrow(/^QuestDB refused the batch \(HTTP 400, code invalid, line 1 \(device sdev_1, channel t1, ts 2026-11-20T12:00:00.000Z, value 1.5\), error id \S+\): .*cast error/)
    } finally {
      await store.close()
    }
  })

  test('auto settles on version 1 on QuestDB 7.x and 2 on 9.x; a forced 2 is refused at start where the server does not offer it', async () => {
    // Asked only where awaited at once: a refusal left pending while another request runs is an unhandled rejection.
    const forced2 = () => ilpVersion(ilpTarget(`${QUESTDB_ILP!.replace(/;?$/, ';')}protocol_version=2;`))
    if (server!.major >= 9) {
      expect(await ilpVersion(ilpTarget(QUESTDB_ILP!))).toBe(2)
      expect(await forced2()).toBe(2)
    } else {
      expect(await ilpVersion(ilpTarget(QUESTDB_ILP!))).toBe(1)
      await expect(forced2()).rejects.toThrow('QUESTDB_ILP: protocol_version=2, but the QuestDB at')
      await expect(questdbStore(loadConfig({}, { questdbIlp: `${QUESTDB_ILP!.replace(/;?$/, ';')}protocol_version=2;`, questdbPgUrl: QUESTDB_PG_URL, questdbTable: wrong }))).rejects.toThrow('does not offer ILP version 2')
    }
  })
})

describe.skipIf(!server?.offersV2)('ILP version 1 against version 2 on a real QuestDB', () => {
  const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
  const tables = { 1: `hrs_test_ilp_v1_${suffix}`, 2: `hrs_test_ilp_v2_${suffix}` }
  const admin = server?.offersV2 ? postgres(QUESTDB_PG_URL!, { max: 1, prepare: false, onnotice: () => {} }) : undefined
  afterAll(async () => {
    for (const t of Object.values(tables)) { if (admin) await dropQuestdbTable(admin, t) }
    await admin?.end()
  })

  test('the same readings, awkward doubles included, read back equal from either version', async () => {
    const base = Date.UTC(2026, 10, 21)
    const values = [0, -0, 1e-300, 5e-324, 1.7976931348623157e308, -1.7976931348623157e308, 0.1 + 0.2, 1 / 3, 42, -42, 2 ** 53 + 2, -1e-7, 27.5, -273.15]
    const readings = values.map((value, i) => reading({ channel: `c${i}`, ts: base + i, value }))
    for (const version of [1, 2] as const) {
      const store = await questdbStore(loadConfig({}, { questdbIlp: `${QUESTDB_ILP!.replace(/;?$/, ';')}protocol_version=${version};`, questdbPgUrl: QUESTDB_PG_URL, questdbTable: tables[version] }))
      try {
        await store.write(readings)
      } finally {
        await store.close()
      }
    }
    const rowsOf = (table: string) => admin!.unsafe<Record<string, unknown>[]>(`select cast(ts as long) ts, channel, value from ${table} order by ts`)
    await waitFor(async () => (await rowsOf(tables[1])).length === values.length && (await rowsOf(tables[2])).length === values.length, 30_000, 100)
    const [v1, v2] = [await rowsOf(tables[1]), await rowsOf(tables[2])]
    expect(v2.map((r) => exactly(r.value))).toEqual(values.map(exactly))
    expect(v1.map((r) => ({ ...r, value: exactly(r.value) }))).toEqual(v2.map((r) => ({ ...r, value: exactly(r.value) })))
  })
})
