// Our ILP/HTTP writer (ingest/stores/ilp.ts) and the QuestDB store's use of it. Without QuestDB: the text it
// encodes, the configuration it accepts or refuses, and what it does with /write's answers (a loopback HTTP
// server standing in for QuestDB's /write). With QUESTDB_ILP and QUESTDB_PG_URL: round trips through a real
// QuestDB, against the official client writing the same rows.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sender } from '@questdb/nodejs-client'
import postgres from 'postgres'
import type { Reading } from '../../ingest/stores/interface.ts'
import { describeIlpError, escapeIlp, ilpTarget, rowText, seriesPrefix } from '../../ingest/stores/ilp.ts'
import { ilpReadingsWriter, questdbStore, SeriesPrefixes } from '../../ingest/stores/questdb.ts'
import { loadConfig } from '../../src/config.ts'
import { dropQuestdbTable, waitFor } from '../helpers.ts'

const QUESTDB_ILP = process.env.QUESTDB_ILP || undefined
const QUESTDB_PG_URL = process.env.QUESTDB_PG_URL || undefined
const questdb = Boolean(QUESTDB_ILP && QUESTDB_PG_URL)
if (!questdb) console.log('ilp-writer.test: QuestDB round trips skipped: set QUESTDB_ILP and QUESTDB_PG_URL to run them against a QuestDB server')

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
    expect(prefixes.of(reading({ channel: 'a,b=c d' }))).toBe('sensor_readings,account_id=acct_1,device_id=sdev_1,channel=a\\,b\\=c\\ d,metric=temperature,environment_id=env_1 value=')
    expect(prefixes.of(reading({ metric: null, environmentId: null }))).toBe('sensor_readings,account_id=acct_1,device_id=sdev_1,channel=t1 value=')
  })

  test('a cached prefix is rebuilt when the channel is mapped differently', () => {
    const prefixes = new SeriesPrefixes('r')
    const before = prefixes.of(reading())
    expect(prefixes.of(reading())).toBe(before)
    expect(prefixes.of(reading({ metric: 'humidity' }))).toBe('r,account_id=acct_1,device_id=sdev_1,channel=t1,metric=humidity,environment_id=env_1 value=')
    expect(prefixes.of(reading({ environmentId: null }))).toBe('r,account_id=acct_1,device_id=sdev_1,channel=t1,metric=temperature value=')
  })

  test('a row is the value as the shortest text that reads back the same double, and the timestamp in ms', () => {
    expect(rowText(27.5, 1_763_640_000_000)).toBe('27.5 1763640000000\n')
    expect(rowText(-3, 946_684_800_000)).toBe('-3 946684800000\n')
    for (const value of [0.1, 1 / 3, -1e-7, 1e21, 1.7976931348623157e308, 5e-324, 2 ** 53 + 2, 123456.789]) {
      const [text] = rowText(value, 0).split(' ')
      expect(Number(text)).toBe(value)
    }
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
    expect(() => ilpTarget('http::addr=h:9000;protocol_version=2;')).toThrow('protocol_version=2 is not supported')
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

describe('the QuestDB store against a stand-in /write on loopback', () => {
  // Stands in for QuestDB's /write: records what arrives and answers as told.
  const seen: { url: string; authorization: string | null; body: string }[] = []
  let answer: () => Response | Promise<Response> = () => new Response(null, { status: 204 })
  const server = Bun.serve({
    port: 0, hostname: '127.0.0.1',
    async fetch(request) {
      seen.push({ url: request.url, authorization: request.headers.get('authorization'), body: await request.text() })
      return answer()
    },
  })
  afterAll(() => server.stop(true))

  // The store's write() without its PG-wire side (the table and the queries).
  const write = (readings: Reading[], config = `http::addr=127.0.0.1:${server.port};username=u;password=p;`) => ilpReadingsWriter(config, 'r')(readings)

  test('a batch is one POST of every row, with the credentials, resolved on 204', async () => {
    seen.length = 0
    answer = () => new Response(null, { status: 204 })
    await write([reading(), reading({ channel: 'h 1', value: 61, ts: Date.UTC(2026, 10, 20, 12, 0, 1) })])
    expect(seen).toEqual([{
      url: `http://127.0.0.1:${server.port}/write?precision=ms`, authorization: `Basic ${btoa('u:p')}`,
      body: 'r,account_id=acct_1,device_id=sdev_1,channel=t1,metric=temperature,environment_id=env_1 value=27.5 1795176000000\n' +
        'r,account_id=acct_1,device_id=sdev_1,channel=h\\ 1,metric=temperature,environment_id=env_1 value=61 1795176001000\n',
    }])
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
      await write([reading()], `http::addr=127.0.0.1:${once.port};`)
      expect(once.connections()).toBe(2)
      expect(once.requests.length).toBe(1)
    } finally {
      once.tcp.close()
    }
    const twice = await standIn(2)
    try {
      await expect(write([reading()], `http::addr=127.0.0.1:${twice.port};`)).rejects.toThrow('QuestDB /write failed')
      expect(twice.connections()).toBe(2)
    } finally {
      twice.tcp.close()
    }
  })

  test('nothing listening fails the write', async () => {
    const closed = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
    const port = closed.port
    closed.stop(true)
    await expect(write([reading()], `http::addr=127.0.0.1:${port};`)).rejects.toThrow('QuestDB /write failed')
  })
})

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
  const rowsOf = async (table: string) => admin!.unsafe(`select cast(ts as long) ts, account_id, device_id, channel, metric, environment_id, value from ${table} order by ts`)

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

    // -0 is written as "0" (JS prints it so), and stored as 0.
    await waitFor(async () => (await rowsOf(ours)).length === readings.length && (await rowsOf(theirs)).length === readings.length, 30_000, 100)
    const stored = await rowsOf(ours)
    expect(stored.map((r) => ({ ts: Number(r.ts) / 1000, device: r.device_id, channel: r.channel, metric: r.metric, environment: r.environment_id, value: r.value }))).toEqual(
      readings.map((r) => ({ ts: r.ts, device: r.deviceId, channel: r.channel, metric: r.metric, environment: r.environmentId, value: r.value === 0 ? 0 : r.value })),
    )
    expect(stored).toEqual(await rowsOf(theirs))
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
})
