// Hot routes (issue 33): the device ingest endpoints answered by Bun.serve's own router, without Elysia's composed
// handler, whose per-request work (a context object, headers copied to an object, cookies and query parsed for
// every route, a setImmediate for the after-response hook, the answer copied once more) cost the ingest path
// about as much as its own work.
//
// Each hot route is still declared as an Elysia route: its op() feeds the OpenAPI document and the RouteTable the
// pipeline reads, its schemas are the ones checked here (read from that route), and Elysia still answers it through
// app.handle(). The hot handler runs the app's own steps, in the order Elysia's composed handler runs them:
//   onRequest (the pipeline) → parse (the body) → transform (the query's text) → query, then body schema →
//   handler → response schema → afterHandle (declared headers) → mapResponse (the JSON, compressed past its threshold)
//   → onError (the problem) → afterResponse (log, metrics)
// through the same functions the app's hooks call, so both paths give the same answers (test/http/hot-path.test.ts).
import { OptionalKind, type TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { ParseError, ValidationError } from 'elysia'
import { parseQueryFromURL } from 'elysia/parse-query'
import { isNotEmpty } from 'elysia/utils'
import { jsonResponse } from './compression.ts'
import { deliverDeclaredHeaders } from './declared-response.ts'
import { ROUTE_POLICY, type RoutePolicy } from './operation.ts'
import type { Pipeline } from './pipeline.ts'
import { parseRequestBody, refuseUnstorableQuery } from './request-body.ts'
import { requestState, type RequestState } from './request-state.ts'

export interface HotInput {
  request: Request
  state: RequestState
  /** The query as Elysia gives it (the last of repeated names wins); empty unless the route declares a query schema. */
  query: Record<string, string>
  /** The body, checked against the route's schema; undefined unless the route declares one. */
  body: any
}
/** A success: the status, and the JSON body (none for 204). */
export interface HotAnswer { status: number; body?: unknown }
export type HotHandler = (input: HotInput) => Promise<HotAnswer>
/** Handlers by path, then method: the shape of Bun.serve's `routes`. */
export type HotHandlers = Record<string, Partial<Record<'GET' | 'POST', HotHandler>>>
export type BunRoutes = Record<string, Record<string, (request: Request) => Promise<Response> | Response>>

/** What this file reads of an Elysia route (app.routes). */
export interface DeclaredRoute {
  method: string
  path: string
  hooks: { body?: TSchema; query?: TSchema; response?: Record<string, TSchema>; detail?: Record<string, unknown> }
}

export interface HotPathDeps {
  pipeline: Pipeline
  /** The app's routes; read on a hot route's first request, when every route is registered. */
  routes: () => readonly DeclaredRoute[]
  /** The app's onError: the problem answering `error` (`code`: Elysia's name for errors it makes itself). */
  errorResponse(code: string, error: unknown, request: Request): Response
  /** The app's onAfterResponse: the access log line and the request metrics. */
  record(method: string, route: string, status: number, state: RequestState): void
  /** Elysia, for a method the hot handler does not take: Bun hands HEAD to a GET route, and the app answers it as a GET. */
  fallback(request: Request): Response | Promise<Response>
}

/** Bun.serve routes answering `handlers`. */
export function hotRoutes(deps: HotPathDeps, handlers: HotHandlers): BunRoutes {
  const routes: BunRoutes = {}
  for (const [path, methods] of Object.entries(handlers)) {
    routes[path] = {}
    for (const [method, handler] of Object.entries(methods)) routes[path][method] = hotRoute(deps, method, path, handler!)
  }
  return routes
}

/** The route's schemas, compiled once. */
interface Checks {
  query?: TypeCheck<TSchema>
  body?: TypeCheck<TSchema>
  /** `body: t.Optional(…)`: Elysia then checks only a non-empty object, and hands the handler a copy ({} for none). */
  bodyOptional: boolean
  responses: Map<number, TypeCheck<TSchema>>
}

function checksOf(routes: readonly DeclaredRoute[], method: string, path: string): Checks {
  const route = routes.find((r) => r.method === method && r.path === path)
  if (!route) throw new Error(`hot route ${method} ${path} has no Elysia route declaring it`)
  const policy = route.hooks.detail?.[ROUTE_POLICY] as RoutePolicy | undefined
  // The app's afterHandle would answer a 304 for an ETag, and marks replays; a hot route delivers neither.
  if (!policy || policy.etag || policy.idempotent) throw new Error(`hot route ${method} ${path} must declare op() without etag or idempotent`)
  const { body, query, response = {} } = route.hooks
  return {
    query: query && TypeCompiler.Compile(query),
    body: body && TypeCompiler.Compile(body),
    bodyOptional: body !== undefined && (body as unknown as Record<symbol, unknown>)[OptionalKind] === 'Optional',
    responses: new Map(Object.entries(response).map(([status, schema]) => [Number(status), TypeCompiler.Compile(schema)])),
  }
}

const NO_QUERY: Record<string, string> = Object.freeze(Object.create(null))

function hotRoute(deps: HotPathDeps, method: string, path: string, handler: HotHandler) {
  let checks: Checks | undefined
  return async (request: Request): Promise<Response> => {
    if (request.method !== method) return deps.fallback(request)
    checks ??= checksOf(deps.routes(), method, path)
    const state = requestState(request)
    let response: Response
    try {
      // Awaited only when a check had to wait; a cached device key is admitted synchronously.
      const admitted = deps.pipeline.run(request)
      if (admitted) await admitted
      response = await answer(request, state, checks, handler)
    } catch (error) {
      response = deps.errorResponse((error as { code?: string } | undefined)?.code ?? 'UNKNOWN', error, request)
    }
    deps.record(method, path, response.status, state)
    return response
  }
}

async function answer(request: Request, state: RequestState, checks: Checks, handler: HotHandler): Promise<Response> {
  let body: unknown
  if (checks.body) {
    // Whatever the parser throws reaches onError as a ParseError's cause, as from Elysia's parse step.
    try {
      body = await parseRequestBody(request)
    } catch (error) {
      throw new ParseError(error as Error)
    }
  }
  refuseUnstorableQuery(request.url)
  let query = NO_QUERY
  if (checks.query) {
    // Where Elysia's context finds the query: the first '?' after the path's first '/' (past "http://x").
    const url = request.url
    const queryStart = url.indexOf('?', url.indexOf('/', 11) + 1)
    query = queryStart === -1 ? Object.create(null) : parseQueryFromURL(url, queryStart + 1)
    if (!checks.query.Check(query)) throw new ValidationError('query', checks.query, query, false)
  }
  if (checks.body) {
    if (checks.bodyOptional) {
      const present = !!body && typeof body === 'object' && (isNotEmpty(body) || body instanceof ArrayBuffer)
      body = Object.assign({}, body)
      if (present && !checks.body.Check(body)) throw new ValidationError('body', checks.body, body, false)
    } else if (!checks.body.Check(body)) {
      throw new ValidationError('body', checks.body, body, false)
    }
  }
  const answered = await handler({ request, state, query, body })
  const responseCheck = checks.responses.get(answered.status)
  if (responseCheck && !responseCheck.Check(answered.body)) throw new ValidationError('response', responseCheck, answered.body, false)
  // Throws if the handler broke the route's declaration (a versioned record, an idempotent answer), as in the app.
  const set = { status: answered.status, headers: state.headers }
  deliverDeclaredHeaders({ request, response: answered.body, set })
  // A JSON body leaves as the app's mapResponse hook sends it (compressed past its threshold, compression.ts).
  const json = answered.body === undefined ? undefined : jsonResponse(request, set, answered.body)
  return json ?? new Response('', { status: answered.status, headers: state.headers })
}
