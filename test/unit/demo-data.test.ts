// The generated demo collection: the kinds of records a breeder keeps, consistent with each other, deterministic
// for a seed, and served by the API.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, asc, eq } from 'drizzle-orm'
import {
  activities, animals, breedingRecords, clutches, contacts, documents, environments, invoices, medicalConditions,
} from '../../db/schema/index.ts'
import { ALL_SCOPES } from '../../src/auth/scopes.ts'
import { fillDemoAccount, generateDemoData } from '../../src/tools/demo-data.ts'
import { backendLabel, createTestEnv, type TestEnv } from '../helpers.ts'

let env: TestEnv
let demo: { accountId: string; token: string }
let counts: Awaited<ReturnType<typeof fillDemoAccount>>
let fillMs = 0

beforeAll(async () => {
  env = await createTestEnv()
  demo = await env.account({ scopes: ALL_SCOPES })
  const started = performance.now()
  counts = await fillDemoAccount(env.deps, demo.accountId) // the default size, as `demo` makes it
  fillMs = performance.now() - started
  console.log(`demo-data.test: default fill (${counts.animals} animals, ${counts.activities} activities) took ${Math.round(fillMs)} ms on ${backendLabel}`)
})
afterAll(async () => { await env.close() })

const db = () => env.deps.database.db
const rowsOf = <T extends { account_id: any }>(table: T, accountId = demo.accountId) => db().select().from(table as any).where(eq(table.account_id, accountId)) as Promise<any[]>

