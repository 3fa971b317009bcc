// One error vocabulary (CONTRACT §3): every failure leaves as RFC 9457 problem+json built here.
export const ERRORS = {
  malformed_json: { status: 400, title: 'Malformed JSON' },
  invalid_parameter: { status: 400, title: 'Invalid parameter' },
  invalid_cursor: { status: 400, title: 'Invalid cursor' },
  authentication_required: { status: 401, title: 'Authentication required' },
  invalid_token: { status: 401, title: 'Invalid token' },
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  device_key_not_allowed: { status: 403, title: 'Device key not allowed' },
  plan_not_eligible: { status: 403, title: 'Plan not eligible' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  idempotency_key_in_use: { status: 409, title: 'Idempotency key in use' },
  precondition_failed: { status: 412, title: 'Precondition failed' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  validation_failed: { status: 422, title: 'Validation failed' },
  idempotency_key_mismatch: { status: 422, title: 'Idempotency key mismatch' },
  query_too_expensive: { status: 422, title: 'Query too expensive' },
  query_timeout: { status: 422, title: 'Query timed out' },
  beyond_retention: { status: 422, title: 'Beyond retention' },
  rate_limited: { status: 429, title: 'Rate limited' },
  too_many_queries: { status: 429, title: 'Too many queries' },
  too_many_streams: { status: 429, title: 'Too many streams' },
  internal_error: { status: 500, title: 'Internal error' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
} as const satisfies Record<string, { status: number; title: string }>

export type ErrorCode = keyof typeof ERRORS
export interface FieldError { path: string; message: string }

/** Thrown anywhere in a request; the app's error handler turns it into a problem response. */
export class ApiError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly extra: { errors?: FieldError[]; headers?: Record<string, string>; fields?: Record<string, unknown> } = {},
  ) {
    super(detail)
    this.status = ERRORS[code].status
  }
}

/** What each code means and what to do about it: the page a problem's `type` leads to (GET /api/v1/errors/{code}). */
export const ERROR_HELP: Record<ErrorCode, string> = {
  malformed_json: 'The body could not be parsed as JSON (or as a form, where the operation accepts one). Check quoting, commas and the Content-Type header.',
  invalid_parameter: 'A query parameter or header has a value the operation does not accept. Each entry of `errors` names the parameter (e.g. `/query/limit`) and what it must be.',
  invalid_cursor: 'The `cursor` was not issued for this list, account and filters, or it was altered. Start again from the first page, with the same filters.',
  authentication_required: 'No key was sent. Send a personal access token or device key as `Authorization: Bearer <key>` or `X-API-Key: <key>` (`/sensors/ping` also takes `key` in the query string or body).',
  invalid_token: 'The key is malformed, unknown, revoked or expired. Check that it was copied whole; make a new key if it was revoked or has expired.',
  insufficient_scope: 'The key is valid but may not call this operation. `required_scopes` lists the scopes a personal token needs; when it is empty, the operation takes a device key instead of a personal token.',
  device_key_not_allowed: 'A device key may only submit readings (`POST /sensors/readings`, `/sensors/ping`) and read its own device. Use a personal access token for everything else.',
  plan_not_eligible: 'API access needs the Breeder plan or above (or the live-test allowlist while `GET /status` reports `limited`).',
  not_found: 'No such route, or no such record in this account (records of another account are not found either).',
  method_not_allowed: 'The path does not serve this method; the `Allow` header lists the ones it does (empty when API v1 serves no writes there).',
  conflict: 'The request conflicts with the current state of the record (for example, a name or code already taken). `detail` says which.',
  idempotency_key_in_use: 'A request with this Idempotency-Key is still being processed. Wait for it, then retry to receive its stored response.',
  precondition_failed: 'The record changed since the version named in `If-Match`. Read it again, reapply your change, and send the new ETag.',
  payload_too_large: 'The request body exceeds the size limit. Send fewer items per request.',
  unsupported_media_type: 'The body was sent with a Content-Type this operation does not accept; the `Accept` header lists the ones it does.',
  validation_failed: 'The body does not match the operation\'s schema, or refers to records that do not exist. Each entry of `errors` points at the field (e.g. `/body/name`) and says what it must be. Nothing was changed.',
  idempotency_key_mismatch: 'This Idempotency-Key was used before with a different request body. Use a new key for a different request.',
  query_too_expensive: 'A readings query is bounded before it runs: the series in scope times the buckets in the window may not exceed the limit `max_rows` (raw pages and files by their `limit`). `detail` says how to fit: a coarser `interval`, a shorter window, or fewer series (`device_id`, `channel`, `metric`). Nothing was run.',
  query_timeout: 'The readings query ran out of its time in the store and was cancelled there. Narrow it (a shorter window, a coarser `interval`, fewer series, a smaller `limit`); retrying it unchanged will most likely take as long again.',
  beyond_retention: 'The window reaches before what the service keeps: raw readings for `retention_days.raw` days, rollups per 1 minute, 5 minutes, 1 hour and 1 day longer (`retention_days`, 0 = forever; `retained_from` is the earliest instant each still holds). Older windows are answered with an `interval` that is a whole number of a kept rollup\'s buckets and a `from` on its grid; `detail` names one that fits. Nothing was run.',
  rate_limited: 'The key made more requests than its plan allows in the current window. Wait for the seconds in `Retry-After`; the RateLimit headers show the quota.',
  internal_error: 'Something failed on our side. Retry later; quote the `request_id` if you report it.',
  too_many_queries: 'The account already has as many heavy readings queries running as it may (wide windows, fine intervals, large files). Wait for one to finish (`Retry-After`), or ask for less per query.',
  too_many_streams: 'The account already holds as many open event streams on this server as it may (`STREAMS_PER_ACCOUNT`). Close one (or share one stream between views) and retry after `Retry-After`.',
  service_unavailable: 'A backing service is unreachable right now and nothing was changed. Retry after the seconds in `Retry-After`.',
}

/** Where problem types are explained, under the API prefix (a literal here: pipeline.ts imports this file). */
export const ERROR_PAGES_PATH = '/api/v1/errors'

/**
 * A problem's `type`: the service's own page for the code, absolute (RFC 9457 §3.1.1) on the configured
 * PUBLIC_URL. Never on the request's URL: Bun builds that from the Host header, which the caller chooses.
 */
const problemType = (code: ErrorCode, publicUrl: string) => `${publicUrl}${ERROR_PAGES_PATH}/${code}`

export function problemBody(code: ErrorCode, detail: string, requestId: string, publicUrl: string, errors: FieldError[] = [], fields: Record<string, unknown> = {}) {
  return {
    type: problemType(code, publicUrl),
    title: ERRORS[code].title,
    status: ERRORS[code].status,
    detail,
    code,
    request_id: requestId,
    errors,
    ...fields,
  }
}

export function problemResponse(error: ApiError, requestId: string, publicUrl: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(problemBody(error.code, error.detail, requestId, publicUrl, error.extra.errors, error.extra.fields)), {
    status: error.status,
    headers: { ...headers, ...error.extra.headers, 'content-type': 'application/problem+json' },
  })
}
