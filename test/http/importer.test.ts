// The operator import: API-shaped rows (JSON or CSV) into one account, validated first, all or nothing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { and, count, eq } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import { activities, animals, contacts, environments, invoices, outboxEvents } from '../../db/schema/index.ts'
import { ALL_SCOPES } from '../../src/auth/scopes.ts'
import { newId } from '../../src/ids.ts'
import { ImportError, importRecords, parseImportFile } from '../../src/tools/importer.ts'
import { createTestEnv, type TestEnv } from '../helpers.ts'
import { runCli, tempDataDir } from '../process-helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env.close() })

const account = () => env.account({ scopes: ALL_SCOPES })

/** Every item of a list, following next_cursor. */
async function listAll(token: string, path: string): Promise<Record<string, any>[]> {
  const items: Record<string, any>[] = []
  let cursor: string | null = null
  do {
    const res = await env.request('GET', `/api/v1${path}${path.includes('?') ? '&' : '?'}limit=200${cursor ? `&cursor=${cursor}` : ''}`, { token })
    expect(res.status).toBe(200)
    const page = await res.json()
    items.push(...page.data)
    cursor = page.next_cursor
  } while (cursor)
  return items
}

type Counted = PgTable & { account_id: any }
const TABLES: Record<string, Counted> = { animals, activities, environments, contacts, invoices, outbox: outboxEvents } as any
/** Rows per table for one account, read from the database (deleted animals included). */
async function counts(accountId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const [name, table] of Object.entries(TABLES)) {
    const [row] = await env.deps.database.db.select({ n: count() }).from(table).where(eq(table.account_id, accountId))
    out[name] = row!.n
  }
  return out
}

/** Expects `actual` to hold every field of `expected` with an equal value. */
function expectFields(actual: Record<string, unknown> | undefined, expected: Record<string, unknown>) {
  expect(actual).toBeDefined()
  for (const [key, value] of Object.entries(expected)) expect({ [key]: actual![key] }).toEqual({ [key]: value })
}

async function importError(promise: Promise<unknown>): Promise<ImportError> {
  try { await promise } catch (error) { if (error instanceof ImportError) return error; throw error }
  throw new Error('the import was not refused')
}

