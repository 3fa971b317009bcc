// What the app reads from a request before its handler, one function per step: the body (the app's onParse) and
// the query's text (its onTransform). Elysia's hooks call these, and so do the hot routes (hot-path.ts).
import { readBody } from './checks/body-limits.ts'
import { ApiError } from './errors.ts'
import { parseJsonBody, unstorableFields } from './json-body.ts'

/**
 * The body as the route's handler sees it: null when there is none, form fields for a form, else parsed JSON.
 * JSON only, unless the route accepts forms: the pipeline already refused other media types, and the size cap
 * holds without Content-Length too.
 */
export async function parseRequestBody(request: Request): Promise<unknown> {
  const text = await readBody(request)
  if (text === '') return null
  // The pipeline let through only media types the route accepts; forms are for constrained firmware.
  if (request.headers.get('content-type')?.startsWith('application/x-www-form-urlencoded')) {
    const fields = Object.fromEntries(new URLSearchParams(text))
    const unstorable = unstorableFields(fields, '/body')
    if (unstorable.length) throw new ApiError('validation_failed', 'The body holds text that cannot be stored.', { errors: unstorable })
    return fields
  }
  return parseJsonBody(text)
}

/**
 * Text Postgres cannot store (NUL, lone surrogates) would fail the query as a 500; it is the caller's mistake.
 * Such text can only arrive percent-encoded, so other URLs (the ingest hot path) cost one scan.
 */
export function refuseUnstorableQuery(url: string): void {
  const queryStart = url.indexOf('?')
  if (queryStart === -1 || url.indexOf('%', queryStart) === -1) return
  const unstorable = unstorableFields(Object.fromEntries(new URLSearchParams(url.slice(queryStart + 1))), '/query')
  if (unstorable.length) throw new ApiError('invalid_parameter', 'A query parameter holds text that cannot be stored.', { errors: unstorable })
}
