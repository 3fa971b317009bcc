// A cheaper way in for the hottest routes (the two ingest endpoints): Bun.serve's native routes call these handlers
// directly, ahead of Elysia, whose per-request machinery (context, hooks, response mapping and validation) costs
// more than the whole of our own work on a small batch (bench/README.md, "Where the HTTP layer's CPU goes").
// A fast handler runs the same steps as the app, through the same functions: the pipeline, the body reader, the
// route's schemas, its handler, errorResponse and recordRequest. The routes stay registered in Elysia too (the
// OpenAPI document and the route table come from there; app.handle() serves them through Elysia), and the tests
// in test/http/fast-entry.test.ts hold both ways to the same answers.
import { ValidationError } from 'elysia'
import type { Deps } from '../deps.ts'
import { errorResponse, recordRequest } from './answer.ts'
import type { Pipeline } from './pipeline.ts'
import { requestState } from './request-state.ts'

/** What a route's handler answers with: a status, and a JSON body unless there is none. */
export interface FastAnswer { status: number; body?: unknown }

export type FastHandler = (request: Request) => FastAnswer | Promise<FastAnswer>

/** Bun.serve route handlers, by path and method. */
export type FastRoutes = Record<string, Record<string, (request: Request) => Promise<Response>>>

/** `route` is the route's template, as the access log and the metrics name it. */
export function fastRoute(deps: Deps, pipeline: Pipeline, route: string, handle: FastHandler): (request: Request) => Promise<Response> {
  return async (request) => {
    let response: Response
    try {
      // Awaited only when a check had to wait, as in the app's onRequest.
      const admitted = pipeline.run(request)
      if (admitted) await admitted
      const answer = await handle(request)
      const init = { status: answer.status, headers: requestState(request).headers }
      response = answer.body === undefined ? new Response(null, init) : Response.json(answer.body, init)
    } catch (error) {
      response = errorResponse(deps, error instanceof ValidationError ? 'VALIDATION' : 'UNKNOWN', error, request)
    }
    recordRequest(deps, request.method, route, response.status, requestState(request))
    return response
  }
}
