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
  rate_limited: { status: 429, title: 'Rate limited' },
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

export const PROBLEM_TYPE_BASE = 'https://docs.husbandry.example/errors/'

export function problemBody(code: ErrorCode, detail: string, requestId: string, errors: FieldError[] = [], fields: Record<string, unknown> = {}) {
  return {
    type: PROBLEM_TYPE_BASE + code,
    title: ERRORS[code].title,
    status: ERRORS[code].status,
    detail,
    code,
    request_id: requestId,
    errors,
    ...fields,
  }
}

export function problemResponse(error: ApiError, requestId: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(problemBody(error.code, error.detail, requestId, error.extra.errors, error.extra.fields)), {
    status: error.status,
    headers: { ...headers, ...error.extra.headers, 'content-type': 'application/problem+json' },
  })
}
