// Issue 15, the API side a person meets: errors that teach (allowed values, the exact field, one error per
// problem, a `type` that resolves to the service's own page), the species_id filter, and the smaller fixes
// (RateLimit headers on a body-key ping, a personal token on the readings route).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ERRORS } from '../../src/http/errors.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env.close() })

type Key = Awaited<ReturnType<TestEnv['account']>>
const animalsKey = () => env.account({ scopes: ['animals:read', 'animals:write'] })
const errorsOf = (body: Record<string, any>) => body.errors as { path: string; message: string }[]

describe('field errors', () => {
  test('an enumeration names its allowed values, in the query and in the body', async () => {
    const key = await animalsKey()
    const query = await problem(await env.request('GET', '/api/v1/animals?sex=robot', { token: key.token }), 400, 'invalid_parameter')
    expect(errorsOf(query)).toEqual([{ path: '/query/sex', message: 'must be one of: male, female, unknown' }])
    const body = await problem(await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: 'Ada', species_id: 'python-regius', status: 'asleep' } }), 422, 'validation_failed')
    expect(errorsOf(body)).toEqual([{ path: '/body/status', message: 'must be one of: active, sold, deceased, on_loan' }])
  })

  test('every error points at its field: a query integer out of bounds or not a number is /query/limit', async () => {
    const key = await animalsKey()
    for (const limit of ['0', '201', 'abc', '1.5']) {
      const body = await problem(await env.request('GET', `/api/v1/animals?status=active&limit=${limit}`, { token: key.token }), 400, 'invalid_parameter')
      expect({ limit, errors: errorsOf(body) }).toEqual({ limit, errors: [{ path: '/query/limit', message: 'must be an integer from 1 to 200' }] })
    }
  })

  test('one error per problem: a missing field is reported once, as missing', async () => {
    const key = await animalsKey()
    const body = await problem(await env.request('POST', '/api/v1/animals', { token: key.token, body: { species_id: 'python-regius' } }), 422, 'validation_failed')
    expect(errorsOf(body)).toEqual([{ path: '/body/name', message: 'is required; must be a string of 1 to 100 characters' }])
    const many = await problem(await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: 7, sex: 'robot', surname: 'x', tags: [''], birth_date: 'May' } }), 422, 'validation_failed')
    const paths = errorsOf(many).map((e) => e.path)
    expect(new Set(paths).size).toBe(paths.length)
    expect(paths.sort()).toEqual(['/body/birth_date', '/body/name', '/body/sex', '/body/species_id', '/body/surname', '/body/tags/0'])
    expect(errorsOf(many).find((e) => e.path === '/body/surname')!.message).toBe('is not a field of this request')
    expect(errorsOf(many).find((e) => e.path === '/body/birth_date')!.message).toBe('must be a calendar date (YYYY-MM-DD) from 0001-01-01 to 9999-12-31 or null')
  })

  test('text Postgres cannot store in a query parameter is a 400 at that parameter, not a 500', async () => {
    const key = await animalsKey()
    const body = await problem(await env.request('GET', '/api/v1/animals?environment_id=%00', { token: key.token }), 400, 'invalid_parameter')
    expect(errorsOf(body).map((e) => e.path)).toEqual(['/query/environment_id'])
  })
})

