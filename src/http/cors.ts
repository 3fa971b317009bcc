// CORS for browser apps (CORS_ORIGINS; unset, the API sends no CORS headers). An allowed origin's requests carry
// Access-Control-Allow-Origin and expose the headers a client reads (rate limits, ETag, request id, replays,
// paging); a preflight is answered here, before authentication, since a browser sends it without the key. Keys
// travel in headers, never cookies, so credentials are not allowed: a page can only use a key it was given.
import type { RouteTable } from './route-table.ts'

/** Response headers a browser app may read. */
const EXPOSED = ['RateLimit', 'RateLimit-Policy', 'Retry-After', 'ETag', 'X-Request-Id', 'Idempotent-Replayed', 'Link', 'Next-Cursor', 'API-Version', 'Deprecation', 'Sunset', 'Location'].join(', ')
/** Request headers a browser app may send. */
const ALLOWED_HEADERS = ['Authorization', 'X-API-Key', 'Content-Type', 'Idempotency-Key', 'If-Match', 'If-None-Match', 'X-Request-Id', 'Accept'].join(', ')
/** How long a browser may reuse a preflight's answer. */
const MAX_AGE_SECONDS = 600

export interface Cors {
  /** The headers an allowed origin's request gets on every answer (errors included); none for others. */
  headersFor(request: Request): Record<string, string> | undefined
  /** The answer to a preflight from an allowed origin; undefined for anything else (it goes through the pipeline). */
  preflight(request: Request, path: string, routes: RouteTable): Response | undefined
}

export function createCors(origins: readonly string[]): Cors {
  const allowed = new Set(origins)
  const headersFor = (request: Request) => {
    const origin = request.headers.get('origin')
    if (origin === null || !allowed.has(origin)) return undefined
    return { 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSED, vary: 'Origin' }
  }
  return {
    headersFor,
    preflight(request, path, routes) {
      if (request.method !== 'OPTIONS' || !request.headers.has('access-control-request-method')) return undefined
      const headers = headersFor(request)
      if (!headers) return undefined
      const match = routes.match(request.headers.get('access-control-request-method')!, path)
      const methods = match.kind === 'none' ? '' : match.allow
      return new Response(null, {
        status: 204,
        headers: { ...headers, 'access-control-allow-methods': methods, 'access-control-allow-headers': ALLOWED_HEADERS, 'access-control-max-age': String(MAX_AGE_SECONDS) },
      })
    },
  }
}
