import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import { ALL_SCOPES } from '../../src/auth/scopes.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

let env: TestEnv
let doc: any
let text: string
beforeAll(async () => {
  env = await createTestEnv()
  const res = await env.request('GET', '/api/v1/openapi.json')
  expect(res.status).toBe(200)
  text = await res.text()
  doc = JSON.parse(text)
})
afterAll(async () => { await env.close() })

const operations = () => Object.entries(doc.paths as Record<string, Record<string, any>>)
  .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method: method.toUpperCase(), op })))
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, 'x_00000000000000000000000000')

describe('OpenAPI document', () => {
  test('is OpenAPI 3.1 and passes the Redocly linter with no problems', async () => {
    expect(doc.openapi).toBe('3.1.0')
    const config = await createConfig({
      extends: ['recommended'],
      // Public platform endpoints (status, health, this document) have no client error to describe.
      // Every example must validate against its schema (the docs page shows them; a client may copy them).
      rules: { 'operation-4xx-response': 'off', 'no-invalid-schema-examples': 'error', 'no-invalid-media-type-examples': 'error', 'no-invalid-parameter-examples': 'error' },
    })
    const problems = await lintFromString({ source: text, absoluteRef: 'openapi.json', config })
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`)).toEqual([])
  })

  test('every string with a pattern has an example, so the docs page never makes one up from the pattern', () => {
    // Swagger UI samples a patterned string by generating a match: 6896-55-76T36:74:17Z for an instant.
    const missing: string[] = []
    const walk = (node: unknown, at: string) => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}/${i}`))
      if (!node || typeof node !== 'object') return
      const s = node as Record<string, any>
      if (s.type === 'string' && typeof s.pattern === 'string' && !(Array.isArray(s.examples) && s.examples.length) && s.example === undefined) missing.push(at)
      for (const [key, value] of Object.entries(s)) walk(value, `${at}/${key}`)
    }
    walk(doc, '')
    expect(missing).toEqual([])
  })

  test('lists exactly the routes the server serves', async () => {
    const documented = operations().map((o) => `${o.method} ${o.path}`).sort()
    const routes = env.app.routes as { method: string; path: string; hooks?: { detail?: { hide?: boolean } } }[]
    const served = routes.filter((r) => !r.hooks?.detail?.hide)
      .map((r) => `${r.method} ${r.path.replace(/:([^/]+)/g, '{$1}')}`).sort()
    expect(documented).toEqual(served)
    // Left out on purpose, and only these: the web console (outside /api/v1) and the docs page's own files.
    const hidden = routes.filter((r) => r.hooks?.detail?.hide).map((r) => r.path)
    expect(hidden.length).toBeGreaterThan(0)
    expect(hidden.filter((path) => !path.startsWith('/console') && path !== '/api/v1/docs/assets/:file')).toEqual([])
    // And every documented operation is answered by a route, not by the 404/405 fallback.
    const { token } = await env.account({ scopes: [...ALL_SCOPES] })
    for (const { method, path } of operations()) {
      const res = await env.request(method, concrete(path), { token, body: method === 'GET' ? undefined : {} })
      const body = res.headers.get('content-type')?.includes('problem') ? await res.json() : {}
      expect({ op: `${method} ${path}`, code: body.code === 'method_not_allowed' || (body.code === 'not_found' && String(body.detail).startsWith('No route')) ? body.code : 'served' })
        .toEqual({ op: `${method} ${path}`, code: 'served' })
    }
  })

  test('every operation states its security, and authenticated ones their errors and rate-limit headers', () => {
    for (const { path, method, op } of operations()) {
      expect(Array.isArray(op.security)).toBe(true)
      expect(op.responses['500']).toBeDefined()
      if (op.security.length > 0) {
        for (const status of ['401', '403', '429']) expect({ op: `${method} ${path}`, status, ok: Boolean(op.responses[status]) }).toEqual({ op: `${method} ${path}`, status, ok: true })
        const success = Object.entries(op.responses).find(([s]) => s.startsWith('2'))![1] as any
        expect(Object.keys(success.headers)).toContain('RateLimit')
      }
      if (op.requestBody) for (const status of ['400', '413', '415', '422']) expect(op.responses[status]).toBeDefined()
    }
  })

  test('every operation has a readable operationId: unique, camelCase, verb first, and stable for the reference\'s operations', () => {
    const ids = operations().map(({ op }) => op.operationId as string)
    expect(ids.filter((id) => !/^[a-z]+[A-Z][A-Za-z0-9]*$/.test(id ?? ''))).toEqual([])
    expect(ids.length - new Set(ids).size).toBe(0)
    const byRoute = Object.fromEntries(operations().map(({ method, path, op }) => [`${method} ${path}`, op.operationId]))
    // Generated clients name their methods after these: renaming one breaks every integrator's code.
    expect(byRoute).toMatchObject({
      'GET /api/v1/me': 'getMe', 'GET /api/v1/animals': 'listAnimals', 'POST /api/v1/animals': 'createAnimal',
      'GET /api/v1/animals/{id}': 'getAnimal', 'PATCH /api/v1/animals/{id}': 'updateAnimal', 'DELETE /api/v1/animals/{id}': 'deleteAnimal',
      'GET /api/v1/animal-types': 'listAnimalTypes', 'GET /api/v1/activity-types': 'listActivityTypes', 'GET /api/v1/species': 'listSpecies',
      'GET /api/v1/activities': 'listActivities', 'POST /api/v1/activities': 'createActivity',
      'GET /api/v1/breeding/records': 'listBreedingRecords', 'GET /api/v1/breeding/clutches': 'listClutches', 'GET /api/v1/medical/conditions': 'listConditions',
      'GET /api/v1/contacts': 'listContacts', 'GET /api/v1/sales/invoices': 'listInvoices', 'GET /api/v1/documents': 'listDocuments',
      'GET /api/v1/environment/environments': 'listEnvironments', 'GET /api/v1/environment/metrics': 'listMetrics', 'GET /api/v1/environment/readings': 'queryReadings',
      'GET /api/v1/sensors/devices': 'listDevices', 'POST /api/v1/sensors/devices': 'createDevice', 'GET /api/v1/sensors/devices/{id}': 'getDevice',
      'PATCH /api/v1/sensors/devices/{id}': 'updateDevice', 'DELETE /api/v1/sensors/devices/{id}': 'deleteDevice',
      'POST /api/v1/sensors/readings': 'submitReadings', 'GET /api/v1/sensors/ping': 'submitPing', 'POST /api/v1/sensors/ping': 'submitPingForm',
      'POST /api/v1/sensors/claim/start': 'startDeviceClaim', 'GET /api/v1/sensors/claim/status': 'getDeviceClaim',
      'GET /api/v1/webhooks/endpoints': 'listWebhookEndpoints', 'POST /api/v1/webhooks/endpoints': 'createWebhookEndpoint',
      'GET /api/v1/webhooks/endpoints/{id}': 'getWebhookEndpoint', 'PATCH /api/v1/webhooks/endpoints/{id}': 'updateWebhookEndpoint',
      'DELETE /api/v1/webhooks/endpoints/{id}': 'deleteWebhookEndpoint', 'POST /api/v1/webhooks/endpoints/{id}/test': 'testWebhookEndpoint',
      'GET /api/v1/status': 'getStatus', 'GET /api/v1/openapi.json': 'getOpenApiDocument',
    })
  })

  test('every request body is described by its schema, for each media type the route accepts', () => {
    const bodies = operations().filter(({ op }) => op.requestBody)
    expect(bodies.length).toBeGreaterThan(0)
    for (const { method, path, op } of bodies) {
      const content = Object.entries(op.requestBody.content as Record<string, { schema?: { $ref?: string; properties?: object } }>)
      expect({ op: `${method} ${path}`, types: content.length > 0 }).toEqual({ op: `${method} ${path}`, types: true })
      for (const [, media] of content) {
        const schema = media.schema?.$ref ? doc.components.schemas[media.schema.$ref.split('/').pop()!] : media.schema
        expect({ op: `${method} ${path}`, described: Object.keys(schema?.properties ?? {}).length > 0 }).toEqual({ op: `${method} ${path}`, described: true })
      }
    }
    expect(doc.paths['/api/v1/animals/{id}'].patch.requestBody.content['application/merge-patch+json'].schema).toEqual({ $ref: '#/components/schemas/AnimalPatch' })
  })

  test('the docs page is served and points at this document', async () => {
    const res = await env.request('GET', '/api/v1/docs')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/html')
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'")
    const page = await res.text()
    // Everything it loads is served here: no absolute URL at all, so it renders without internet.
    expect(page).not.toMatch(/(https?:)?\/\/[a-z]/i)
    const loads = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
    expect(loads.length).toBe(5) // icon, stylesheet, the document (preloaded), bundle, init
    for (const path of loads) expect({ path, status: (await env.request('GET', path)).status }).toEqual({ path, status: 200 })
    expect(await (await env.request('GET', '/api/v1/docs/assets/init.js')).text()).toContain('"/api/v1/openapi.json"')
    await problem(await env.request('GET', '/api/v1/docs/assets/package.json'), 404, 'not_found')
  })
})

