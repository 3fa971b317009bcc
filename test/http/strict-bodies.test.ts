// Request bodies take plain JSON types (issue 24): a number string where a number is declared is a 422 naming the
// field, in every request body of the published document and in every activity type's `details`, and nothing is
// stored. (Query strings still read numbers from text: they have no other way to carry one.)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ALL_SCOPES } from '../../src/auth/scopes.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

type Schema = Record<string, any>

let env: TestEnv
let token: string
let doc: Schema
let animalId: string

beforeAll(async () => {
  env = await createTestEnv({ webhookAllowPrivate: true })
  token = (await env.account({ scopes: ALL_SCOPES })).token
  doc = await (await env.request('GET', '/api/v1/openapi.json')).json()
  animalId = (await (await env.request('POST', '/api/v1/animals', { token, body: { name: 'Strict', species_id: 'python-regius' } })).json()).id
})
afterAll(async () => { await env.close() })

function resolve(schema: Schema | undefined): Schema {
  let s = schema ?? {}
  for (let i = 0; s.$ref && i < 10; i++) s = s.$ref.split('/').slice(1).reduce((node: Schema, key: string) => node[key], doc)
  return s
}

/** Whether a field's schema declares a number (an integer or a number, possibly nullable) and nothing a string could be. */
function isNumeric(schema: Schema): boolean {
  const s = resolve(schema)
  if (s.type === 'integer' || s.type === 'number') return true
  const branches: Schema[] = (s.anyOf ?? s.oneOf ?? []).map(resolve)
  return branches.length > 0 && branches.some((b) => b.type === 'integer' || b.type === 'number') &&
    branches.every((b) => b.type === 'integer' || b.type === 'number' || b.type === 'null' || (b.type === 'string' && (b.format === 'integer' || b.format === 'numeric')))
}

/** A value the schema accepts, for the fields around the one under test (first enum value, minimums, …). */
function sample(schema: Schema): unknown {
  const s = resolve(schema)
  if (s.const !== undefined) return s.const
  if (Array.isArray(s.enum)) return s.enum[0]
  const branches: Schema[] = (s.anyOf ?? s.oneOf ?? []).map(resolve)
  if (branches.length) return sample(branches.find((b) => b.type !== 'null') ?? branches[0]!)
  switch (s.type) {
    case 'integer': return s.minimum ?? 1
    case 'number': return (s.minimum ?? s.exclusiveMinimum ?? 0) + 1
    case 'boolean': return true
    case 'array': return []
    case 'object': return Object.fromEntries((s.required ?? []).map((k: string) => [k, sample(s.properties?.[k])]))
    default: return Array.isArray(s.examples) ? s.examples[0] : 'x'
  }
}

/** The numeric fields of an object schema, as JSON Pointers below it (nested objects included). */
function numericFields(schema: Schema, at = ''): string[] {
  const s = resolve(schema)
  const found: string[] = []
  for (const [name, property] of Object.entries<Schema>(s.properties ?? {})) {
    if (isNumeric(property)) found.push(`${at}/${name}`)
    else if (resolve(property).type === 'object') found.push(...numericFields(property, `${at}/${name}`))
  }
  return found
}

/** The schema of the field at `pointer` below an object schema. */
const schemaAt = (schema: Schema, pointer: string): Schema => pointer.split('/').slice(1).reduce((s: Schema, key) => resolve(s).properties[key], schema)

function withValue(body: Record<string, unknown>, pointer: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(body)
  const keys = pointer.split('/').slice(1)
  let node: any = copy
  for (const key of keys.slice(0, -1)) node = node[key] ??= {}
  node[keys.at(-1)!] = value
  return copy
}

describe('number strings in request bodies', () => {
  test('every numeric field of every request body in the OpenAPI document refuses a number string with a 422 naming it', async () => {
    const checked: string[] = []
    for (const [path, methods] of Object.entries<Schema>(doc.paths)) {
      for (const [method, op] of Object.entries<Schema>(methods)) {
        const schema = op.requestBody?.content?.['application/json']?.schema
        if (!schema) continue
        const target = path.replace(/\{[^}]+\}/g, 'anm_01jd0000000000000000000000')
        const base = sample(schema) as Record<string, unknown>
        for (const field of numericFields(schema)) {
          const valid = sample(schemaAt(schema, field))
          const response = await env.request(method.toUpperCase(), target, { token, body: withValue(base, field, String(valid)), headers: { 'if-match': '"v1"' } })
          const body = await problem(response, 422, 'validation_failed')
          expect({ operation: `${method} ${path}`, field, paths: body.errors.map((e: { path: string }) => e.path) })
            .toEqual({ operation: `${method} ${path}`, field, paths: expect.arrayContaining([`/body${field}`]) })
          checked.push(`${method} ${path} ${field}`)
        }
      }
    }
    // The alert rules' limits, hysteresis and durations, on create and update.
    expect(checked.length).toBeGreaterThanOrEqual(10)
  })

  test('every numeric field of every activity type\'s details refuses a number string; the published schemas are plain JSON Schema', async () => {
    const types = (await (await env.request('GET', '/api/v1/activity-types', { token })).json()).data as { id: string; details_schema: Schema }[]
    expect(JSON.stringify(types)).not.toMatch(/"format":"(integer|numeric)"/)
    let checked = 0
    for (const type of types) {
      const details = sample(type.details_schema) as Record<string, unknown>
      for (const field of numericFields(type.details_schema)) {
        const valid = sample(schemaAt(type.details_schema, field))
        const response = await env.request('POST', '/api/v1/activities', { token, body: { animal_id: animalId, type: type.id, details: withValue(details, field, String(valid)) } })
        const body = await problem(response, 422, 'validation_failed')
        expect({ type: type.id, field, errors: body.errors }).toEqual({ type: type.id, field, errors: [{ path: `/body/details${field}`, message: expect.stringMatching(/^must be (an integer|a number)/) }] })
        checked++
      }
    }
    // feeding.count, handling.minutes, length.millimetres, medication.dose, weight.grams at least.
    expect(checked).toBeGreaterThanOrEqual(5)
    const stored = await (await env.request('GET', `/api/v1/activities?animal_id=${animalId}`, { token })).json()
    expect(stored.data).toEqual([])
  })

  test('errors inside details teach: allowed values and the exact pointer, not validator internals', async () => {
    const refused = await problem(await env.request('POST', '/api/v1/activities', {
      token, body: { animal_id: animalId, type: 'handling', details: { minutes: -5, temperament: 'grumpy', mood: 'x' } },
    }), 422, 'validation_failed')
    expect(refused.errors).toEqual(expect.arrayContaining([
      { path: '/body/details/minutes', message: 'must be an integer from 0 to 1440' },
      { path: '/body/details/temperament', message: 'must be one of: calm, nervous, defensive, aggressive' },
      { path: '/body/details/mood', message: 'is not a field of this request' },
    ]))
    expect(JSON.stringify(refused.errors)).not.toMatch(/Expected|Unexpected/)
  })
})
