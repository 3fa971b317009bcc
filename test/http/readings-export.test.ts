// GET /environment/readings as CSV files and with filled buckets, over a real server, on the SQL store and (when
// QUESTDB_ILP and QUESTDB_PG_URL point at a server) on QuestDB: the same requests must give the same files.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Reading } from '../../ingest/stores/interface.ts'
import { createTestEnv, problem, readingsStores, waitFor, type TestEnv } from '../helpers.ts'

const stores = readingsStores('readings-export')

const H = 3_600_000
const BASE = Date.UTC(2026, 10, 20, 9, 0, 0)
const iso = (ms: number) => new Date(ms).toISOString()

/** RFC 4180 records of a CSV text (quoted fields may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const records: string[][] = []
  let field = ''
  let record: string[] = []
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (c === '"' && field === '') {
      // A quoted field: up to the quote that is not the first of a doubled pair.
      let j = i + 1
      for (;;) {
        if (j >= text.length) throw new Error('unterminated quoted field')
        if (text[j] === '"') {
          if (text[j + 1] === '"') { field += '"'; j += 2; continue }
          break
        }
        field += text[j++]
      }
      i = j + 1
      if (i < text.length && text[i] !== ',' && text[i] !== '\r') throw new Error(`text after a quoted field at ${i}`)
      continue
    }
    if (c === ',') { record.push(field); field = ''; i++; continue }
    if (c === '\r' && text[i + 1] === '\n') { record.push(field); records.push(record); record = []; field = ''; i += 2; continue }
    if (c === '\n' || c === '\r') throw new Error(`bare line break at ${i}`)
    field += c
    i++
  }
  if (field !== '' || record.length) throw new Error('the last record is not ended by CRLF')
  return records
}

for (const { name, overrides, drop } of stores) {
  describe(`CSV export and filled buckets (${name})`, () => {
    let env: TestEnv
    let owner: { accountId: string; token: string }
    let stranger: { accountId: string; token: string }
    const readings: Reading[] = []

    beforeAll(async () => {
      env = await createTestEnv(overrides)
      owner = await env.account({ scopes: ['environment:read'] })
      stranger = await env.account({ scopes: ['environment:read'] })
      const add = (accountId: string, deviceId: string, channel: string, ts: number, value: number, metric: string | null, environmentId: string | null) =>
        readings.push({ accountId, deviceId, channel, ts, value, metric, environmentId })
      // dev_a/t1: every 5 minutes from 10:00 to 10:55, silent 11:00–12:29, then 12:30 and 12:45 (gaps at 09, 11, 13).
      for (let m = 0; m < 60; m += 5) add(owner.accountId, 'dev_a', 't1', BASE + H + m * 60_000, 20 + m / 10, 'temperature', 'env_1')
      add(owner.accountId, 'dev_a', 't1', BASE + 3.5 * H, 30.25, 'temperature', 'env_1')
      add(owner.accountId, 'dev_a', 't1', BASE + 3.75 * H, -0.5, 'temperature', 'env_1')
      // dev_b: a mapped channel only at 09:10, and an unmapped channel whose key needs quoting.
      add(owner.accountId, 'dev_b', 'h1', BASE + 10 * 60_000, 55, 'humidity', 'env_2')
      add(owner.accountId, 'dev_b', 'odd,"key"', BASE + 20 * 60_000, 1e-7, null, null)
      // Another account: the same device id and channel, readings in the owner's gaps.
      for (let m = 0; m < 300; m += 7) add(stranger.accountId, 'dev_a', 't1', BASE + m * 60_000 + 30_000, 99, 'temperature', 'env_x')
      await env.deps.readings.write(readings)
      if (env.deps.readings.kind === 'questdb') {
        // QuestDB applies WAL writes asynchronously: wait until every row is visible.
        const count = async (token: string) => (await (await env.request('GET', `/api/v1/environment/readings?from=${iso(BASE)}&to=${iso(BASE + 5 * H)}&limit=10000`, { token })).json()).data.length
        await waitFor(async () => (await count(owner.token)) === 16 && (await count(stranger.token)) === 43, 30_000, 100)
      }
    })
    afterAll(async () => {
      await env?.close()
      await drop()
    })

    const get = (query: string, token = owner.token, headers: Record<string, string> = {}) =>
      env.request('GET', `/api/v1/environment/readings?from=${iso(BASE)}&to=${iso(BASE + 5 * H)}&${query}`, { token, headers })
    const json = async (query: string, token = owner.token) => {
      const res = await get(query, token)
      expect(res.status).toBe(200)
      return (await res.json()).data as Record<string, unknown>[]
    }
    /** The CSV answer as records, checking the media type and the header line. */
    const csv = async (query: string, headers: Record<string, string> = {}, token = owner.token) => {
      const res = await get(query, token, headers)
      const text = await res.text()
      expect({ status: res.status, text: res.status === 200 ? '' : text }).toEqual({ status: 200, text: '' })
      expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present')
      expect(res.headers.get('x-request-id')).toMatch(/^req_/)
      expect(res.headers.get('ratelimit-policy')).toBeTruthy()
      return { res, text, records: parseCsv(text) }
    }
    /** A JSON row as the CSV line it must become. */
    const asRecord = (row: Record<string, unknown>, columns: string[]) => columns.map((c) => (row[c] === null || row[c] === undefined ? '' : String(row[c])))

    test('raw readings as CSV: the header, one record per JSON row, RFC 4180 quoting, empty fields for null', async () => {
      const { text, records } = await csv('format=csv')
      const columns = ['ts', 'device_id', 'channel', 'metric', 'environment_id', 'value']
      expect(records[0]).toEqual(columns)
      expect(records.slice(1)).toEqual((await json('limit=10000')).map((r) => asRecord(r, columns)))
      expect(records).toHaveLength(17)
      expect(text).toContain(`\r\n${iso(BASE + 20 * 60_000)},dev_b,"odd,""key""",,,1e-7\r\n`)
      expect(text).toContain(`,dev_a,t1,temperature,env_1,-0.5\r\n`)
      expect(text.endsWith('\r\n')).toBe(true)
    })

    test('content negotiation: Accept picks CSV or JSON by q-value; format= overrides; unsupported types get JSON', async () => {
      const byQuery = (await csv('format=csv')).text
      expect((await csv('', { accept: 'text/csv' })).text).toBe(byQuery)
      expect((await csv('', { accept: 'application/json;q=0.5, text/csv' })).text).toBe(byQuery)
      expect((await csv('', { accept: 'text/*' })).text).toBe(byQuery)
      expect((await csv('', { accept: 'text/csv, */*' })).text).toBe(byQuery)
      for (const accept of ['application/xml', 'text/csv;q=0.4, application/json', '*/*', 'text/csv;q=0, application/json;q=0.1']) {
        const res = await get('', owner.token, { accept })
        expect({ accept, type: res.headers.get('content-type') }).toEqual({ accept, type: expect.stringMatching(/^application\/json/) })
        expect((await res.json()).data).toHaveLength(16)
      }
      const forcedJson = await get('format=json', owner.token, { accept: 'text/csv' })
      expect(forcedJson.headers.get('content-type')).toStartWith('application/json')
      await problem(await get('format=xml'), 400, 'invalid_parameter')
    })

    test('errors stay problem+json when CSV is asked for', async () => {
      await problem(await get('interval=2h', owner.token, { accept: 'text/csv' }), 400, 'invalid_parameter')
      await problem(await get('format=csv&latest=true'), 400, 'invalid_parameter')
      await problem(await get('format=csv&fill=null'), 400, 'invalid_parameter')
      await problem(await get('format=csv&cursor=abc.def'), 400, 'invalid_cursor')
      await problem(await get('format=csv&limit=1000001'), 400, 'invalid_parameter')
      await problem(await get('limit=10001'), 400, 'invalid_parameter')
      await problem(await env.request('GET', '/api/v1/environment/readings?format=csv'), 401, 'authentication_required')
      expect((await csv('format=csv&limit=10001')).records).toHaveLength(17)
    })

    test('files follow on through Link rel="next" and Next-Cursor, without gaps or repeats, and a CSV cursor also pages JSON', async () => {
      for (const query of ['format=csv&limit=3', 'format=csv&limit=5&interval=15m&agg=count,last&fill=previous', 'format=csv&limit=1&device_id=dev_a']) {
        const whole = (await csv(query.replace(/limit=\d+/, 'limit=1000000'))).records
        expect(whole.length).toBeGreaterThan(4)
        const gathered: string[][] = []
        let path = `/api/v1/environment/readings?from=${iso(BASE)}&to=${iso(BASE + 5 * H)}&${query}`
        let files = 0
        for (;;) {
          const res = await env.request('GET', path, { token: owner.token })
          expect(res.status).toBe(200)
          const records = parseCsv(await res.text())
          expect(records[0]).toEqual(whole[0]!)
          expect(records.length - 1).toBeLessThanOrEqual(Number(/limit=(\d+)/.exec(query)![1]))
          gathered.push(...records.slice(1))
          files++
          const link = res.headers.get('link')
          if (!link) { expect(res.headers.get('next-cursor')).toBeNull(); break }
          const [, next] = /^<([^>]+)>; rel="next"$/.exec(link)!
          expect(new URL(next!, env.baseUrl).searchParams.get('cursor')).toBe(res.headers.get('next-cursor'))
          path = next!
        }
        expect({ query, rows: gathered }).toEqual({ query, rows: whole.slice(1) })
        // Every file is full but the last, of buckets as of raw readings: a file ends where a JSON page of its size would.
        expect(files).toBe(Math.ceil((whole.length - 1) / Number(/limit=(\d+)/.exec(query)![1])))
      }
      const first = await csv('format=csv&limit=4')
      const rest = await (await get(`cursor=${first.res.headers.get('next-cursor')}&limit=100`)).json()
      expect(rest.data).toEqual((await json('limit=100')).slice(4))
    })

    test('filters apply to CSV as to JSON', async () => {
      for (const query of ['device_id=dev_b', 'metric=temperature', 'channel=h1', 'environment_id=env_1', `to=${iso(BASE + 2 * H)}`, 'device_id=dev_z']) {
        const columns = ['ts', 'device_id', 'channel', 'metric', 'environment_id', 'value']
        const rows = (await csv(`format=csv&${query}`)).records.slice(1)
        expect({ query, rows }).toEqual({ query, rows: (await json(`${query}`)).map((r) => asRecord(r, columns)) })
      }
    })

    test('buckets as CSV: the aggregates in the order asked, empty fields for absent aggregates', async () => {
      const { records } = await csv('format=csv&interval=1h&agg=max,count,avg&fill=null&device_id=dev_a')
      expect(records).toEqual([
        ['ts', 'device_id', 'channel', 'metric', 'environment_id', 'max', 'count', 'avg'],
        [iso(BASE), 'dev_a', 't1', '', '', '', '0', ''],
        [iso(BASE + H), 'dev_a', 't1', 'temperature', 'env_1', '25.5', '12', '22.75'],
        [iso(BASE + 2 * H), 'dev_a', 't1', 'temperature', 'env_1', '', '0', ''],
        [iso(BASE + 3 * H), 'dev_a', 't1', 'temperature', 'env_1', '30.25', '2', '14.875'],
        [iso(BASE + 4 * H), 'dev_a', 't1', 'temperature', 'env_1', '', '0', ''],
      ])
    })

    test('fill=null and fill=previous give every bucket of the window for every series, gaps included', async () => {
      const pick = (rows: Record<string, unknown>[]) => rows.map((r) => [r.ts, r.device_id, r.channel, r.metric, r.last ?? null, r.count])
      const plain = await json('interval=1h&agg=last,count&device_id=dev_a')
      expect(pick(plain)).toEqual([
        [iso(BASE + H), 'dev_a', 't1', 'temperature', 25.5, 12],
        [iso(BASE + 3 * H), 'dev_a', 't1', 'temperature', -0.5, 2],
      ])
      expect(pick(await json('interval=1h&agg=last,count&device_id=dev_a&fill=none'))).toEqual(pick(plain))
      expect(pick(await json('interval=1h&agg=last,count&device_id=dev_a&fill=null'))).toEqual([
        [iso(BASE), 'dev_a', 't1', null, null, 0],
        [iso(BASE + H), 'dev_a', 't1', 'temperature', 25.5, 12],
        [iso(BASE + 2 * H), 'dev_a', 't1', 'temperature', null, 0],
        [iso(BASE + 3 * H), 'dev_a', 't1', 'temperature', -0.5, 2],
        [iso(BASE + 4 * H), 'dev_a', 't1', 'temperature', null, 0],
      ])
      expect(pick(await json('interval=1h&agg=last,count&device_id=dev_a&fill=previous'))).toEqual([
        [iso(BASE), 'dev_a', 't1', null, null, 0],
        [iso(BASE + H), 'dev_a', 't1', 'temperature', 25.5, 12],
        [iso(BASE + 2 * H), 'dev_a', 't1', 'temperature', 25.5, 0],
        [iso(BASE + 3 * H), 'dev_a', 't1', 'temperature', -0.5, 2],
        [iso(BASE + 4 * H), 'dev_a', 't1', 'temperature', -0.5, 0],
      ])
      // Every series with a reading in the window gets every bucket: 3 series × 5 hours; a window not on a bucket
      // boundary starts at the bucket holding `from`.
      const all = await json('interval=1h&agg=count&fill=null')
      expect(all.map((r) => `${r.ts} ${r.device_id} ${r.channel} ${r.count}`)).toEqual([0, 1, 2, 3, 4].flatMap((h) => [
        `${iso(BASE + h * H)} dev_a t1 ${[0, 12, 0, 2, 0][h]}`, `${iso(BASE + h * H)} dev_b h1 ${h === 0 ? 1 : 0}`, `${iso(BASE + h * H)} dev_b odd,"key" ${h === 0 ? 1 : 0}`,
      ]))
      const shifted = await (await env.request('GET', `/api/v1/environment/readings?from=${iso(BASE + 90 * 60_000)}&to=${iso(BASE + 4 * H)}&interval=1h&agg=count&fill=null&device_id=dev_a`, { token: owner.token })).json()
      expect(shifted.data.map((r: any) => [r.ts, r.count])).toEqual([[iso(BASE + H), 6], [iso(BASE + 2 * H), 0], [iso(BASE + 3 * H), 2]])
      // Pages of filled buckets give exactly the rows of one page.
      const paged: unknown[] = []
      let cursor = ''
      for (;;) {
        const page = await (await get(`interval=15m&agg=avg,count&fill=previous&limit=7${cursor}`)).json()
        paged.push(...page.data)
        if (!page.has_more) break
        cursor = `&cursor=${page.next_cursor}`
      }
      expect(paged).toEqual(await json('interval=15m&agg=avg,count&fill=previous&limit=10000'))
      expect(paged).toHaveLength(3 * 20)
    })

    test("another account's readings never appear, as CSV or as filled buckets", async () => {
      for (const query of ['format=csv', 'format=csv&interval=1h&agg=count&fill=previous', 'format=csv&device_id=dev_a&limit=2']) {
        const text = (await csv(query)).text
        expect({ query, leaked: text.includes('env_x') || text.includes(',99') }).toEqual({ query, leaked: false })
      }
      const theirs = (await csv('format=csv&interval=1h&agg=count&fill=null', {}, stranger.token)).records
      expect(theirs.slice(1).map((r) => [r[1], r[2], r[5]])).toEqual([['dev_a', 't1', '9'], ['dev_a', 't1', '9'], ['dev_a', 't1', '8'], ['dev_a', 't1', '9'], ['dev_a', 't1', '8']])
      // A cursor issued to the owner is refused for another account.
      const first = await csv('format=csv&limit=2')
      await problem(await get(`format=csv&limit=2&cursor=${first.res.headers.get('next-cursor')}`, stranger.token), 400, 'invalid_cursor')
    })
  })
}