describe('every route enforces what the document says', () => {
  test('authenticated routes refuse no key, a bad key, and a key without their scopes', async () => {
    const noScopes = await env.account({ scopes: [] })
    let checked = 0
    for (const { path, method, op } of operations()) {
      if (op.security.length === 0) continue
      const url = concrete(path)
      const body = method === 'GET' ? undefined : {}
      if (!path.startsWith('/api/v1')) {
        // InfluxDB's write endpoints (ingest/influx/routes.ts) answer in InfluxDB's JSON shapes, problem members beside.
        for (const token of [undefined, 'hrs_pat_000000000000000000000000000000000000']) {
          const res = await env.request(method, url, { body, token })
          expect({ url, status: res.status, body: (await res.json()).status }).toEqual({ url, status: 401, body: 401 })
        }
        continue
      }
      await problem(await env.request(method, url, { body }), 401, 'authentication_required')
      await problem(await env.request(method, url, { body, token: 'hrs_pat_000000000000000000000000000000000000' }), 401, 'invalid_token')
      const scopes: string[] = op.security.find((r: Record<string, string[]>) => r.personalToken)?.personalToken ?? []
      if (scopes.length) {
        const refused = await problem(await env.request(method, url, { body, token: noScopes.token }), 403, 'insufficient_scope')
        expect(refused.required_scopes).toEqual(scopes)
        checked++
      }
    }
    expect(checked).toBeGreaterThan(0)
  })
})