describe('import', () => {
  test('JSON: rows referring to each other across areas round-trip through the API, with defaults for absent fields', async () => {
    const a = await account()
    const before = await counts(a.accountId)
    const room = newId('environment'), tub = newId('environment')
    const dam = newId('animal'), sire = newId('animal'), baby = newId('animal')
    const customer = newId('contact')
    const environmentRows = [
      // The tub comes first although it sits in the room: the importer inserts parents first.
      { id: tub, name: 'A01', kind: 'tub', parent_id: room, width_cm: 85, depth_cm: 45, height_cm: 15, substrate: 'aspen' },
      { id: room, name: 'Snake room', kind: 'room', location: 'Basement', created_at: '2024-01-02T03:04:05.000Z', updated_at: '2024-01-02T03:04:05.000Z' },
    ]
    const animalRows = [
      { id: baby, name: 'Pebble', species_id: 'python-regius', sex: 'unknown', morph: 'Pastel', traits: ['pastel', 'het clown'], birth_date: '2025-07-01', dam_id: dam, sire_id: sire, environment_id: tub, metadata: { clutch: 'BP25-01' } },
      { id: dam, name: 'Nova', reference_id: 'BP-001', species_id: 'python-regius', sex: 'female', status: 'active', birth_date: '2021-05-04', acquired_date: '2021-09-01', tags: ['breeder'], notes: 'Great mother.' },
      { id: sire, name: 'Zeus', species_id: 'python-regius', sex: 'male', status: 'on_loan' },
    ]
    const activityRows = [
      { animal_id: baby, type: 'weight', occurred_at: '2025-08-01T09:00:00.000Z', details: { grams: 98 } },
      { animal_id: baby, type: 'weight', occurred_at: '2025-09-01T09:00:00.000Z', details: { grams: 131 }, notes: 'Growing well.' },
      { animal_id: baby, type: 'feeding', occurred_at: '2025-08-05T19:00:00.000Z', details: { prey: 'rat', size: 'pup', count: 1, state: 'frozen_thawed', accepted: true } },
      { animal_id: dam, type: 'shed', occurred_at: '2025-08-10T07:30:00.000Z', details: { complete: true, quality: 'good' } },
    ]
    const contactRows = [{ id: customer, name: 'Anna Weber', kind: 'customer', email: 'anna.weber@example.com', country: 'DE', tags: ['repeat buyer'] }]
    const invoiceRows = [{
      number: 'INV-2025-0001', contact_id: customer, status: 'paid', currency: 'EUR', issued_on: '2025-09-10', paid_at: '2025-09-12T18:00:00.000Z',
      line_items: [{ description: 'Ball python, Pastel', quantity: 1, unit_amount: 15000, amount: 15000, animal_id: baby }], subtotal: 15000, tax: 2850, total: 17850,
    }]
    const json = (rows: unknown[], area: string) => parseImportFile(JSON.stringify(rows), 'json', area)
    expect(await importRecords(env.deps, a.accountId, 'environments', json(environmentRows, 'environments'))).toEqual({ imported: 2 })
    expect(await importRecords(env.deps, a.accountId, 'animals', json(animalRows, 'animals'))).toEqual({ imported: 3 })
    // A list page (`{ data: [...] }`) is accepted as well as a bare array.
    expect(await importRecords(env.deps, a.accountId, 'activities', parseImportFile(JSON.stringify({ data: activityRows }), 'json', 'activities'))).toEqual({ imported: 4 })
    expect(await importRecords(env.deps, a.accountId, 'contacts', json(contactRows, 'contacts'))).toEqual({ imported: 1 })
    expect(await importRecords(env.deps, a.accountId, 'invoices', json(invoiceRows, 'invoices'))).toEqual({ imported: 1 })

    const envs = await listAll(a.token, '/environment/environments')
    expectFields(envs.find((e) => e.id === tub), { ...environmentRows[0], location: null, notes: null })
    expectFields(envs.find((e) => e.id === room), { ...environmentRows[1], parent_id: null, width_cm: null })
    const listed = await listAll(a.token, '/animals')
    expect(listed).toHaveLength(3)
    // The newest weighing became the animal's latest weight, as POST /activities makes it.
    expectFields(listed.find((x) => x.id === baby), { ...animalRows[0], status: 'active', reference_id: null, tags: [], acquired_date: null, notes: null, weight_grams: 131, weighed_at: '2025-09-01T09:00:00.000Z' })
    expectFields(listed.find((x) => x.id === dam), { ...animalRows[1], traits: [], metadata: {}, morph: null, dam_id: null, environment_id: null, weight_grams: null })
    expectFields(listed.find((x) => x.id === sire), animalRows[2]!)
    const logged = await listAll(a.token, '/activities')
    expect(logged.map((x) => x.occurred_at)).toEqual(activityRows.map((x) => x.occurred_at).sort().reverse())
    for (const row of activityRows) expectFields(logged.find((x) => x.occurred_at === row.occurred_at), { notes: null, ...row })
    expect(logged.every((x) => x.id.startsWith('act_') && typeof x.created_at === 'string')).toBe(true)
    expectFields((await listAll(a.token, '/contacts'))[0], { ...contactRows[0], company: null, phone: null })
    expectFields((await listAll(a.token, '/sales/invoices'))[0], { ...invoiceRows[0], due_on: null, notes: null })

    // An operator bulk load is not an API change: no webhook events.
    const after = await counts(a.accountId)
    expect(after).toEqual({ ...before, environments: 2, animals: 3, activities: 4, contacts: 1, invoices: 1, outbox: before.outbox! })
  })

  test('CSV: quoting, empty cells, lists split on |, JSON cells and numbers and booleans by the schema', async () => {
    const a = await account()
    const animalId = newId('animal')
    const animalCsv = [
      '\uFEFFid,name,species_id,sex,traits,metadata,weight_grams,birth_date,notes',
      `${animalId},"Monty ""the"" Python",python-regius,male,pastel|het clown,"{""microchip"":""276098100123456""}",1520.5,2022-03-04,"Line one`,
      'line two, with a comma"',
      ',Slinky,pantherophis-guttatus,,,,,,',
      '',
    ].join('\r\n')
    expect(await importRecords(env.deps, a.accountId, 'animals', parseImportFile(animalCsv, 'csv', 'animals'))).toEqual({ imported: 2 })
    const activityCsv = [
      'animal_id,type,occurred_at,details,notes',
      `${animalId},feeding,2025-10-01T18:00:00+02:00,"{""prey"":""rat"",""count"":1,""accepted"":false}",Refused.`,
      `${animalId},weight,2025-10-02T08:00:00.000Z,"{""grams"":1490}",`,
    ].join('\n')
    expect(await importRecords(env.deps, a.accountId, 'activities', parseImportFile(activityCsv, 'csv', 'activities'))).toEqual({ imported: 2 })
    const contactCsv = 'name,kind,tags,country\nNordic Colubrids,breeder,breeder|expo,DK\n'
    expect(await importRecords(env.deps, a.accountId, 'contacts', parseImportFile(contactCsv, 'csv', 'contacts'))).toEqual({ imported: 1 })
    const clutchCsv = `species_id,status,laid_on,egg_count,incubation_temperature_c,dam_id\npython-regius,incubating,2026-01-10,6,31.5,\n`
    expect(await importRecords(env.deps, a.accountId, 'clutches', parseImportFile(clutchCsv, 'csv', 'clutches'))).toEqual({ imported: 1 })

    const listed = await listAll(a.token, '/animals')
    expectFields(listed.find((x) => x.id === animalId), {
      name: 'Monty "the" Python', species_id: 'python-regius', sex: 'male', traits: ['pastel', 'het clown'], metadata: { microchip: '276098100123456' },
      birth_date: '2022-03-04', notes: 'Line one\r\nline two, with a comma',
      // An imported weight without weighed_at gives way to an imported weighing, as to a posted one.
      weight_grams: 1490, weighed_at: '2025-10-02T08:00:00.000Z',
    })
    expectFields(listed.find((x) => x.name === 'Slinky'), { species_id: 'pantherophis-guttatus', sex: 'unknown', status: 'active', traits: [], metadata: {}, notes: null, weight_grams: null })
    const logged = await listAll(a.token, '/activities')
    expectFields(logged.find((x) => x.type === 'feeding'), { occurred_at: '2025-10-01T16:00:00.000Z', details: { prey: 'rat', count: 1, accepted: false }, notes: 'Refused.' })
    expectFields(logged.find((x) => x.type === 'weight'), { details: { grams: 1490 }, notes: null })
    expectFields((await listAll(a.token, '/contacts'))[0], { name: 'Nordic Colubrids', kind: 'breeder', tags: ['breeder', 'expo'], country: 'DK', email: null })
    expectFields((await listAll(a.token, '/breeding/clutches'))[0], { egg_count: 6, incubation_temperature_c: 31.5, dam_id: null, hatched_count: null, status: 'incubating' })
  })

  test('an invalid file reports every row and field, and writes nothing', async () => {
    const a = await account()
    const before = await counts(a.accountId)
    const rows = [
      { name: 'Valid', species_id: 'python-regius' },
      { name: 'Typo', species_id: 'python-regius', sexx: 'male' },
      { name: '', species_id: 'not-a-species', sex: 'boy', birth_date: '2024/01/02', traits: 'pastel' },
      { species_id: 'python-regius', id: 'act_01jd8x3m5v6w7y8z9a0b1c2d3e', weight_grams: 'heavy' },
      'not an object',
    ]
    const error = await importError(importRecords(env.deps, a.accountId, 'animals', rows))
    expect(error.message).toContain('nothing was written')
    const has = (prefix: string) => expect(error.errors.some((e) => e.startsWith(prefix))).toBe(true)
    has('row 2: /sexx ')
    has('row 3: /name ')
    has('row 3: /species_id is not a known species id')
    has('row 3: /sex must be one of male, female, unknown')
    has('row 3: /birth_date must be a date, YYYY-MM-DD')
    has('row 3: /traits ')
    has('row 4: /name ')
    has('row 4: /id must be an id of the form anm_')
    has('row 4: /weight_grams ')
    has('row 5: / must be an object')
    expect(error.errors.some((e) => e.startsWith('row 1:'))).toBe(false)

    const activityError = await importError(importRecords(env.deps, a.accountId, 'activities', [
      { animal_id: newId('animal'), type: 'weight', occurred_at: '2025-01-01T00:00:00.000Z', details: { kilos: 2 } },
      { animal_id: newId('animal'), type: 'juggling', occurred_at: '2025-01-01T00:00:00.000Z' },
      { animal_id: newId('animal'), type: 'note', occurred_at: '2999-01-01T00:00:00.000Z' },
    ]))
    expect(activityError.errors).toEqual([
      // The same rules and messages as POST /activities (records/rules.ts).
      'row 1: /details/grams is required; must be a number from 0 to 1000000', 'row 1: /details/kilos is not a field of this request',
      'row 2: /type is not an activity type (see GET /activity-types)', 'row 3: /occurred_at lies more than 5 minutes in the future',
    ])
    const [rack, room] = [newId('environment'), newId('environment')]
    const cycle = await importError(importRecords(env.deps, a.accountId, 'environments', [
      { id: rack, name: 'Rack', kind: 'rack', parent_id: room }, { id: room, name: 'Room', kind: 'room', parent_id: rack },
    ]))
    expect(cycle.errors).toEqual(['row 2: /parent_id closes a cycle of references (through row 1)'])
    const csvError = await importError(Promise.resolve().then(() => parseImportFile('name,species_id,metadata\nA,python-regius,{oops\nB\n', 'csv', 'animals')))
    expect(csvError.errors).toEqual(['row 1: /metadata is not valid JSON', 'row 2: / has 1 cells; the header has 3'])
    expect(await counts(a.accountId)).toEqual(before)
  })

  test("a row referring to another account's record fails the whole import, naming the constraint and the row", async () => {
    const a = await account(), b = await account()
    const theirs = newId('animal')
    await importRecords(env.deps, b.accountId, 'animals', [{ id: theirs, name: 'Not yours', species_id: 'python-regius' }])
    const mine = newId('animal')
    await importRecords(env.deps, a.accountId, 'animals', [{ id: mine, name: 'Mine', species_id: 'python-regius' }])
    const before = await counts(a.accountId)
    const rows = [
      { animal_id: mine, type: 'note', occurred_at: '2025-05-01T10:00:00.000Z', notes: 'fine' },
      { animal_id: theirs, type: 'weight', occurred_at: '2025-05-02T10:00:00.000Z', details: { grams: 10 } },
      { animal_id: mine, type: 'weight', occurred_at: '2025-05-03T10:00:00.000Z', details: { grams: 12 } },
    ]
    const error = await importError(importRecords(env.deps, a.accountId, 'activities', rows))
    expect(error.errors).toEqual([`row 2: /animal_id ${theirs} does not exist in this account's animals (constraint activities_animal_fk)`])
    // The same for a parent reference.
    const parentError = await importError(importRecords(env.deps, a.accountId, 'animals', [{ name: 'Kid', species_id: 'python-regius', dam_id: theirs }]))
    expect(parentError.errors[0]).toContain('row 1: /dam_id')
    expect(parentError.errors[0]).toContain('animals_dam_fk')
    expect(await counts(a.accountId)).toEqual(before)
    const [mineNow] = await env.deps.database.db.select().from(animals).where(and(eq(animals.account_id, a.accountId), eq(animals.id, mine)))
    expect(mineNow!.weight_grams).toBeNull()
  })

  test("an API list's output imports again: a restore gives back the same items", async () => {
    const a = await account()
    const post = async (path: string, body: unknown) => {
      const res = await env.request('POST', `/api/v1${path}`, { token: a.token, body })
      expect(res.status).toBe(201)
      return res.json()
    }
    const dam = await post('/animals', { name: 'Nova', species_id: 'python-regius', sex: 'female', traits: ['pastel'], tags: ['breeder'], metadata: { chip: '1' } })
    const baby = await post('/animals', { name: 'Pip', species_id: 'python-regius', dam_id: dam.id, birth_date: '2025-06-01' })
    await post('/activities', { animal_id: baby.id, type: 'weight', occurred_at: '2025-07-01T08:00:00.000Z', details: { grams: 80 } })
    await post('/activities', { animal_id: baby.id, type: 'feeding', occurred_at: '2025-07-02T19:00:00.000Z', details: { prey: 'rat', count: 1, accepted: true } })
    const animalPage = await (await env.request('GET', '/api/v1/animals', { token: a.token })).json()
    const activityPage = await (await env.request('GET', '/api/v1/activities', { token: a.token })).json()
    expect(animalPage.data).toHaveLength(2)

    // Importing the same page again collides on the ids: refused, naming the row and the key.
    const clash = await importError(importRecords(env.deps, a.accountId, 'animals', parseImportFile(JSON.stringify(animalPage), 'json', 'animals')))
    expect(clash.errors[0]).toMatch(/^row \d: \/id anm_\w+ already exists \(constraint animals_\w+\)$/)

    // Restore: the records are lost, then the saved pages (newest first, so the child before its dam) come back.
    await env.deps.database.db.delete(activities).where(eq(activities.account_id, a.accountId))
    await env.deps.database.db.delete(animals).where(eq(animals.account_id, a.accountId))
    expect(await importRecords(env.deps, a.accountId, 'animals', parseImportFile(JSON.stringify(animalPage), 'json', 'animals'))).toEqual({ imported: 2 })
    expect(await importRecords(env.deps, a.accountId, 'activities', parseImportFile(JSON.stringify(activityPage.data), 'json', 'activities'))).toEqual({ imported: 2 })
    expect(await (await env.request('GET', '/api/v1/animals', { token: a.token })).json()).toEqual(animalPage)
    expect(await (await env.request('GET', '/api/v1/activities', { token: a.token })).json()).toEqual(activityPage)
  })

  test('rows without ids but with created_at list newest first by that time, whatever their order in the file', async () => {
    const a = await account()
    const rows = ['2023-05-01', '2025-02-01', '2024-07-01'].map((day, i) => ({ name: `backdated ${i}`, species_id: 'python-regius', created_at: `${day}T00:00:00.000Z`, updated_at: `${day}T00:00:00.000Z` }))
    expect(await importRecords(env.deps, a.accountId, 'animals', rows)).toEqual({ imported: 3 })
    expect((await listAll(a.token, '/animals')).map((x) => x.created_at)).toEqual(['2025-02-01T00:00:00.000Z', '2024-07-01T00:00:00.000Z', '2023-05-01T00:00:00.000Z'])
  })

  test('thousands of rows go in quickly, in chunks', async () => {
    const a = await account()
    const id = newId('animal')
    await importRecords(env.deps, a.accountId, 'animals', [{ id, name: 'Busy', species_id: 'pantherophis-guttatus' }])
    const start = Date.parse('2024-01-01T00:00:00.000Z')
    const rows = Array.from({ length: 3000 }, (_, i) => ({ animal_id: id, type: 'weight', occurred_at: new Date(start + i * 3_600_000).toISOString(), details: { grams: 100 + i } }))
    const began = performance.now()
    expect(await importRecords(env.deps, a.accountId, 'activities', rows)).toEqual({ imported: 3000 })
    expect(performance.now() - began).toBeLessThan(10_000)
    const [animal] = await env.deps.database.db.select().from(animals).where(eq(animals.id, id))
    expect(animal!.weight_grams).toBe(3099)
  })
})

