// GET /environment/readings grouped by metric (group_by=metric) and in calendar weeks and months (interval=1w, 1mo),
// over a real server, on the SQL store and (when QUESTDB_ILP and QUESTDB_PG_URL point at a server) on QuestDB: the
// parameters are validated, grouped rows aggregate readings (never averages of averages), page and export like any
// other rows, and never take in another account's series.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Reading } from '../../ingest/stores/interface.ts'
import { createTestEnv, problem, readingsStores, waitFor, type TestEnv } from '../helpers.ts'
import { Value } from '@sinclair/typebox/value'
import { ReadingsPage } from '../../ingest/query.ts'
import '../../src/http/formats.ts'

const stores = readingsStores('readings-grouped')

const H = 3_600_000
const M = 60_000
const D = 24 * H
/** Monday 26 January 2026, 00:00 UTC. */
const BASE = Date.UTC(2026, 0, 26)
const iso = (ms: number) => new Date(ms).toISOString()
const WINDOW = `from=${iso(BASE)}&to=${iso(BASE + 50 * D)}`

/** RFC 4180 records of a CSV text without quoted fields (these readings need none). */
const records = (text: string) => text.split('\r\n').slice(0, -1).map((line) => line.split(','))

for (const { name, overrides, drop } of stores) {
  describe(`readings grouped by metric, and by week and month (${name})`, () => {
    let env: TestEnv
    let owner: { accountId: string; token: string }
    let stranger: { accountId: string; token: string }

    beforeAll(async () => {
      env = await createTestEnv(overrides)
      owner = await env.account({ scopes: ['environment:read'] })
      stranger = await env.account({ scopes: ['environment:read'] })
      const readings: Reading[] = []
      const add = (accountId: string, deviceId: string, channel: string, ts: number, value: number, metric: string | null, environmentId: string | null) =>
        readings.push({ accountId, deviceId, channel, ts, value, metric, environmentId })
      // env_1, 01:00–02:00: temperature from dev_a (10, 20, 30: average 20) and dev_b (40, at the same instant as
      // dev_a's 30). Over the readings the average is 25; the average of the two series' averages would be 30.
      add(owner.accountId, 'dev_a', 't1', BASE + H, 10, 'temperature', 'env_1')
      add(owner.accountId, 'dev_a', 't1', BASE + H + 10 * M, 20, 'temperature', 'env_1')
      add(owner.accountId, 'dev_a', 't1', BASE + H + 20 * M, 30, 'temperature', 'env_1')
      add(owner.accountId, 'dev_b', 't1', BASE + H + 20 * M, 40, 'temperature', 'env_1')
      add(owner.accountId, 'dev_b', 'h1', BASE + H + 5 * M, 55, 'humidity', 'env_1')
      // env_2's temperature, read last in that hour; and an unmapped channel, never in a metric's row.
      add(owner.accountId, 'dev_c', 't1', BASE + H + 30 * M, 0, 'temperature', 'env_2')
      add(owner.accountId, 'dev_c', 'x9', BASE + H, 7, null, null)
      // Later weeks and months: Wednesday 4 February, Saturday 7 March, and Monday 9 March at 00:00 (a new week).
      add(owner.accountId, 'dev_a', 't1', BASE + 9 * D, 12, 'temperature', 'env_1')
      add(owner.accountId, 'dev_a', 't1', BASE + 40 * D, 14, 'temperature', 'env_1')
      add(owner.accountId, 'dev_b', 't1', Date.UTC(2026, 2, 9), 16, 'temperature', 'env_1')
      // Another account: the same device, channel, metric and environment ids, in the same hours (not at the same
      // instants: readings are unique on device, channel and time, and real device ids never repeat across accounts).
      for (const ts of [BASE + H + 15 * M, BASE + H + 25 * M, BASE + 9 * D + H]) add(stranger.accountId, 'dev_a', 't1', ts, 99, 'temperature', 'env_1')
      await env.deps.readings.write(readings)
      if (env.deps.readings.kind === 'questdb') {
        // QuestDB applies WAL writes asynchronously: wait until every row is visible.
        const count = async (token: string) => (await (await env.request('GET', `/api/v1/environment/readings?${WINDOW}&limit=10000`, { token })).json()).data.length
        await waitFor(async () => (await count(owner.token)) === 10 && (await count(stranger.token)) === 3, 30_000, 100)
      }
    })
    afterAll(async () => {
      await env?.close()
      await drop()
    })

    const get = (query: string, token = owner.token) => env.request('GET', `/api/v1/environment/readings?${query}`, { token })
    const json = async (query: string, token = owner.token) => {
      const res = await get(query, token)
      const body = await res.json()
      expect({ status: res.status, body: res.status === 200 ? null : body }).toEqual({ status: 200, body: null })
      // Pages are sent as built (not checked by Elysia per request): each one here is held to the declared schema.
      expect([...Value.Errors(ReadingsPage, body)].map((e) => `${e.path}: ${e.message}`)).toEqual([])
      return body.data as Record<string, unknown>[]
    }

    test('every shape of JSON page holds to the declared schema (raw, latest, buckets with each fill, grouped)', async () => {
      for (const query of [WINDOW, `${WINDOW}&limit=3`, 'latest=true', `${WINDOW}&interval=1h&agg=avg,min,max,last,count&fill=previous`,
        `${WINDOW}&interval=15m&fill=null`, `${WINDOW}&group_by=metric&interval=1w&agg=avg,count,last`]) {
        expect((await json(query)).length).toBeGreaterThan(0)
      }
    })

    test('bad values and combinations are 400 problems naming the parameter', async () => {
      for (const [query, path] of [
        ['interval=1h&group_by=device', '/query/group_by'], ['interval=1h&group_by=', '/query/group_by'], ['group_by=metric', '/query/group_by'],
        ['group_by=series', '/query/group_by'], ['latest=true&group_by=metric', '/query/group_by'], ['interval=2w', '/query/interval'], ['interval=1M', '/query/interval'],
      ] as const) {
        const body = await problem(await get(`${WINDOW}&${query}`), 400, 'invalid_parameter')
        expect({ query, paths: body.errors.map((e: { path: string }) => e.path) }).toEqual({ query, paths: [path] })
      }
      // group_by=series is today's rows, as without it.
      expect(await json(`${WINDOW}&interval=1h&agg=count&group_by=series`)).toEqual(await json(`${WINDOW}&interval=1h&agg=count`))
      // An aggregate the service does not compute: the refusal names the ones it does.
      const first = await problem(await get(`${WINDOW}&interval=1h&agg=first`), 400, 'invalid_parameter')
      expect(first.errors).toEqual([{ path: '/query/agg', message: 'must be a comma-separated list of: avg, min, max, last, count' }])
    })

    test('an environment\'s metrics: avg over all readings (Σsum ÷ Σcount), min, max and count add up, last is the latest (ties: the greatest)', async () => {
      const rows = await json(`${WINDOW}&environment_id=env_1&group_by=metric&interval=1h&agg=avg,min,max,count,last&to=${iso(BASE + 2 * H)}`)
      expect(rows).toEqual([
        { ts: iso(BASE + H), metric: 'humidity', environment_id: 'env_1', avg: 55, min: 55, max: 55, count: 1, last: 55 },
        { ts: iso(BASE + H), metric: 'temperature', environment_id: 'env_1', avg: 25, min: 10, max: 40, count: 4, last: 40 },
      ])
    })

    test('without an environment, a metric across the whole account; unmapped channels in no metric', async () => {
      const hour = `${WINDOW}&group_by=metric&interval=1h&agg=avg,count,last&to=${iso(BASE + 2 * H)}`
      expect(await json(hour)).toEqual([
        { ts: iso(BASE + H), metric: 'humidity', environment_id: null, avg: 55, count: 1, last: 55 },
        { ts: iso(BASE + H), metric: 'temperature', environment_id: null, avg: 20, count: 5, last: 0 },
      ])
      // The other filters narrow the series aggregated.
      expect(await json(`${hour}&device_id=dev_a`)).toEqual([{ ts: iso(BASE + H), metric: 'temperature', environment_id: null, avg: 20, count: 3, last: 30 }])
      expect(await json(`${hour}&metric=humidity`)).toEqual([{ ts: iso(BASE + H), metric: 'humidity', environment_id: null, avg: 55, count: 1, last: 55 }])
      expect(await json(`${hour}&channel=x9`)).toEqual([])
    })

    test('ISO weeks start on Monday 00:00 UTC and months on the 1st, as per-series rows and as metric rows, with fills', async () => {
      const pick = (rows: Record<string, unknown>[]) => rows.map((r) => [r.ts, r.count, r.avg ?? null, r.last ?? null])
      const scope = `${WINDOW}&environment_id=env_1&metric=temperature&agg=count,avg,last`
      const weeks = ['2026-01-26', '2026-02-02', '2026-02-09', '2026-02-16', '2026-02-23', '2026-03-02', '2026-03-09', '2026-03-16'].map((d) => `${d}T00:00:00.000Z`)
      expect(pick(await json(`${scope}&group_by=metric&interval=1w&fill=null`))).toEqual([
        [weeks[0], 4, 25, 40], [weeks[1], 1, 12, 12], [weeks[2], 0, null, null], [weeks[3], 0, null, null],
        [weeks[4], 0, null, null], [weeks[5], 1, 14, 14], [weeks[6], 1, 16, 16], [weeks[7], 0, null, null],
      ])
      expect(pick(await json(`${scope}&group_by=metric&interval=1w&fill=previous`)).slice(2, 5)).toEqual([[weeks[2], 0, 12, 12], [weeks[3], 0, 12, 12], [weeks[4], 0, 12, 12]])
      // The window starts on 26 January: its first month is January's, from the 1st.
      expect(pick(await json(`${scope}&group_by=metric&interval=1mo`))).toEqual([
        ['2026-01-01T00:00:00.000Z', 4, 25, 40], ['2026-02-01T00:00:00.000Z', 1, 12, 12], ['2026-03-01T00:00:00.000Z', 2, 15, 16],
      ])
      const perSeries = await json(`${scope}&interval=1mo`)
      expect(perSeries.map((r) => [r.ts, r.device_id, r.channel, r.count, r.avg])).toEqual([
        ['2026-01-01T00:00:00.000Z', 'dev_a', 't1', 3, 20], ['2026-01-01T00:00:00.000Z', 'dev_b', 't1', 1, 40],
        ['2026-02-01T00:00:00.000Z', 'dev_a', 't1', 1, 12], ['2026-03-01T00:00:00.000Z', 'dev_a', 't1', 1, 14], ['2026-03-01T00:00:00.000Z', 'dev_b', 't1', 1, 16],
      ])
      expect((await json(`${scope}&interval=1w&device_id=dev_b`)).map((r) => r.ts)).toEqual([weeks[0], weeks[6]])
    })

    test('CSV of grouped rows: ts, metric, environment_id, then the aggregates; the same rows as JSON', async () => {
      const query = `${WINDOW}&group_by=metric&interval=1mo&agg=avg,count&format=csv`
      const res = await get(query)
      expect(res.status).toBe(200)
      const lines = records(await res.text())
      expect(lines[0]).toEqual(['ts', 'metric', 'environment_id', 'avg', 'count'])
      expect(lines.slice(1)).toEqual((await json(query.replace('format=csv', 'format=json'))).map((r) => [r.ts, r.metric, r.environment_id ?? '', r.avg, r.count].map(String)))
      expect(lines.slice(1)).toEqual([
        ['2026-01-01T00:00:00.000Z', 'humidity', '', '55', '1'], ['2026-01-01T00:00:00.000Z', 'temperature', '', '20', '5'],
        ['2026-02-01T00:00:00.000Z', 'temperature', '', '12', '1'], ['2026-03-01T00:00:00.000Z', 'temperature', '', '15', '2'],
      ])
    })

    test('pages and files of grouped rows follow on through their cursors without gaps or repeats; a cursor is bound to its grouping', async () => {
      // A file ends where a JSON page of its size would, between the groups of a bucket too: files of a third of the rows.
      for (const query of [`${WINDOW}&group_by=metric&interval=1w&agg=count,last&fill=previous`, `${WINDOW}&group_by=metric&interval=1h&agg=avg`, `${WINDOW}&interval=1w&agg=count&fill=null`]) {
        const whole = await json(`${query}&limit=10000`)
        const fileLimit = Math.ceil(whole.length / 3)
        expect(whole.length).toBeGreaterThan(3)
        const paged: unknown[] = []
        let cursor = ''
        for (let page = 0; page < 100; page++) {
          const body = await (await get(`${query}&limit=2${cursor}`)).json()
          paged.push(...body.data)
          if (!body.has_more) break
          cursor = `&cursor=${body.next_cursor}`
        }
        expect({ query, rows: paged }).toEqual({ query, rows: whole })
        // CSV files through Link rel="next".
        const file = async (path: string) => {
          const res = await env.request('GET', path, { token: owner.token })
          expect(res.status).toBe(200)
          return { lines: records(await res.text()), link: res.headers.get('link') }
        }
        const all = (await file(`/api/v1/environment/readings?${query}&format=csv&limit=1000000`)).lines
        const gathered: string[][] = []
        let path: string | undefined = `/api/v1/environment/readings?${query}&format=csv&limit=${fileLimit}`
        let files = 0
        while (path) {
          const { lines, link } = await file(path)
          expect(lines[0]).toEqual(all[0]!)
          gathered.push(...lines.slice(1))
          files++
          path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined
        }
        expect({ query, rows: gathered }).toEqual({ query, rows: all.slice(1) })
        expect({ query, files }).toEqual({ query, files: Math.ceil(whole.length / fileLimit) })
      }
      const first = await (await get(`${WINDOW}&group_by=metric&interval=1w&agg=count&limit=1`)).json()
      expect(first.has_more).toBe(true)
      await problem(await get(`${WINDOW}&interval=1w&agg=count&limit=1&cursor=${first.next_cursor}`), 400, 'invalid_cursor')
    })

    test("another account's series never enter a grouped aggregate, and it sees only its own", async () => {
      for (const query of [`${WINDOW}&group_by=metric&interval=1mo&agg=max,count`, `${WINDOW}&group_by=metric&environment_id=env_1&interval=1w&agg=max,count&fill=previous`, `${WINDOW}&group_by=metric&interval=1h&agg=max,count&format=csv`]) {
        const text = await (await get(query)).text()
        expect({ query, leaked: text.includes('99') }).toEqual({ query, leaked: false })
      }
      expect((await json(`${WINDOW}&group_by=metric&interval=1mo&agg=max,count`, stranger.token)).map((r) => [r.ts, r.metric, r.environment_id, r.max, r.count])).toEqual([
        ['2026-01-01T00:00:00.000Z', 'temperature', null, 99, 2], ['2026-02-01T00:00:00.000Z', 'temperature', null, 99, 1],
      ])
    })

    test('the cost of a grouped query is the series it aggregates × the buckets; weeks and months are counted as the calendar has them', async () => {
      const since1970 = 'from=1970-01-01T00:00:00Z&group_by=metric&agg=count&limit=5'
      const body = await problem(await get(`${since1970}&interval=1h`), 422, 'query_too_expensive')
      // Five series (dev_a/t1, dev_b/t1, dev_b/h1, dev_c/t1 and the unmapped dev_c/x9), though the answer has two metrics.
      expect(body.series).toBe(5)
      expect(body.rows).toBe(5 * body.buckets)
      expect((await get(`${since1970}&interval=${body.suggested_interval}`)).status).toBe(200)
      const months = await json(`${since1970}&interval=1mo&fill=null`)
      expect(months.map((r) => [r.ts, r.metric])).toEqual([
        ['1970-01-01T00:00:00.000Z', 'humidity'], ['1970-01-01T00:00:00.000Z', 'temperature'], ['1970-02-01T00:00:00.000Z', 'humidity'],
        ['1970-02-01T00:00:00.000Z', 'temperature'], ['1970-03-01T00:00:00.000Z', 'humidity'],
      ])
      // The first ISO week holding 1 January 1970 (a Thursday) began on Monday 29 December 1969.
      expect((await json(`${since1970}&interval=1w&fill=null`))[0]!.ts).toBe('1969-12-29T00:00:00.000Z')
    })
  })
}
