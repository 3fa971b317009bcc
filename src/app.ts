// createApp(deps): the root Elysia app with the pipeline, the error vocabulary and every module. Never listens.
import { Elysia, t, type AnyElysia } from 'elysia'
import type { Deps } from './deps.ts'
import { ApiError, problemResponse } from './http/errors.ts'
import { fieldErrors } from './http/field-errors.ts'
import './http/formats.ts'
import { deliverDeclaredHeaders } from './http/declared-response.ts'
import { docsPage } from './http/docs-page.ts'
import { buildOpenApiDocument } from './http/openapi-document.ts'
import { isDatabaseUnavailable } from '../db/unavailable.ts'
import { op } from './http/operation.ts'
import { RUNTIME_BODY_LIMIT } from './http/checks/body-limits.ts'
import { parseRequestBody, refuseUnstorableQuery } from './http/request-body.ts'
import { hotRoutes, type BunRoutes, type DeclaredRoute } from './http/hot-path.ts'
import { API_PREFIX, createPipeline } from './http/pipeline.ts'
import { requestState, type RequestState } from './http/request-state.ts'
import { routeLabel } from './observability.ts'
import type { CounterSeries, HistogramSeries } from './metrics.ts'
import { ulid } from './ids.ts'
import { jsonResponse } from './http/compression.ts'
import { createCors } from './http/cors.ts'
import { pathOf } from './http/request-url.ts'
import { metricsModule } from './modules/platform/metrics.ts'
import { BackendHealth } from './modules/platform/backend-health.ts'
import { RouteTable } from './http/route-table.ts'
import { readingsRoutes } from '../ingest/query.ts'
import { ingestHotHandlers, ingestRoutes } from '../ingest/routes.ts'
import { influxBunRoutes, influxRoutes } from '../ingest/influx/routes.ts'
import { consoleModule } from './console/index.ts'
import { accountModule } from './modules/account/index.ts'
import { activitiesModule } from './modules/activities/index.ts'
import { alertsModule } from './modules/alerts/index.ts'
import { animalsModule } from './modules/animals/index.ts'
import { platformModule } from './modules/platform/index.ts'
import { webhooksModule } from './modules/webhooks/index.ts'
import { eventsModule } from './modules/events/index.ts'
import { streamRoutes } from './streams/routes.ts'
import { referenceModule } from './modules/reference/index.ts'
import { sensorsModule } from './modules/sensors/index.ts'
import { READ_ONLY_AREAS } from './records/all-areas.ts'
import { readOnlyRoutes } from './records/areas.ts'
import { testingModule } from './modules/testing/index.ts'

/** What a 503 for an unreachable database asks the client to wait: about how long a restart or failover takes. */
const DATABASE_RETRY_AFTER_SECONDS = 5

function toApiError(code: string | number, error: unknown, requestUrl: string): ApiError {
  if (error instanceof ApiError) return error
  // Elysia wraps what a parser throws (our 413 and 400 included) as the cause of its own ParseError.
  if ((error as Error | undefined)?.cause instanceof ApiError) return (error as Error).cause as ApiError
  switch (code) {
    case 'NOT_FOUND':
      return new ApiError('not_found', 'No such route.')
    case 'PARSE':
      return new ApiError('malformed_json', 'The body is not valid JSON.')
    case 'VALIDATION': {
      const e = error as any
      if (e?.type === 'body') return new ApiError('validation_failed', 'The body does not match the schema.', { errors: fieldErrors(e, '/body', requestUrl) })
      if (e?.type === 'params') return new ApiError('not_found', 'No such resource.')
      // Our answer failed its own schema: our fault, not the client's.
      if (e?.type === 'response') return new ApiError('internal_error', 'Something went wrong on our side; the request id helps us find it.')
      if (e?.type === 'headers') return new ApiError('invalid_parameter', 'A request header is invalid.', { errors: fieldErrors(e, '/header', requestUrl) })
      return new ApiError('invalid_parameter', 'A query parameter is invalid.', { errors: fieldErrors(e, '/query', requestUrl) })
    }
    default:
      if (isDatabaseUnavailable(error)) {
        return new ApiError('service_unavailable', 'The records database is not reachable right now; nothing was changed. Retry shortly.', { headers: { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) } })
      }
      return new ApiError('internal_error', 'Something went wrong on our side; the request id helps us find it.')
  }
}

