import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { animals, environments, outboxEvents } from '../../db/schema/index.ts'
import { newId } from '../../src/ids.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env.close() })

const SCOPES = ['animals:read', 'animals:write'] as const
type Key = Awaited<ReturnType<TestEnv['account']>>

async function create(key: Key, body: Record<string, unknown>) {
  const res = await env.request('POST', '/api/v1/animals', { token: key.token, body })
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`)
  return { etag: res.headers.get('etag')!, animal: await res.json() }
}
const patch = (key: Key, id: string, body: unknown, headers: Record<string, string> = {}) =>
  env.request('PATCH', `/api/v1/animals/${id}`, { token: key.token, body, headers: { 'content-type': 'application/merge-patch+json', ...headers } })
const events = (accountId: string) =>
  env.deps.database.db.select().from(outboxEvents).where(eq(outboxEvents.account_id, accountId)).orderBy(outboxEvents.id)
async function environmentOf(accountId: string) {
  const id = newId('environment')
  await env.deps.database.db.insert(environments).values({ id, account_id: accountId, name: 'Rack A', kind: 'rack' })
  return id
}

/** Follows next_cursor to the end; returns every id seen, in order. */
async function allIds(key: Key, query: string, between?: (page: number, seen: readonly string[]) => Promise<void>) {
  const ids: string[] = []
  let cursor: string | null = null
  for (let page = 0; ; page++) {
    const res = await env.request('GET', `/api/v1/animals?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token: key.token })
    expect(res.status).toBe(200)
    const body = await res.json()
    ids.push(...body.data.map((a: { id: string }) => a.id))
    if (!body.has_more) { expect(body.next_cursor).toBeNull(); return ids }
    await between?.(page, ids)
    cursor = body.next_cursor
  }
}

