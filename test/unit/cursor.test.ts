import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { SPECIES } from '../../db/reference/species.ts'
import { CursorCodec, type CursorScope } from '../../src/http/cursor.ts'
import { ApiError } from '../../src/http/errors.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

describe('CursorCodec', () => {
  const codec = new CursorCodec('test-secret')
  const scope: CursorScope = { list: 'animals', accountId: 'acct_a', filters: { species: 'python-regius', status: undefined } }
  const code = (fn: () => unknown) => { try { fn(); return 'decoded' } catch (e) { return e instanceof ApiError ? e.code : String(e) } }

  test('round-trips a position; filter key order and undefined filters do not matter', () => {
    const cursor = codec.encode(scope, ['2026-11-21T10:00:00.000Z', 'anm_1'])
    expect(codec.decode({ ...scope, filters: { species: 'python-regius' } }, cursor)).toEqual(['2026-11-21T10:00:00.000Z', 'anm_1'])
  })

  test('is refused on another list, account, filter set, or under another secret', () => {
    const cursor = codec.encode(scope, [1, 'x'])
    expect(code(() => codec.decode({ ...scope, list: 'activities' }, cursor))).toBe('invalid_cursor')
    expect(code(() => codec.decode({ ...scope, accountId: 'acct_b' }, cursor))).toBe('invalid_cursor')
    expect(code(() => codec.decode({ ...scope, filters: { species: 'boa-imperator' } }, cursor))).toBe('invalid_cursor')
    expect(code(() => new CursorCodec('other').decode(scope, cursor))).toBe('invalid_cursor')
  })

  test('any change to a cursor is detected (property)', () => {
    const cursor = codec.encode(scope, ['2026-01-01T00:00:00.000Z', 'anm_01jd'])
    fc.assert(fc.property(fc.integer({ min: 0, max: cursor.length - 1 }), fc.constantFrom(...'ABCabc012-_.='.split('')), (i, ch) => {
      fc.pre(cursor[i] !== ch)
      const forged = cursor.slice(0, i) + ch + cursor.slice(i + 1)
      expect(code(() => codec.decode(scope, forged))).toBe('invalid_cursor')
    }), { numRuns: 300 })
    fc.assert(fc.property(fc.string({ maxLength: 200 }), (junk) => {
      expect(code(() => codec.decode(scope, junk))).toBe('invalid_cursor')
    }))
  })

  test('a forged payload with a reused signature is refused', () => {
    const cursor = codec.encode(scope, ['2026-01-01T00:00:00.000Z', 'anm_1'])
    const payload = Buffer.from(JSON.stringify(['2020-01-01T00:00:00.000Z', 'anm_0'])).toString('base64url')
    expect(code(() => codec.decode(scope, `${payload}.${cursor.split('.')[1]}`))).toBe('invalid_cursor')
  })
})

describe('pagination over HTTP', () => {
  let env: TestEnv
  let token: string
  beforeAll(async () => { env = await createTestEnv(); token = (await env.account()).token })
  afterAll(async () => { await env.close() })

  test('following next_cursor visits every item once, in order', async () => {
    const ids: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query: string = cursor ? `limit=17&cursor=${encodeURIComponent(cursor)}` : 'limit=17'
      const page: any = await (await env.request('GET', `/api/v1/species?${query}`, { token })).json()
      expect(page.data.length).toBeLessThanOrEqual(17)
      ids.push(...page.data.map((s: { id: string }) => s.id))
      expect(page.next_cursor === null).toBe(!page.has_more)
      cursor = page.next_cursor
      pages++
    } while (cursor)
    expect(ids.length).toBeGreaterThanOrEqual(80)
    expect(new Set(ids).size).toBe(ids.length)
    expect([...ids].sort()).toEqual(ids)
    expect(pages).toBe(Math.ceil(ids.length / 17))
  })

  test('a cursor is refused on another list or with other filters, and when forged', async () => {
    const page = await (await env.request('GET', '/api/v1/species?limit=3&class=reptilia', { token })).json()
    const cursor = encodeURIComponent(page.next_cursor)
    expect((await env.request('GET', `/api/v1/species?limit=3&class=reptilia&cursor=${cursor}`, { token })).status).toBe(200)
    await problem(await env.request('GET', `/api/v1/environment/metrics?limit=3&cursor=${cursor}`, { token }), 400, 'invalid_cursor')
    await problem(await env.request('GET', `/api/v1/species?limit=3&class=amphibia&cursor=${cursor}`, { token }), 400, 'invalid_cursor')
    await problem(await env.request('GET', `/api/v1/species?limit=3&cursor=${cursor}`, { token }), 400, 'invalid_cursor')
    await problem(await env.request('GET', `/api/v1/species?limit=3&cursor=${cursor.replace(/^./, 'Z')}`, { token }), 400, 'invalid_cursor')
  })

  test('limit outside 1–200 is 400 invalid_parameter', async () => {
    for (const limit of ['0', '201', '-1', 'ten', '1.5']) {
      await problem(await env.request('GET', `/api/v1/species?limit=${limit}`, { token }), 400, 'invalid_parameter')
    }
    expect((await (await env.request('GET', '/api/v1/species?limit=200', { token })).json()).data.length).toBe(Math.min(200, SPECIES.length))
    expect((await (await env.request('GET', '/api/v1/species', { token })).json()).data.length).toBe(50)
  })
})