describe('problem types resolve to the service\'s own pages', () => {
  test('`type` is GET /api/v1/errors/{code} on this server, which explains the code as JSON and as HTML', async () => {
    const body = await problem(await env.request('GET', '/api/v1/animals'), 401, 'authentication_required')
    expect(body.type).toBe(`${env.baseUrl}/api/v1/errors/authentication_required`)
    const json = await fetch(body.type)
    expect(json.status).toBe(200)
    expect(await json.json()).toEqual({ code: 'authentication_required', status: 401, title: 'Authentication required', description: expect.stringContaining('X-API-Key') })
    const html = await fetch(body.type, { headers: { accept: 'text/html,application/xhtml+xml' } })
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const page = await html.text()
    expect(page).toContain('<h1>Authentication required</h1>')
    expect(page).not.toMatch(/https?:\/\//)
  })

  test('every code has a page; an unknown code is a 404 problem', async () => {
    for (const [code, { status, title }] of Object.entries(ERRORS)) {
      const res = await fetch(`${env.baseUrl}/api/v1/errors/${code}`)
      expect({ code, status: res.status }).toEqual({ code, status: 200 })
      expect(await res.json()).toMatchObject({ code, status, title })
    }
    await problem(await fetch(`${env.baseUrl}/api/v1/errors/no_such_code`), 404, 'not_found')
  })

  test('the error pages are in the OpenAPI document, public', async () => {
    const doc = await (await fetch(`${env.baseUrl}/api/v1/openapi.json`)).json()
    const operation = doc.paths['/api/v1/errors/{code}'].get
    expect(operation.security).toEqual([])
    expect(operation.parameters[0].schema.enum).toEqual(Object.keys(ERRORS))
  })
})

describe('GET /animals filters on species_id', () => {
  test('species_id filters; species is a deprecated alias; both, differing, is a 400', async () => {
    const key = await animalsKey()
    const make = async (species_id: string) => (await (await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: species_id, species_id } })).json()).id
    const python = await make('python-regius')
    await make('pogona-vitticeps')
    const ids = async (query: string) => (await (await env.request('GET', `/api/v1/animals?${query}`, { token: key.token })).json()).data.map((a: { id: string }) => a.id)
    expect(await ids('species_id=python-regius')).toEqual([python])
    expect(await ids('species=python-regius')).toEqual([python])
    expect(await ids('species=python-regius&species_id=python-regius')).toEqual([python])
    const both = await problem(await env.request('GET', '/api/v1/animals?species=python-regius&species_id=pogona-vitticeps', { token: key.token }), 400, 'invalid_parameter')
    expect(errorsOf(both)[0]!.path).toBe('/query/species')
    const doc = await (await fetch(`${env.baseUrl}/api/v1/openapi.json`)).json()
    const parameters = doc.paths['/api/v1/animals'].get.parameters as { name: string; deprecated?: boolean }[]
    expect(parameters.find((p) => p.name === 'species_id')?.deprecated).toBeUndefined()
    expect(parameters.find((p) => p.name === 'species')?.deprecated).toBe(true)
  })
})

describe('sensors', () => {
  async function device(): Promise<{ owner: Key; key: string }> {
    const owner = await env.account({ scopes: ['sensors:read', 'sensors:write'] })
    const res = await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub', channels: [{ key: 't1', metric: 'temperature' }] } })
    return { owner, key: (await res.json()).key }
  }

  test('POST /sensors/ping with the key in the body sends the RateLimit headers, like the other ways', async () => {
    const { key } = await device()
    const form = await fetch(`${env.baseUrl}/api/v1/sensors/ping`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `key=${key}&t1=20.5` })
    expect(form.status).toBe(204)
    const json = await fetch(`${env.baseUrl}/api/v1/sensors/ping`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key, t1: 21 }) })
    expect(json.status).toBe(204)
    const query = await fetch(`${env.baseUrl}/api/v1/sensors/ping?key=${key}&t1=22`)
    expect(query.status).toBe(204)
    for (const res of [form, json, query]) {
      for (const name of ['ratelimit', 'ratelimit-policy', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) expect({ name, value: res.headers.get(name) }).toEqual({ name, value: expect.any(String) })
    }
    // Each counted once, in order.
    const remaining = [form, json, query].map((res) => Number(res.headers.get('x-ratelimit-remaining')))
    expect(remaining).toEqual([remaining[0]!, remaining[0]! - 1, remaining[0]! - 2])
  })

  test('a personal token on POST /sensors/readings is told a device key is needed', async () => {
    const { owner } = await device()
    const body = await problem(await env.request('POST', '/api/v1/sensors/readings', { token: owner.token, body: { readings: [{ channel: 't1', value: 1 }] } }), 403, 'insufficient_scope')
    expect(body.required_key).toBe('device')
    expect(body.required_scopes).toEqual([])
    expect(body.detail).toContain('device key')
    expect(body.detail).toContain('POST /sensors/claim/start')
  })
})