describe('animals: create and read', () => {
  test('POST answers 201 with the animal, defaults filled, and an ETag; GET returns the same', async () => {
    const key = await env.account({ scopes: SCOPES })
    const envId = await environmentOf(key.accountId)
    const { animal, etag } = await create(key, {
      name: 'Monty', species_id: 'python-regius', sex: 'male', morph: 'banana pastel', traits: ['banana', 'pastel', 'het clown'],
      birth_date: '2024-06-01', acquired_date: '2024-09-15', environment_id: envId, tags: ['breeder'], reference_id: 'BP-001', metadata: { ring: 'A12' },
    })
    expect(animal.id).toMatch(/^anm_[0-9a-hjkmnp-tv-z]{26}$/)
    expect(etag).toBe('"v1"')
    expect(animal).toMatchObject({ name: 'Monty', status: 'active', notes: null, dam_id: null, weight_grams: null, weighed_at: null, environment_id: envId })
    expect(animal.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    const res = await env.request('GET', `/api/v1/animals/${animal.id}`, { token: key.token })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe(etag)
    expect(await res.json()).toEqual(animal)
    const minimal = await create(key, { name: 'Unnamed', species_id: 'eublepharis-macularius' })
    expect(minimal.animal).toMatchObject({ sex: 'unknown', status: 'active', traits: [], tags: [], metadata: {} })
  })

  test('invalid bodies are 422 with field paths, and write nothing', async () => {
    const key = await env.account({ scopes: SCOPES })
    const other = await env.account({ scopes: SCOPES })
    const foreignParent = (await create(other, { name: 'Theirs', species_id: 'python-regius' })).animal.id
    const foreignEnv = await environmentOf(other.accountId)
    const cases: [Record<string, unknown>, string[]][] = [
      [{ name: 'x', species_id: 'python-regius', colour: 'red' }, ['/body/colour']],
      [{ species_id: 'python-regius' }, ['/body/name']],
      [{ name: 'x', species_id: 'python-regius', sex: 'yes' }, ['/body/sex']],
      [{ name: 'x', species_id: 'python-regius', birth_date: '2024-02-30x' }, ['/body/birth_date']],
      // A full-date must exist on the calendar and be written YYYY-MM-DD (RFC 3339), nothing looser.
      [{ name: 'x', species_id: 'python-regius', birth_date: '2023-02-29' }, ['/body/birth_date']],
      [{ name: 'x', species_id: 'python-regius', acquired_date: '2024-6-1' }, ['/body/acquired_date']],
      [{ name: 'x', species_id: 'python-regius', tags: 'not-a-list' }, ['/body/tags']],
      [{ name: 'x', species_id: 'unicornus' }, ['/body/species_id']],
      [{ name: 'x', species_id: 'python-regius', dam_id: foreignParent, environment_id: foreignEnv }, ['/body/environment_id', '/body/dam_id']],
      [{ name: 'x', species_id: 'python-regius', metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, ['/body/metadata']],
    ]
    for (const [body, paths] of cases) {
      const problemBody = await problem(await env.request('POST', '/api/v1/animals', { token: key.token, body }), 422, 'validation_failed')
      for (const path of paths) expect({ body, paths: problemBody.errors.map((e: { path: string }) => e.path) }).toEqual({ body, paths: expect.arrayContaining([path]) })
    }
    expect(await allIds(key, 'limit=200')).toEqual([])
    expect(await events(key.accountId)).toEqual([])
  })

  test('a malformed or unknown id is 404', async () => {
    const key = await env.account({ scopes: SCOPES })
    await problem(await env.request('GET', '/api/v1/animals/not-an-id', { token: key.token }), 404, 'not_found')
    await problem(await env.request('GET', `/api/v1/animals/${newId('animal')}`, { token: key.token }), 404, 'not_found')
    await problem(await patch(key, `act_${'0'.repeat(26)}`, { name: 'x' }), 404, 'not_found')
  })
})

describe('animals: JSON merge patch and preconditions', () => {
  test('members present replace, null clears, metadata merges key by key, absent members stay', async () => {
    const key = await env.account({ scopes: SCOPES })
    const { animal } = await create(key, { name: 'Nyx', species_id: 'pantherophis-guttatus', morph: 'anery', notes: 'calm', tags: ['a', 'b'], traits: ['anery'], metadata: { ring: '1', tank: 'B' } })
    const res = await patch(key, animal.id, { name: 'Nyx II', morph: null, tags: null, metadata: { ring: null, diet: 'f/t' }, status: 'on_loan' })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('"v2"')
    const updated = await res.json()
    expect(updated).toMatchObject({ name: 'Nyx II', morph: null, tags: [], traits: ['anery'], notes: 'calm', status: 'on_loan', metadata: { tank: 'B', diet: 'f/t' } })
    expect(updated.metadata).not.toHaveProperty('ring')
    expect(updated.updated_at > animal.updated_at).toBe(true)
    expect(updated.created_at).toBe(animal.created_at)
    const cleared = await (await patch(key, animal.id, { metadata: null })).json()
    expect(cleared.metadata).toEqual({})
  })

  test('application/json is accepted too; other media types are 415; null on a required field is 422', async () => {
    const key = await env.account({ scopes: SCOPES })
    const { animal } = await create(key, { name: 'Zed', species_id: 'python-regius' })
    expect((await patch(key, animal.id, { notes: 'x' }, { 'content-type': 'application/json' })).status).toBe(200)
    await problem(await patch(key, animal.id, 'notes=x', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type')
    const refused = await problem(await patch(key, animal.id, { name: null, sex: 'dragon' }), 422, 'validation_failed')
    expect(refused.errors.map((e: { path: string }) => e.path)).toEqual(expect.arrayContaining(['/body/name', '/body/sex']))
    const self = await problem(await patch(key, animal.id, { dam_id: animal.id }), 422, 'validation_failed')
    expect(self.errors[0].path).toBe('/body/dam_id')
    const after = await (await env.request('GET', `/api/v1/animals/${animal.id}`, { token: key.token })).json()
    expect(after).toMatchObject({ name: 'Zed', sex: 'unknown', dam_id: null, notes: 'x' })
  })

  test('a patch that changes nothing keeps the version and sends no event', async () => {
    const key = await env.account({ scopes: SCOPES })
    const { animal } = await create(key, { name: 'Same', species_id: 'python-regius', tags: ['x'] })
    const res = await patch(key, animal.id, { name: 'Same', tags: ['x'] })
    expect(res.headers.get('etag')).toBe('"v1"')
    expect((await events(key.accountId)).map((e) => e.type)).toEqual(['animal.created'])
  })

  test('If-Match: the current ETag or * lets the write through; a stale or weak one is 412 and changes nothing', async () => {
    const key = await env.account({ scopes: SCOPES })
    const { animal, etag } = await create(key, { name: 'Rex', species_id: 'pogona-vitticeps' })
    const first = await patch(key, animal.id, { notes: 'one' }, { 'if-match': etag })
    expect(first.status).toBe(200)
    const current = first.headers.get('etag')!
    await problem(await patch(key, animal.id, { notes: 'two' }, { 'if-match': etag }), 412, 'precondition_failed')
    await problem(await patch(key, animal.id, { notes: 'two' }, { 'if-match': `W/${current}` }), 412, 'precondition_failed')
    await problem(await env.request('DELETE', `/api/v1/animals/${animal.id}`, { token: key.token, headers: { 'if-match': etag } }), 412, 'precondition_failed')
    const read = await env.request('GET', `/api/v1/animals/${animal.id}`, { token: key.token })
    expect((await read.json()).notes).toBe('one')
    expect(read.headers.get('etag')).toBe(current)
    expect((await patch(key, animal.id, { notes: 'three' }, { 'if-match': `"v99", ${current}` })).status).toBe(200)
    expect((await patch(key, animal.id, { notes: 'four' }, { 'if-match': '*' })).status).toBe(200)
    expect((await events(key.accountId)).map((e) => e.type)).toEqual(['animal.created', 'animal.updated', 'animal.updated', 'animal.updated'])
  })

  test('concurrent conditional writes with the same ETag: exactly one wins, the rest are 412', async () => {
    const key = await env.account({ scopes: SCOPES })
    const { animal, etag } = await create(key, { name: 'Race', species_id: 'python-regius' })
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => patch(key, animal.id, { notes: `writer ${i}` }, { 'if-match': etag })))
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412, 412, 412, 412, 412, 412])
  })
})

