import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { eq } from 'drizzle-orm'
import { animals, breedingRecords, clutches, contacts, documents, environments, invoices, medicalConditions } from '../../db/schema/index.ts'
import { ALL_SCOPES } from '../../src/auth/scopes.ts'
import { newId } from '../../src/ids.ts'
import { READ_ONLY_AREAS } from '../../src/records/all-areas.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env.close() })

/** One account's records in every read-only area, written straight to the database (v1 has no writes for them). */
async function seed(accountId: string) {
  const db = env.deps.database.db
  const id = {
    room: newId('environment'), rack: newId('environment'), tub: newId('environment'), incubator: newId('environment'),
    dam: newId('animal'), sire: newId('animal'), gecko: newId('animal'),
    pairing: newId('breeding'), failedPairing: newId('breeding'), clutch: newId('clutch'), oldClutch: newId('clutch'),
    respiratory: newId('condition'), mites: newId('condition'),
    buyer: newId('contact'), vet: newId('contact'),
    paid: newId('invoice'), open: newId('invoice'),
    vetReport: newId('document'), permit: newId('document'),
  }
  await db.insert(environments).values([
    { id: id.room, account_id: accountId, name: 'Reptile room', kind: 'room', location: 'Basement' },
    { id: id.rack, account_id: accountId, name: 'Rack A', kind: 'rack', parent_id: id.room },
    { id: id.tub, account_id: accountId, name: 'Tub A1', kind: 'tub', parent_id: id.rack, width_cm: 60, depth_cm: 40, height_cm: 15 },
    { id: id.incubator, account_id: accountId, name: 'Incubator', kind: 'incubator', parent_id: id.room },
  ])
  await db.insert(animals).values([
    { id: id.dam, account_id: accountId, name: 'Dam', species_id: 'python-regius', sex: 'female' },
    { id: id.sire, account_id: accountId, name: 'Sire', species_id: 'python-regius', sex: 'male' },
    { id: id.gecko, account_id: accountId, name: 'Gecko', species_id: 'eublepharis-macularius' },
  ])
  await db.insert(breedingRecords).values([
    { id: id.pairing, account_id: accountId, species_id: 'python-regius', dam_id: id.dam, sire_id: id.sire, season: 2026, status: 'laid', paired_on: '2026-01-10', locks_observed: 4 },
    { id: id.failedPairing, account_id: accountId, species_id: 'eublepharis-macularius', dam_id: id.gecko, season: 2025, status: 'unsuccessful' },
  ])
  await db.insert(clutches).values([
    { id: id.oldClutch, account_id: accountId, species_id: 'python-regius', dam_id: id.dam, status: 'hatched', laid_on: '2025-05-02', egg_count: 5, hatched_count: 5 },
    { id: id.clutch, account_id: accountId, breeding_record_id: id.pairing, species_id: 'python-regius', dam_id: id.dam, sire_id: id.sire, status: 'incubating', laid_on: '2026-04-20', egg_count: 7, fertile_count: 6, incubator_id: id.incubator, incubation_temperature_c: 31.5 },
  ])
  await db.insert(medicalConditions).values([
    { id: id.respiratory, account_id: accountId, animal_id: id.dam, name: 'Respiratory infection', category: 'respiratory', severity: 'moderate', status: 'active', diagnosed_on: '2026-10-01' },
    { id: id.mites, account_id: accountId, animal_id: id.gecko, name: 'Mites', category: 'parasite', severity: 'mild', status: 'resolved', diagnosed_on: '2026-03-01', resolved_on: '2026-03-20' },
  ])
  await db.insert(contacts).values([
    { id: id.buyer, account_id: accountId, name: 'Alex Buyer', kind: 'customer', email: 'alex@example.com', tags: ['repeat'], country: 'DE' },
    { id: id.vet, account_id: accountId, name: 'Dr. Jo Vet', company: 'Exotic Vets Ltd', kind: 'veterinarian' },
  ])
  await db.insert(invoices).values([
    { id: id.paid, account_id: accountId, number: 'INV-1', contact_id: id.buyer, status: 'paid', currency: 'EUR', issued_on: '2026-06-01', paid_at: '2026-06-03T10:00:00.000Z', line_items: [{ description: 'Ball python hatchling', quantity: 1, unit_amount: 15000, amount: 15000, animal_id: id.sire }], subtotal: 15000, tax: 2850, total: 17850 },
    { id: id.open, account_id: accountId, number: 'INV-2', contact_id: id.buyer, status: 'open', currency: 'EUR', issued_on: '2026-09-01', due_on: '2026-10-01', subtotal: 5000, tax: 0, total: 5000 },
  ])
  await db.insert(documents).values([
    { id: id.vetReport, account_id: accountId, title: 'Vet report', kind: 'vet_report', animal_id: id.dam, contact_id: id.vet, file_name: 'report.pdf', content_type: 'application/pdf', size_bytes: 52000 },
    { id: id.permit, account_id: accountId, title: 'Keeping permit', kind: 'permit', file_name: 'permit.pdf', content_type: 'application/pdf', size_bytes: 1000, url: 'https://files.example/permit.pdf' },
  ])
  const byArea: Record<string, string[]> = {
    environments: [id.room, id.rack, id.tub, id.incubator], 'breeding-records': [id.pairing, id.failedPairing], clutches: [id.clutch, id.oldClutch],
    conditions: [id.respiratory, id.mites], contacts: [id.buyer, id.vet], invoices: [id.paid, id.open], documents: [id.vetReport, id.permit],
  }
  return { id, byArea }
}

