// What `op({ etag, idempotent })` declares, this one hook delivers: a route never sets ETag or Idempotent-Replayed
// itself, so the OpenAPI document (which reads the same flags) and the responses cannot disagree.
// - `etag: true`: the route returns `versioned(row, present)`; the hook sends that version's ETag, and answers a GET
//   whose If-None-Match names it with 304 Not Modified and no body (RFC 9110 §13.1.2).
// - `idempotent: true`: the route answers through `writeOnce` (idempotency.ts); the hook marks replays.
// A route that declares a flag and does not deliver it, or delivers what it does not declare, answers 500: a
// mismatch is our bug, and failing loudly finds it in the first test that calls the route.
import { etagOf } from './etag.ts'
import { requestState } from './request-state.ts'

const RECORD_VERSION = Symbol('record version')

/** A record as the API shows it, carrying (out of the JSON) the version its ETag names. */
export type Versioned<Out> = Out & { readonly [RECORD_VERSION]: number }

/** The record as the API shows it, with its version for the ETag the route declares (`op({ etag: true })`). */
export function versioned<Row extends { version: number }, Out extends object>(row: Row, present: (row: Row) => Out): Versioned<Out> {
  return withVersion(present(row), row.version)
}

/** Marks an answer (a presented record, or a replayed create's stored Response) with the version its ETag names. */
export function withVersion<Out extends object>(body: Out, version: number): Versioned<Out> {
  Object.defineProperty(body, RECORD_VERSION, { value: version, enumerable: false })
  return body as Versioned<Out>
}

export function versionOf(body: unknown): number | undefined {
  return typeof body === 'object' && body !== null ? (body as Partial<Versioned<object>>)[RECORD_VERSION] : undefined
}

class UndeliveredDeclaration extends Error {}

/** Whether If-None-Match (weak comparison, RFC 9110 §13.1.2) names `etag`, or is `*`. */
function noneMatch(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false
  const value = ifNoneMatch.trim()
  return value === '*' || value.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}

/**
 * The app's afterHandle hook: sends the headers the route's `op()` declares, and refuses a route that breaks its
 * word. Returns the 304 that replaces the answer when a GET's If-None-Match names the record's current ETag.
 */
export function deliverDeclaredHeaders({ request, response, set }: { request: Request; response: unknown; set: { status?: number | string; headers: Record<string, unknown> } }): Response | undefined {
  const state = requestState(request)
  const route = state.route
  if (!route) return
  const policy = route.policy
  const name = `${route.method} ${route.path}`
  const status = response instanceof Response ? response.status : typeof set.status === 'number' ? set.status : 200
  const success = status >= 200 && status < 300 && status !== 204
  const version = versionOf(response)
  if (version !== undefined) {
    if (!policy.etag) throw new UndeliveredDeclaration(`${name}: returns a versioned record but does not declare etag`)
    const etag = etagOf(version)
    set.headers.etag = etag
    if ((request.method === 'GET' || request.method === 'HEAD') && noneMatch(request.headers.get('if-none-match'), etag)) {
      state.notModified = true
      return new Response(null, { status: 304, headers: { etag } })
    }
  } else if (policy.etag && success && !(response instanceof Response)) {
    throw new UndeliveredDeclaration(`${name}: declares etag but returned no versioned record (use versioned())`)
  }
  if (policy.idempotent && success && state.idempotency === undefined) {
    throw new UndeliveredDeclaration(`${name}: declares idempotent but did not answer through writeOnce()`)
  }
  if (!policy.idempotent && state.idempotency !== undefined) {
    throw new UndeliveredDeclaration(`${name}: answers through writeOnce() but does not declare idempotent`)
  }
  if (state.idempotency === 'replayed') set.headers['idempotent-replayed'] = 'true'
}
