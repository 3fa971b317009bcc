// How a request is answered once something failed, and what is recorded once it was answered: shared by the Elysia
// app (its onError and onAfterResponse hooks) and the fast entry (fast-entry.ts), so both answer and log alike.
import { isDatabaseUnavailable } from '../../db/unavailable.ts'
import type { Deps } from '../deps.ts'
import { ApiError, problemResponse, type FieldError } from './errors.ts'
import { requestState, type RequestState } from './request-state.ts'

/** What a 503 for an unreachable database asks the client to wait: about how long a restart or failover takes. */
const DATABASE_RETRY_AFTER_SECONDS = 5

/** Elysia's validation errors → field errors with JSON Pointer paths into the part of the request that failed. */
function fieldErrors(error: any): FieldError[] {
  const all: any[] = Array.isArray(error?.all) ? error.all : []
  const where = error?.type === 'body' ? '/body' : error?.type === 'params' ? '/path' : error?.type === 'headers' ? '/header' : '/query'
  const list = all.map((e) => ({ path: `${where}${e.path ?? ''}`, message: String(e.summary ?? e.message ?? 'is invalid') }))
  return list.length ? list : [{ path: where, message: String(error?.message ?? 'is invalid') }]
}

/** `code` is Elysia's error code ('NOT_FOUND', 'PARSE', 'VALIDATION', …; anything else for a thrown error). */
function toApiError(code: string | number, error: unknown): ApiError {
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
      if (e?.type === 'body') return new ApiError('validation_failed', 'The body does not match the schema.', { errors: fieldErrors(e) })
      if (e?.type === 'params') return new ApiError('not_found', 'No such resource.')
      return new ApiError('invalid_parameter', e?.type === 'headers' ? 'A request header is invalid.' : 'A query parameter is invalid.', { errors: fieldErrors(e) })
    }
    default:
      if (isDatabaseUnavailable(error)) {
        return new ApiError('service_unavailable', 'The records database is not reachable right now; nothing was changed. Retry shortly.', { headers: { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) } })
      }
      return new ApiError('internal_error', 'Something went wrong on our side; the request id helps us find it.')
  }
}

/** The problem+json answer to a failed request, carrying the request's headers; notes the status for the log. */
export function errorResponse(deps: Deps, code: string | number, error: unknown, request: Request): Response {
  const apiError = toApiError(code, error)
  const state = requestState(request)
  state.errorStatus = apiError.status
  if (apiError.code === 'internal_error') deps.log.error('request failed', { request_id: state.requestId, error: String((error as Error)?.stack ?? error) })
  else if (apiError.code === 'service_unavailable' && !(error instanceof ApiError)) deps.log.warn('database unavailable', { request_id: state.requestId, error: String((error as Error)?.message ?? error) })
  return problemResponse(apiError, state.requestId, state.headers)
}

/** The access log line and the request metrics, once the response has gone out. */
export function recordRequest(deps: Deps, method: string, route: string, status: number, state: RequestState) {
  const seconds = (performance.now() - state.startedAt) / 1000
  deps.metrics.httpRequests.inc([method, route, String(status)])
  deps.metrics.httpDuration.observe([method, route], seconds)
  if (deps.log.enabled('info')) {
    // The key's id, never the key: the token itself (header, query or body) is never logged.
    deps.log.info('request', { request_id: state.requestId, method, route, status, duration_ms: Math.round(seconds * 10_000) / 10, key_id: state.principal?.keyId })
  }
}