/**
 * The access log line and the request metrics, once the response has gone out. Each (route, method, status) keeps
 * its counter and histogram series, found through Maps rather than a label key joined for every request (the ingest
 * hot path: the ping cost 0.58 µs less, bench/README.md).
 */
function requestRecorder(deps: Deps) {
  const byRoute = new Map<string, Map<string, { duration: HistogramSeries; byStatus: Map<number, CounterSeries> }>>()
  return (method: string, route: string, status: number, state: RequestState) => {
    const seconds = (performance.now() - state.startedAt) / 1000
    let byMethod = byRoute.get(route)
    if (!byMethod) byRoute.set(route, (byMethod = new Map()))
    let series = byMethod.get(method)
    if (!series) byMethod.set(method, (series = { duration: deps.metrics.httpDuration.series([method, route]), byStatus: new Map() }))
    let requests = series.byStatus.get(status)
    if (!requests) series.byStatus.set(status, (requests = deps.metrics.httpRequests.series([method, route, String(status)])))
    requests.inc()
    series.duration.observe(seconds)
    if (deps.log.enabled('info')) {
      // The key's id, never the key: the token itself (header, query or body) is never logged.
      deps.log.info('request', { request_id: state.requestId, method, route, status, duration_ms: Math.round(seconds * 10_000) / 10, key_id: state.principal?.keyId })
    }
  }
}