describe('animals: soft delete', () => {
  test('DELETE is 204; the animal is gone from the API but kept in storage, with an event', async () => {
    const key = await env.account({ scopes: SCOPES })
    const { animal } = await create(key, { name: 'Gone', species_id: 'correlophus-ciliatus' })
    const res = await env.request('DELETE', `/api/v1/animals/${animal.id}`, { token: key.token })
    expect(res.status).toBe(204)
    expect(await res.text()).toBe('')
    await problem(await env.request('GET', `/api/v1/animals/${animal.id}`, { token: key.token }), 404, 'not_found')
    await problem(await patch(key, animal.id, { name: 'Back' }), 404, 'not_found')
    await problem(await env.request('DELETE', `/api/v1/animals/${animal.id}`, { token: key.token }), 404, 'not_found')
    expect(await allIds(key, 'limit=50')).toEqual([])
    const types = await (await env.request('GET', '/api/v1/animal-types', { token: key.token })).json()
    expect(types.data).toEqual([])
    const [stored] = await env.deps.database.db.select().from(animals).where(and(eq(animals.id, animal.id), eq(animals.account_id, key.accountId)))
    expect(stored?.deleted_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const all = await events(key.accountId)
    expect(all.map((e) => e.type)).toEqual(['animal.created', 'animal.deleted'])
    const envelope = JSON.parse(all[1]!.payload)
    expect(envelope).toMatchObject({ type: 'animal.deleted', data: { object: { id: animal.id, name: 'Gone' } } })
    expect(envelope.id).toMatch(/^evt_/)
    expect(envelope.data.object).not.toHaveProperty('account_id')
  })
})

describe('animals: lists', () => {
  test('filters: species, status, sex, environment, tag, q (wildcards literal), updated_since', async () => {
    const key = await env.account({ scopes: SCOPES })
    const envId = await environmentOf(key.accountId)
    const a = (await create(key, { name: 'Alpha 100%', species_id: 'python-regius', sex: 'male', tags: ['hold'], environment_id: envId, reference_id: 'R-7' })).animal
    const b = (await create(key, { name: 'Bravo', species_id: 'python-regius', sex: 'female', status: 'sold' })).animal
    const c = (await create(key, { name: 'Charlie', species_id: 'eublepharis-macularius', sex: 'female' })).animal
    const ids = (query: string) => allIds(key, query)
    expect(await ids('species=python-regius')).toEqual([b.id, a.id])
    expect(await ids('status=sold')).toEqual([b.id])
    expect(await ids('sex=female')).toEqual([c.id, b.id])
    expect(await ids(`environment_id=${envId}`)).toEqual([a.id])
    expect(await ids('tag=hold')).toEqual([a.id])
    expect(await ids('q=charl')).toEqual([c.id])
    expect(await ids('q=r-7')).toEqual([a.id])
    expect(await ids('q=100%25')).toEqual([a.id])
    expect(await ids('q=%25')).toEqual([a.id])
    expect(await ids('q=_')).toEqual([])
    expect(await ids('species=python-regius&sex=female')).toEqual([b.id])
    // The animals above were stamped by the database's clock, which a test cannot move: let a few ms pass so they are older.
    await Bun.sleep(5)
    const since = new Date().toISOString()
    await patch(key, c.id, { notes: 'touched' })
    expect(await ids(`updated_since=${since}`)).toEqual([c.id])
    await problem(await env.request('GET', '/api/v1/animals?status=lost', { token: key.token }), 400, 'invalid_parameter')
    await problem(await env.request('GET', '/api/v1/animals?updated_since=yesterday', { token: key.token }), 400, 'invalid_parameter')
    await problem(await env.request('GET', '/api/v1/animals?limit=201', { token: key.token }), 400, 'invalid_parameter')
  })

  test('paging while animals are created and deleted between pages: no duplicates, no skips', async () => {
    const key = await env.account({ scopes: SCOPES })
    const original: string[] = []
    for (let i = 0; i < 23; i++) original.push((await create(key, { name: `A${i}`, species_id: 'python-regius' })).animal.id)
    const deleted = new Set<string>()
    const remove = async (id: string | undefined) => {
      if (!id) return
      expect((await env.request('DELETE', `/api/v1/animals/${id}`, { token: key.token })).status).toBe(204)
      deleted.add(id)
    }
    const ids = await allIds(key, 'limit=4', async (page, seen) => {
      // A new animal sorts first (newest first), onto a page already read; deleting rows on either side of the
      // position must not shift what the next page holds.
      await create(key, { name: `new ${page}`, species_id: 'python-regius' })
      await remove(original.find((id) => seen.includes(id) && !deleted.has(id)))
      if (page % 2 === 0) await remove(original.findLast((id) => !seen.includes(id) && !deleted.has(id)))
    })
    expect(new Set(ids).size).toBe(ids.length)
    const unseenDeleted = [...deleted].filter((id) => !ids.includes(id))
    expect(unseenDeleted.length).toBeGreaterThan(0)
    // Exactly the original animals, minus those deleted before their page was read, newest first.
    expect(ids).toEqual([...original].reverse().filter((id) => !unseenDeleted.includes(id)))
  })

  test('a cursor only works with the filters it was issued for', async () => {
    const key = await env.account({ scopes: SCOPES })
    for (let i = 0; i < 3; i++) await create(key, { name: `C${i}`, species_id: 'python-regius' })
    const first = await (await env.request('GET', '/api/v1/animals?limit=1&species=python-regius', { token: key.token })).json()
    expect(first.has_more).toBe(true)
    await problem(await env.request('GET', `/api/v1/animals?limit=1&species=pogona-vitticeps&cursor=${first.next_cursor}`, { token: key.token }), 400, 'invalid_cursor')
    await problem(await env.request('GET', `/api/v1/activities?limit=1&cursor=${first.next_cursor}`, { token: (await env.account({ scopes: ['activities:read'] })).token }), 400, 'invalid_cursor')
    expect((await env.request('GET', `/api/v1/animals?limit=1&species=python-regius&cursor=${first.next_cursor}`, { token: key.token })).status).toBe(200)
  })

  test('/animal-types lists the species present with counts, paged', async () => {
    const key = await env.account({ scopes: SCOPES })
    for (const species of ['python-regius', 'python-regius', 'pogona-vitticeps', 'eublepharis-macularius']) await create(key, { name: 'x', species_id: species })
    const first = await (await env.request('GET', '/api/v1/animal-types?limit=2', { token: key.token })).json()
    const second = await (await env.request('GET', `/api/v1/animal-types?limit=2&cursor=${first.next_cursor}`, { token: key.token })).json()
    expect([...first.data, ...second.data]).toEqual([
      { species_id: 'eublepharis-macularius', scientific_name: 'Eublepharis macularius', common_name: expect.any(String), count: 1 },
      { species_id: 'pogona-vitticeps', scientific_name: 'Pogona vitticeps', common_name: expect.any(String), count: 1 },
      { species_id: 'python-regius', scientific_name: 'Python regius', common_name: 'Ball python', count: 2 },
    ])
    expect(second.has_more).toBe(false)
  })
})

describe('animals: isolation', () => {
  test("another account's animal is 404 on every path and absent from its lists", async () => {
    const owner = await env.account({ scopes: SCOPES })
    const stranger = await env.account({ scopes: SCOPES })
    const { animal, etag } = await create(owner, { name: 'Mine', species_id: 'python-regius' })
    await problem(await env.request('GET', `/api/v1/animals/${animal.id}`, { token: stranger.token }), 404, 'not_found')
    await problem(await patch(stranger, animal.id, { name: 'Stolen' }, { 'if-match': etag }), 404, 'not_found')
    await problem(await env.request('DELETE', `/api/v1/animals/${animal.id}`, { token: stranger.token }), 404, 'not_found')
    expect(await allIds(stranger, 'limit=200')).toEqual([])
    expect((await (await env.request('GET', '/api/v1/animal-types', { token: stranger.token })).json()).data).toEqual([])
    const theirs = await create(stranger, { name: 'Child', species_id: 'python-regius' })
    await problem(await patch(stranger, theirs.animal.id, { dam_id: animal.id }), 422, 'validation_failed')
    const still = await (await env.request('GET', `/api/v1/animals/${animal.id}`, { token: owner.token })).json()
    expect(still).toEqual(animal)
  })
})