type Key = Awaited<ReturnType<TestEnv['account']>>
async function allIds(key: Key, path: string, query = '', limit = 1): Promise<string[]> {
  const ids: string[] = []
  let cursor: string | null = null
  do {
    const res = await env.request('GET', `/api/v1${path}?limit=${limit}${query ? `&${query}` : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token: key.token })
    if (res.status !== 200) throw new Error(`${path}?${query}: ${res.status} ${await res.text()}`)
    const page = await res.json()
    ids.push(...page.data.map((item: { id: string }) => item.id))
    cursor = page.next_cursor
  } while (cursor)
  return ids
}

let owner: Key
let stranger: Key
let seeded: Awaited<ReturnType<typeof seed>>
let strangers: Awaited<ReturnType<typeof seed>>
beforeAll(async () => {
  owner = await env.account({ scopes: ALL_SCOPES })
  stranger = await env.account({ scopes: ALL_SCOPES })
  seeded = await seed(owner.accountId)
  strangers = await seed(stranger.accountId)
})

describe('read-only areas', () => {
  test('each lists exactly its account\'s records, newest first, in the documented shape, page by page', async () => {
    for (const area of READ_ONLY_AREAS) {
      const expected = [...seeded.byArea[area.name]!].reverse()
      expect({ area: area.name, ids: await allIds(owner, area.path) }).toEqual({ area: area.name, ids: expected })
      expect({ area: area.name, ids: await allIds(stranger, area.path, '', 50) }).toEqual({ area: area.name, ids: [...strangers.byArea[area.name]!].reverse() })
      const page = await (await env.request('GET', `/api/v1${area.path}?limit=200`, { token: owner.token })).json()
      const check = TypeCompiler.Compile(area.item)
      for (const item of page.data) {
        expect({ area: area.name, errors: [...check.Errors(item)].map((e) => `${e.path} ${e.message}`) }).toEqual({ area: area.name, errors: [] })
        expect(item).not.toHaveProperty('account_id')
      }
    }
  })

  test('filters', async () => {
    const { id } = seeded
    const cases: [string, string, string[]][] = [
      ['/environment/environments', 'kind=tub', [id.tub]],
      ['/environment/environments', `parent_id=${id.room}`, [id.incubator, id.rack]],
      ['/environment/environments', 'q=basement', [id.room]],
      ['/breeding/records', 'status=laid', [id.pairing]],
      ['/breeding/records', 'season=2025', [id.failedPairing]],
      ['/breeding/records', `animal_id=${id.sire}`, [id.pairing]],
      ['/breeding/records', 'species_id=eublepharis-macularius', [id.failedPairing]],
      ['/breeding/clutches', 'status=incubating', [id.clutch]],
      ['/breeding/clutches', `animal_id=${id.dam}`, [id.oldClutch, id.clutch]],
      ['/breeding/clutches', `breeding_record_id=${id.pairing}`, [id.clutch]],
      ['/breeding/clutches', 'laid_from=2026-01-01', [id.clutch]],
      ['/breeding/clutches', 'laid_to=2025-05-02', [id.oldClutch]],
      ['/medical/conditions', `animal_id=${id.gecko}`, [id.mites]],
      ['/medical/conditions', 'status=active', [id.respiratory]],
      ['/medical/conditions', 'severity=mild&category=parasite', [id.mites]],
      ['/documents', 'kind=permit', [id.permit]],
      ['/documents', `animal_id=${id.dam}`, [id.vetReport]],
      ['/documents', `contact_id=${id.vet}`, [id.vetReport]],
      ['/contacts', 'kind=veterinarian', [id.vet]],
      ['/contacts', 'tag=repeat', [id.buyer]],
      ['/contacts', 'q=exotic', [id.vet]],
      ['/contacts', 'q=ALEX@', [id.buyer]],
      ['/sales/invoices', 'status=open', [id.open]],
      ['/sales/invoices', `contact_id=${id.buyer}`, [id.open, id.paid]],
      ['/sales/invoices', 'issued_from=2026-06-02', [id.open]],
      ['/sales/invoices', 'issued_to=2026-06-01', [id.paid]],
    ]
    for (const [path, query, expected] of cases) {
      expect({ path, query, ids: await allIds(owner, path, query, 50) }).toEqual({ path, query, ids: expected })
    }
    // Another account's ids filter to nothing.
    expect(await allIds(stranger, '/medical/conditions', `animal_id=${id.dam}`, 50)).toEqual([])
    await problem(await env.request('GET', '/api/v1/sales/invoices?status=refunded', { token: owner.token }), 400, 'invalid_parameter')
    await problem(await env.request('GET', '/api/v1/breeding/clutches?laid_from=May', { token: owner.token }), 400, 'invalid_parameter')
  })

  test('updated_since returns only records changed at or after the instant', async () => {
    const since = new Date(Date.now() + 1000)
    await env.deps.database.db.update(contacts).set({ updated_at: new Date(since.getTime() + 1000).toISOString() }).where(eq(contacts.id, seeded.id.vet))
    for (const area of READ_ONLY_AREAS) {
      const ids = await allIds(owner, area.path, `updated_since=${since.toISOString()}`, 50)
      expect({ area: area.name, ids }).toEqual({ area: area.name, ids: area.name === 'contacts' ? [seeded.id.vet] : [] })
    }
  })

  test('every write is 405 with Allow: GET, HEAD, whatever scopes the key holds', async () => {
    const none = await env.account({ scopes: [] })
    for (const area of READ_ONLY_AREAS) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        for (const key of [owner, none]) {
          const res = await env.request(method, `/api/v1${area.path}`, { token: key.token, body: { name: 'x' } })
          await problem(res, 405, 'method_not_allowed')
          expect(res.headers.get('allow')).toBe('GET, HEAD')
        }
      }
      // An item path under the area is not served either; a write there is still a v1 write that does not exist.
      await problem(await env.request('DELETE', `/api/v1${area.path}/${seeded.byArea[area.name]![0]}`, { token: owner.token }), 405, 'method_not_allowed')
    }
    for (const path of ['/environment/zones', '/documents/upload']) {
      await problem(await env.request('POST', `/api/v1${path}`, { token: owner.token, body: {} }), 405, 'method_not_allowed')
    }
  })

  test('each refuses a key holding every scope but its own, naming the scope it needs', async () => {
    for (const area of READ_ONLY_AREAS) {
      const key = await env.account({ scopes: ALL_SCOPES.filter((s) => s !== area.scope) })
      const refused = await problem(await env.request('GET', `/api/v1${area.path}`, { token: key.token }), 403, 'insufficient_scope')
      expect(refused.required_scopes).toEqual([area.scope])
      const only = await env.account({ scopes: [area.scope] })
      expect((await env.request('GET', `/api/v1${area.path}`, { token: only.token })).status).toBe(200)
    }
  })
})
