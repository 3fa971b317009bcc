// Pages of buckets sent again as they were (ingest/rendered-pages.ts, issue 57): a page asked again, made from the
// same kept rows, is the same bytes (gzipped or not) without being made again; a write into its buckets' time makes it
// anew, with the write in it; another account's identical question, another page size or encoding, is its own page;
// a page holding rows read from the store at every ask (a window's partial edge) is never sent again.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { gunzipSync } from 'node:zlib'
import { JOIN_MS } from '../../ingest/shared-reads.ts'
import type { Reading } from '../../ingest/stores/interface.ts'
import { createTestEnv, readingsStores, waitFor, type TestEnv } from '../helpers.ts'

const stores = readingsStores('readings-rendered-pages')
const iso = (ms: number) => new Date(ms).toISOString()
const H = 3_600_000
const BASE = Date.UTC(2025, 8, 1)

for (const { name, overrides, drop } of stores) {
  describe(`pages of buckets sent again (${name})`, () => {
    let env: TestEnv
    beforeAll(async () => { env = await createTestEnv(overrides) })
    afterAll(async () => { await env?.close(); await drop() })

    const resent = () => env.deps.metrics.readingsPagesResent.get()
    const storeRows = () => env.deps.metrics.readingsBucketRows.get(['store'])
    /** Past the time an identical ask joins a read in flight (shared-reads.ts): a page asked again then is made from kept rows. */
    const unshared = () => Bun.sleep(JOIN_MS + 100)
    const write = async (readings: Reading[]) => {
      await env.deps.readings.write(readings)
      await env.deps.readings.refreshRollups?.(0)
      await waitFor(() => env.deps.readings.caughtUp(), 10_000)
    }
    /** A page as it left the server: its bytes undecoded, its JSON, and whether it was gzipped. */
    const ask = async (token: string, query: URLSearchParams, gzip: boolean) => {
      const res = await fetch(`${env.baseUrl}/api/v1/environment/readings?${query}`, { headers: { authorization: `Bearer ${token}`, 'accept-encoding': gzip ? 'gzip' : 'identity' }, decompress: false })
      const bytes = new Uint8Array(await res.arrayBuffer())
      expect(res.status).toBe(200)
      const gzipped = res.headers.get('content-encoding') === 'gzip'
      const text = new TextDecoder().decode(gzipped ? gunzipSync(bytes) : bytes)
      return { bytes, gzipped, text, page: JSON.parse(text) as { data: Record<string, unknown>[]; next_cursor: string | null } }
    }

    test('asked again, a page is the same bytes; a write into its time, another account, size or encoding make their own', async () => {
      const [a, b] = [await env.account({ scopes: ['environment:read'] }), await env.account({ scopes: ['environment:read'] })]
      // One series per account, 48 hours of readings every 5 minutes: hourly pages of 10 rows (a page's JSON over
      // COMPRESSION.minChars, so gzipped where asked).
      const readingsFor = (accountId: string, value: number) => Array.from({ length: 48 * 12 }, (_, i) => ({ accountId, deviceId: `hub_${accountId}`, channel: 't1', ts: BASE + i * 5 * 60_000, value: value + (i % 7), metric: 'temperature', environmentId: 'env_1' }))
      await write([...readingsFor(a.accountId, 10), ...readingsFor(b.accountId, 20)])
      const query = new URLSearchParams({ from: iso(BASE), to: iso(BASE + 48 * H), interval: '1h', agg: 'avg,count', limit: '10' })

      const first = await ask(a.token, query, true)
      expect(first.gzipped).toBe(true)
      expect(first.page.data).toHaveLength(10)
      const before = resent()
      await unshared()
      const store0 = storeRows()
      const again = await ask(a.token, query, true)
      expect(again.bytes).toEqual(first.bytes)
      expect(resent()).toBe(before + 1)
      expect(storeRows()).toBe(store0)

      // Its next page, asked twice: the second time sent as it was.
      const next = new URLSearchParams(query)
      next.set('cursor', first.page.next_cursor!)
      const second = await ask(a.token, next, true)
      expect(second.page.data[0]!.ts).toBe(iso(BASE + 10 * H))
      await unshared()
      const secondAgain = await ask(a.token, next, true)
      expect(secondAgain.bytes).toEqual(second.bytes)
      expect(resent()).toBe(before + 2)

      // Without gzip: a page of its own, the same JSON; then sent again as it was too.
      const plain = await ask(a.token, query, false)
      expect(plain.gzipped).toBe(false)
      expect(plain.text).toBe(first.text)
      expect(resent()).toBe(before + 2)
      await unshared()
      expect((await ask(a.token, query, false)).bytes).toEqual(plain.bytes)
      expect(resent()).toBe(before + 3)

      // Another page size: its own page, the first 5 rows of the same answer.
      const smaller = new URLSearchParams(query)
      smaller.set('limit', '5')
      expect((await ask(a.token, smaller, true)).page.data).toEqual(first.page.data.slice(0, 5))
      expect(resent()).toBe(before + 3)

      // Account b, the very same question: its own rows, never a's page.
      const other = await ask(b.token, query, true)
      expect(other.text).not.toContain(`hub_${a.accountId}`)
      expect(other.text).toContain(`hub_${b.accountId}`)
      expect(resent()).toBe(before + 3)

      // A window ending inside hour 9: that partial bucket is read from the store at every ask, so its page is never
      // made of the same rows twice, and is made anew each time.
      const partial = new URLSearchParams(query)
      partial.set('to', iso(BASE + 9 * H + 30 * 60_000))
      partial.set('limit', '20')
      const partialFirst = await ask(a.token, partial, true)
      expect(partialFirst.page.data).toHaveLength(10)
      await unshared()
      expect((await ask(a.token, partial, true)).text).toBe(partialFirst.text)
      expect(resent()).toBe(before + 3)

      // A late reading into hour 5 of a's: the page is made anew and holds it; asked again, sent as that.
      await write([{ accountId: a.accountId, deviceId: `hub_${a.accountId}`, channel: 't1', ts: BASE + 5 * H + 30_000, value: 1000, metric: 'temperature', environmentId: 'env_1' }])
      await unshared()
      const written = await ask(a.token, query, true)
      expect(resent()).toBe(before + 3)
      expect(written.page.data.map((row) => row.count)).toEqual(first.page.data.map((row, i) => (i === 5 ? 13 : row.count)))
      expect(written.page.data.filter((_, i) => i !== 5)).toEqual(first.page.data.filter((_, i) => i !== 5))
      await unshared()
      expect((await ask(a.token, query, true)).bytes).toEqual(written.bytes)
      expect(resent()).toBe(before + 4)
    }, 60_000)
  })
}