describe('fillDemoAccount (default size)', () => {
  test('makes a few hundred animals with thousands of activities and every other kind of record, quickly', async () => {
    expect(fillMs).toBeLessThan(20_000)
    expect(counts.animals).toBe(300)
    expect(counts.activities).toBeGreaterThan(5_000)
    expect(counts.environments).toBeGreaterThan(50)
    expect(counts.contacts).toBeGreaterThan(20)
    expect(counts['breeding-records']).toBeGreaterThan(5)
    expect(counts.clutches).toBeGreaterThan(5)
    expect(counts.conditions).toBeGreaterThan(5)
    expect(counts.invoices).toBeGreaterThan(10)
    expect(counts.documents).toBeGreaterThan(20)
    const stored = async (table: any) => (await rowsOf(table)).length
    expect(await stored(animals)).toBe(counts.animals)
    expect(await stored(activities)).toBe(counts.activities)
    expect(await stored(invoices)).toBe(counts.invoices)

    const tally = (rows: any[], key: string) => rows.reduce<Record<string, number>>((t, r) => ({ ...t, [r[key]]: (t[r[key]] ?? 0) + 1 }), {})
    const animalRows = await rowsOf(animals)
    const byStatus = tally(animalRows, 'status')
    expect(byStatus.active!).toBeGreaterThan(counts.animals / 2)
    for (const status of ['sold', 'deceased', 'on_loan']) expect(byStatus[status]).toBeGreaterThan(0)
    const bySpecies = tally(animalRows, 'species_id')
    for (const species of ['python-regius', 'pantherophis-guttatus', 'eublepharis-macularius', 'correlophus-ciliatus', 'pogona-vitticeps']) expect(bySpecies[species]).toBeGreaterThan(5)
    expect(animalRows.filter((a) => a.species_id === 'python-regius' && a.traits.length).length).toBeGreaterThan(5)
    expect(Object.keys(tally(await rowsOf(activities), 'type')).sort()).toEqual(['cleaning', 'defecation', 'feeding', 'handling', 'length', 'medication', 'note', 'shed', 'weight'])
    expect(Object.keys(tally(await rowsOf(environments), 'kind')).sort()).toEqual(['enclosure', 'incubator', 'outdoor', 'rack', 'room', 'tub'])
    for (const kind of ['customer', 'veterinarian', 'supplier', 'breeder']) expect(tally(await rowsOf(contacts), 'kind')[kind]).toBeGreaterThan(0)
  })

  test("every animal's weight is its newest weighing; weights grow; history lies in the last ~18 months", async () => {
    const weighings = await db().select().from(activities)
      .where(and(eq(activities.account_id, demo.accountId), eq(activities.type, 'weight')))
      .orderBy(asc(activities.occurred_at), asc(activities.id))
    const newest = new Map<string, { grams: number; at: string }>()
    const series = new Map<string, number[]>()
    for (const w of weighings) {
      const grams = (w.details as { grams: number }).grams
      newest.set(w.animal_id, { grams, at: w.occurred_at })
      series.set(w.animal_id, [...(series.get(w.animal_id) ?? []), grams])
    }
    const animalRows = await rowsOf(animals)
    for (const a of animalRows) {
      const latest = newest.get(a.id)
      expect({ id: a.id, grams: a.weight_grams, at: a.weighed_at ?? null })
        .toEqual({ id: a.id, grams: latest?.grams ?? null, at: latest?.at ?? null })
    }
    expect(newest.size).toBeGreaterThan(animalRows.length * 0.9)
    // Hatchlings grow: their last weighing is well above their first.
    const grown = animalRows.filter((a) => a.dam_id && (series.get(a.id)?.length ?? 0) >= 4)
    expect(grown.length).toBeGreaterThan(10)
    for (const a of grown) { const s = series.get(a.id)!; expect(s.at(-1)!).toBeGreaterThan(s[0]!) }
    const times = (await rowsOf(activities)).map((r) => Date.parse(r.occurred_at))
    expect(Math.max(...times)).toBeLessThanOrEqual(Date.now())
    expect(Math.min(...times)).toBeGreaterThan(Date.now() - 560 * 86_400_000)
  })

  test('parents are earlier animals of the same species; clutches and pairings name real parents', async () => {
    const animalRows = await rowsOf(animals)
    const byId = new Map(animalRows.map((a) => [a.id, a]))
    const withParents = animalRows.filter((a) => a.dam_id)
    expect(withParents.length).toBeGreaterThan(30)
    for (const a of withParents) {
      for (const parent of [byId.get(a.dam_id), byId.get(a.sire_id)]) {
        expect(parent?.species_id).toBe(a.species_id)
        expect(parent!.birth_date < a.birth_date).toBe(true)
      }
      expect(byId.get(a.dam_id)!.sex).toBe('female')
      expect(byId.get(a.sire_id)!.sex).toBe('male')
    }
    for (const c of await rowsOf(clutches)) {
      expect(byId.get(c.dam_id)?.species_id).toBe(c.species_id)
      expect(c.egg_count).toBeGreaterThanOrEqual(c.fertile_count)
      if (c.hatched_count !== null) expect(c.fertile_count).toBeGreaterThanOrEqual(c.hatched_count)
    }
    expect((await rowsOf(breedingRecords)).every((r) => byId.get(r.dam_id)?.sex === 'female' && byId.get(r.sire_id)?.sex === 'male')).toBe(true)
    expect((await rowsOf(medicalConditions)).every((c) => byId.has(c.animal_id))).toBe(true)
    expect((await rowsOf(documents)).some((d) => d.kind === 'vet_report' && d.contact_id)).toBe(true)
  })

  test('invoices add up, in cents, and every sold animal is on one', async () => {
    const invoiceRows = await rowsOf(invoices)
    const sold = new Set<string>()
    for (const inv of invoiceRows) {
      expect(inv.total).toBe(inv.subtotal + inv.tax)
      expect(inv.subtotal).toBe(inv.line_items.reduce((sum: number, l: any) => sum + l.amount, 0))
      for (const line of inv.line_items) {
        expect(Number.isInteger(line.amount)).toBe(true)
        expect(line.amount).toBe(line.quantity * line.unit_amount)
        if (line.animal_id && inv.status !== 'void') sold.add(line.animal_id)
      }
      expect(inv.paid_at === null).toBe(inv.status !== 'paid')
    }
    const soldAnimals = (await rowsOf(animals)).filter((a) => a.status === 'sold')
    expect(soldAnimals.length).toBeGreaterThan(5)
    for (const a of soldAnimals) expect(sold.has(a.id)).toBe(true)
    expect(new Set(invoiceRows.map((i) => i.number)).size).toBe(invoiceRows.length)
  })

  test('the API lists it: GET /animals pages through all of them with no duplicates, and every area has data', async () => {
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res = await env.request('GET', `/api/v1/animals?limit=50${cursor ? `&cursor=${cursor}` : ''}`, { token: demo.token })
      expect(res.status).toBe(200)
      const page = await res.json()
      seen.push(...page.data.map((a: { id: string }) => a.id))
      cursor = page.next_cursor
      pages++
    } while (cursor)
    expect(pages).toBe(Math.ceil(counts.animals / 50))
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.sort()).toEqual((await rowsOf(animals)).map((a) => a.id).sort())
    for (const path of ['/activities', '/environment/environments', '/contacts', '/sales/invoices', '/breeding/clutches', '/breeding/records', '/medical/conditions', '/documents', '/animal-types']) {
      const res = await env.request('GET', `/api/v1${path}?limit=5`, { token: demo.token })
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
      expect((await res.json()).data.length).toBeGreaterThan(0)
    }
  })

  test('every list it fills reads newest first by its documented time, page after page: created_at (ids are made for it), activities by occurred_at', async () => {
    // Activities are ordered by when they happened; an entry logged late is still placed by occurred_at.
    const lists: Record<string, string> = {
      '/animals': 'created_at', '/activities': 'occurred_at', '/environment/environments': 'created_at', '/contacts': 'created_at',
      '/sales/invoices': 'created_at', '/breeding/clutches': 'created_at', '/breeding/records': 'created_at', '/medical/conditions': 'created_at', '/documents': 'created_at',
    }
    for (const [path, key] of Object.entries(lists)) {
      const times: number[] = []
      let cursor: string | null = null
      do {
        const res = await env.request('GET', `/api/v1${path}?limit=200${cursor ? `&cursor=${cursor}` : ''}`, { token: demo.token })
        expect({ path, status: res.status }).toEqual({ path, status: 200 })
        const page = await res.json()
        times.push(...page.data.map((row: Record<string, string>) => Date.parse(row[key]!)))
        cursor = page.next_cursor
      } while (cursor)
      expect(times.length).toBeGreaterThan(1)
      const outOfOrder = times.findIndex((time, i) => i > 0 && time > times[i - 1]!)
      expect({ path, outOfOrder }).toEqual({ path, outOfOrder: -1 })
    }
  })
})