export function createApp(deps: Deps) {
  const recordRequest = requestRecorder(deps)
  let routeTable: RouteTable | undefined
  const cors = deps.config.corsOrigins ? createCors(deps.config.corsOrigins) : undefined
  const pipeline = createPipeline({
    config: deps.config, authenticator: deps.authenticator, rateLimiter: deps.rateLimiter, platform: deps.platform, cors,
    routes: () => routeTable!,
  })
  /** The problem answering `error` (Elysia's code for what it threw itself), with the request's headers. */
  const errorResponse = (code: string | number, error: unknown, request: Request): Response => {
    const apiError = toApiError(code, error, request.url)
    const state = requestState(request)
    state.errorStatus = apiError.status
    if (apiError.code === 'internal_error') deps.log.error('request failed', { request_id: state.requestId, error: String((error as Error)?.stack ?? error) })
    else if (apiError.code === 'service_unavailable' && !(error instanceof ApiError)) deps.log.warn('database unavailable', { request_id: state.requestId, error: String((error as Error)?.message ?? error) })
    return problemResponse(apiError, state.requestId, deps.config.publicUrl, state.headers)
  }
  const ingestOnBunRoutes: BunRoutes = hotRoutes({
    pipeline,
    routes: () => (app as AnyElysia).routes as unknown as DeclaredRoute[],
    errorResponse,
    record: recordRequest,
    fallback: (request): Response | Promise<Response> => (app as AnyElysia).fetch(request),
  }, ingestHotHandlers(deps, pipeline))
  // InfluxDB's write endpoints (/write, /api/v2/write) on Bun's router too: ingest/influx/routes.ts.
  const influxOnBunRoutes = influxBunRoutes(deps, { pipeline, record: recordRequest })
  const health = new BackendHealth({ ...deps, lagBoundMs: (deps.config.ingestLog?.lagBoundSeconds ?? 30) * 1000 })
  let openApiDocument: Record<string, unknown> | undefined
  // Built on first request, once every route is registered (the document describes the finished app).
  const publishedDocument = (): Record<string, unknown> => (openApiDocument ??= buildOpenApiDocument(app as AnyElysia))

  const app = new Elysia({
    normalize: false,
    // The last resort, for an error thrown where Elysia's onError cannot catch it: our problem+json, never the
    // runtime's HTML error page (which would also show a stack in development mode).
    serve: {
      // Every body reaches the checks, which answer 413 as problem+json (checks/body-limits.ts).
      maxRequestBodySize: RUNTIME_BODY_LIMIT,
      // The device ingest endpoints on Bun's router, before Elysia (http/hot-path.ts); Elysia's listen() puts these
      // over its own handlers for the same paths and methods. app.handle() still answers them through Elysia.
      routes: { ...ingestOnBunRoutes, ...influxOnBunRoutes },
      error(error: Error) {
        const requestId = `req_${ulid()}`
        deps.log.error('request failed outside the app', { request_id: requestId, error: String(error?.stack ?? error) })
        return problemResponse(new ApiError('internal_error', 'Something went wrong on our side; the request id helps us find it.'), requestId, deps.config.publicUrl, { 'x-request-id': requestId })
      },
    },
  })
    // Before the hooks below: these answer in InfluxDB's shapes and read their own bodies (ingest/influx/routes.ts).
    .use(influxRoutes(influxOnBunRoutes))
    .onRequest(({ request, set }): Response | Promise<Response | void> | void => {
      // HEAD is GET without the body (RFC 9110 §9.3.2): the same request is answered as a GET, through every check
      // (same status, ETag, RateLimit and Content-Type headers), and Bun sends that response's headers only.
      if (request.method === 'HEAD') {
        requestState(request).answeredAsGet = true
        const get = new Request(request, { method: 'GET' })
        requestState(get).method = 'HEAD'
        return (app as AnyElysia).handle(get)
      }
      // A browser's preflight carries no key: answered before the pipeline, for allowed origins only.
      if (cors && request.method === 'OPTIONS') {
        const answer = cors.preflight(request, pathOf(request.url), routeTable!)
        if (answer) return answer
      }
      // Awaited only when a check had to wait; the ingest path is admitted synchronously.
      const admitted = pipeline.run(request)
      if (admitted) return admitted.then(() => { Object.assign(set.headers, requestState(request).headers) })
      Object.assign(set.headers, requestState(request).headers)
    })
    .onTransform(({ request }) => refuseUnstorableQuery(request.url))
    .onParse(({ request }) => parseRequestBody(request))
    // ETag and Idempotent-Replayed, as each route's op() declares them (declared-response.ts); a 304 for a GET whose
    // If-None-Match names the current ETag, which does not count against the key's rate limit.
    .onAfterHandle((context) => {
      const notModified = deliverDeclaredHeaders(context)
      if (!notModified) return
      const { principal } = requestState(context.request)
      if (principal) deps.rateLimiter.refund(principal.keyId, principal.kind, deps.config.rateLimitWindowSeconds * 1000)
      return notModified
    })
    // JSON answers as Responses, gzipped where the client takes it (compression.ts says when and why).
    .mapResponse(({ request, set, responseValue }) => jsonResponse(request, set, responseValue))
    .onError(({ code, error, request }) => errorResponse(code, error, request))
    .onAfterResponse(({ request, route, set, responseValue }) => {
      const state = requestState(request)
      // A HEAD is logged once, by the GET that answered it (under its route, as HEAD).
      if (state.answeredAsGet) return
      const status = state.errorStatus ?? (responseValue instanceof Response ? responseValue.status : typeof set.status === 'number' ? set.status : 200)
      recordRequest(state.method ?? request.method, routeLabel(route), status, state)
    })
    .use(platformModule(deps, health))
    .use(metricsModule(deps, health))
    .use(accountModule(deps))
    .use(referenceModule(deps))
    .use(animalsModule(deps))
    .use(activitiesModule(deps))
    .use(readOnlyRoutes(deps, READ_ONLY_AREAS))
    .use(sensorsModule(deps))
    .use(ingestRoutes(deps, pipeline))
    .use(streamRoutes(deps))
    .use(readingsRoutes(deps))
    .use(alertsModule(deps))
    .use(webhooksModule(deps))
    .use(eventsModule(deps))
    .get(`${API_PREFIX}/openapi.json`, () => publishedDocument(), {
      response: { 200: t.Record(t.String(), t.Unknown(), { description: 'OpenAPI 3.1 document.' }) },
      detail: op({ operationId: 'getOpenApiDocument', summary: 'This OpenAPI 3.1 document', tags: ['Platform'], auth: 'public' }),
    })
    .use(docsPage())
    .use(consoleModule(deps))

  if (deps.config.testRoutes) app.use(testingModule())

  routeTable = new RouteTable(app.routes as any, API_PREFIX)
  return app
}

