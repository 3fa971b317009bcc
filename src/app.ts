// createApp(deps): the root Elysia app with the pipeline, the error vocabulary and every module. Never listens.
import { Elysia, t, type AnyElysia } from 'elysia'
import type { Deps } from './deps.ts'
import { errorResponse, recordRequest } from './http/answer.ts'
import './http/formats.ts'
import { buildOpenApiDocument } from './http/openapi-document.ts'
import { parseRequestBody } from './http/json-body.ts'
import { op } from './http/operation.ts'
import { API_PREFIX, createPipeline } from './http/pipeline.ts'
import { requestState } from './http/request-state.ts'
import { routeLabel } from './observability.ts'
import { metricsModule } from './modules/platform/metrics.ts'
import { RouteTable } from './http/route-table.ts'
import { readingsRoutes } from '../ingest/query.ts'
import { ingestFastRoutes, ingestRoutes } from '../ingest/routes.ts'
import { accountModule } from './modules/account/index.ts'
import { activitiesModule } from './modules/activities/index.ts'
import { alertsModule } from './modules/alerts/index.ts'
import { animalsModule } from './modules/animals/index.ts'
import { platformModule } from './modules/platform/index.ts'
import { webhooksModule } from './modules/webhooks/index.ts'
import { referenceModule } from './modules/reference/index.ts'
import { sensorsModule } from './modules/sensors/index.ts'
import { READ_ONLY_AREAS } from './records/all-areas.ts'
import { readOnlyRoutes } from './records/areas.ts'
import { testingModule } from './modules/testing/index.ts'

const DOCS_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Animal-Husbandry Records Service API v1</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><script id="api-reference" data-url="${API_PREFIX}/openapi.json"></script>
<script src="https://cdn.jsdelivr.net/npm/@scalar/api-reference"></script></body></html>`

export function createApp(deps: Deps) {
  let routeTable: RouteTable | undefined
  const pipeline = createPipeline({
    config: deps.config, authenticator: deps.authenticator, rateLimiter: deps.rateLimiter, platform: deps.platform,
    routes: () => routeTable!,
  })
  let openApiDocument: Record<string, unknown> | undefined
  // Built on first request, once every route is registered (the document describes the finished app).
  const publishedDocument = (): Record<string, unknown> => (openApiDocument ??= buildOpenApiDocument(app as AnyElysia))

  // The two ingest routes also have a fast entry ahead of Elysia (src/http/fast-entry.ts); Elysia hands `serve.routes`
  // to Bun.serve over its own routes whenever the app listens.
  const app = new Elysia({ normalize: false, serve: { routes: ingestFastRoutes(deps, pipeline) } })
    .onRequest(({ request, set }) => {
      // Awaited only when a check had to wait; the ingest path is admitted synchronously.
      const admitted = pipeline.run(request)
      if (admitted) return admitted.then(() => { Object.assign(set.headers, requestState(request).headers) })
      Object.assign(set.headers, requestState(request).headers)
    })
    .onParse(({ request }) => parseRequestBody(request))
    .onError(({ code, error, request }) => errorResponse(deps, code, error, request))
    .onAfterResponse(({ request, route, set, responseValue }) => {
      const state = requestState(request)
      const status = state.errorStatus ?? (responseValue instanceof Response ? responseValue.status : typeof set.status === 'number' ? set.status : 200)
      recordRequest(deps, request.method, routeLabel(route), status, state)
    })
    .use(platformModule(deps))
    .use(metricsModule(deps))
    .use(accountModule(deps))
    .use(referenceModule(deps))
    .use(animalsModule(deps))
    .use(activitiesModule(deps))
    .use(readOnlyRoutes(deps, READ_ONLY_AREAS))
    .use(sensorsModule(deps))
    .use(ingestRoutes(deps, pipeline))
    .use(readingsRoutes(deps))
    .use(alertsModule(deps))
    .use(webhooksModule(deps))
    .get(`${API_PREFIX}/openapi.json`, () => publishedDocument(), {
      response: { 200: t.Record(t.String(), t.Unknown(), { description: 'OpenAPI 3.1 document.' }) },
      detail: op({ summary: 'This OpenAPI 3.1 document', tags: ['Platform'], auth: 'public' }),
    })
    .get(`${API_PREFIX}/docs`, ({ set }) => {
      set.headers['content-type'] = 'text/html; charset=utf-8'
      return DOCS_PAGE
    }, {
      response: { 200: t.String({ description: 'HTML page rendering this document.' }) },
      detail: op({ summary: 'Browsable API reference', tags: ['Platform'], auth: 'public' }),
    })

  if (deps.config.testRoutes) app.use(testingModule())

  routeTable = new RouteTable(app.routes as any, API_PREFIX)
  return app
}

export type App = ReturnType<typeof createApp>