describe('determinism', () => {
  /** What an account holds, without its ids: animals by reference id, with parents and activities named the same way. */
  async function content(accountId: string) {
    const animalRows = await rowsOf(animals, accountId)
    const refOf = new Map(animalRows.map((a) => [a.id, a.reference_id]))
    const log = new Map<string, string[]>()
    for (const r of await rowsOf(activities, accountId)) {
      log.set(refOf.get(r.animal_id)!, [...(log.get(refOf.get(r.animal_id)!) ?? []), `${r.occurred_at} ${r.type} ${JSON.stringify({ ...r.details, condition_id: undefined })}`])
    }
    return {
      animals: animalRows.map(({ id, account_id, environment_id, dam_id, sire_id, created_at, updated_at, ...a }) => ({
        ...a, dam: refOf.get(dam_id) ?? null, sire: refOf.get(sire_id) ?? null, housed: environment_id !== null, log: log.get(a.reference_id)!.sort(),
      })).sort((x, y) => x.reference_id.localeCompare(y.reference_id)),
      invoices: (await rowsOf(invoices, accountId)).map((i) => [i.number, i.status, i.issued_on, i.total, i.line_items.map((l: any) => [l.description, l.amount])]).sort(),
      environments: (await rowsOf(environments, accountId)).map((e) => `${e.kind} ${e.name}`).sort(),
    }
  }

  test('the same seed gives the same collection; another seed another', async () => {
    const now = new Date('2026-03-15T12:00:00.000Z')
    const [a, b, c] = [await env.account(), await env.account(), await env.account()]
    await fillDemoAccount(env.deps, a.accountId, { seed: 42, animals: 40, now })
    await fillDemoAccount(env.deps, b.accountId, { seed: 42, animals: 40, now })
    await fillDemoAccount(env.deps, c.accountId, { seed: 43, animals: 40, now })
    const first = await content(a.accountId)
    expect(first.animals).toHaveLength(40)
    expect(await content(b.accountId)).toEqual(first)
    expect(await content(c.accountId)).not.toEqual(first)
    // The generator alone is deterministic too (ids aside, which are fresh so two fills never clash).
    const strip = (data: ReturnType<typeof generateDemoData>) => data.animals.map(({ name, reference_id, weight_grams }) => [name, reference_id, weight_grams])
    expect(strip(generateDemoData({ seed: 5, animals: 30, now }))).toEqual(strip(generateDemoData({ seed: 5, animals: 30, now })))
  })

  test('a filled account is not filled again; small collections still have every kind of record', async () => {
    await expect(fillDemoAccount(env.deps, demo.accountId)).rejects.toThrow('already has animals')
    const small = await env.account()
    const made = await fillDemoAccount(env.deps, small.accountId, { animals: 12, seed: 3 })
    expect(made.animals).toBe(12)
    for (const area of ['environments', 'contacts', 'activities'] as const) expect(made[area]).toBeGreaterThan(0)
  })
})