describe('operator CLI', () => {
  test('import and demo: output, errors and exit codes', async () => {
    const dir = tempDataDir()
    const cliEnv = { DATA_DIR: join(dir, 'data') }
    const created = await runCli(['accounts', 'create', '--name', 'Importer'], cliEnv)
    expect(created.code).toBe(0)
    const accountId = /account (acct_\w+)/.exec(created.stdout)![1]!

    const room = newId('environment')
    writeFileSync(join(dir, 'environments.json'), JSON.stringify({ data: [{ id: room, name: 'Snake room', kind: 'room' }, { name: 'Rack A', kind: 'rack', parent_id: room }] }))
    const ok = await runCli(['import', accountId, 'environments', join(dir, 'environments.json')], cliEnv)
    expect(ok).toMatchObject({ code: 0, stdout: 'imported 2 environments\n' })

    writeFileSync(join(dir, 'animals.txt'), 'name,species_id,environment_id\nMonty,python-regius,' + room + '\nBad,unknown-species,\n')
    const invalid = await runCli(['import', accountId, 'animals', join(dir, 'animals.txt'), '--format', 'csv'], cliEnv)
    expect(invalid.code).toBe(1)
    expect(invalid.stderr).toContain('row 2: /species_id is not a known species id')
    expect(invalid.stderr).toContain('nothing was written')
    expect((await runCli(['import', accountId, 'animals', join(dir, 'animals.txt')], cliEnv)).stderr).toContain('--format json|csv')
    expect((await runCli(['import', accountId, 'pets', join(dir, 'animals.txt')], cliEnv)).code).toBe(2)

    const demo = await runCli(['demo', accountId, '--animals', '25', '--seed', '7'], cliEnv)
    expect(demo.code).toBe(0)
    expect(demo.stdout).toMatch(/animals\s+25\n/)
    expect(Number(/activities\s+(\d+)/.exec(demo.stdout)![1])).toBeGreaterThan(100)
    const again = await runCli(['demo', accountId], cliEnv)
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('already has animals')
  })
})
