// Step 2 (CONTRACT §2): 401. The key comes from `Authorization: Bearer`, `X-API-Key`, or, for firmware that cannot
// set headers, a query parameter the route names (the ping `key`).
import type { Authenticator, Principal } from '../../auth/authenticator.ts'
import { ApiError } from '../errors.ts'

const INVALID_TOKEN_HEADERS = { 'www-authenticate': 'Bearer realm="api", error="invalid_token"' }

/** The token from `Authorization: Bearer` or `X-API-Key`; both present and different is a client error. */
export function tokenOf(request: Request): string | undefined {
  const authorization = request.headers.get('authorization')
  const apiKey = request.headers.get('x-api-key') ?? undefined
  let bearer: string | undefined
  if (authorization !== null) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
    if (!match) throw new ApiError('invalid_token', 'The Authorization header must be "Bearer <token>".', { headers: INVALID_TOKEN_HEADERS })
    bearer = match[1]
  }
  if (bearer !== undefined && apiKey !== undefined && bearer !== apiKey) {
    throw new ApiError('invalid_parameter', 'Authorization and X-API-Key carry different tokens; send one.')
  }
  return bearer ?? apiKey
}

/**
 * The first value of a query parameter, as URLSearchParams would give it, found by scanning the URL: the ping
 * path reads its key on every request, and building a URLSearchParams for it cost more than the rest of the check.
 */
export function queryParam(url: string, name: string): string | undefined {
  let start = url.indexOf('?') + 1
  if (start === 0) return undefined
  const prefix = `${name}=`
  while (start < url.length) {
    const ampersand = url.indexOf('&', start)
    const end = ampersand === -1 ? url.length : ampersand
    if (url.startsWith(prefix, start)) {
      const raw = url.slice(start + prefix.length, end)
      return raw.includes('%') || raw.includes('+') ? new URLSearchParams(`${prefix}${raw}`).get(name)! : raw
    }
    start = end + 1
  }
  return undefined
}

/**
 * The principal behind `token`, or a 401. Returns a promise only when the key is not cached yet: a cached device key
 * on the ingest path is admitted without awaiting anything.
 */
export function authenticate(authenticator: Authenticator, token: string | undefined): Principal | Promise<Principal> {
  if (token === undefined) {
    throw new ApiError('authentication_required', 'Send a key as "Authorization: Bearer <token>" or "X-API-Key: <token>".', { headers: { 'www-authenticate': 'Bearer realm="api"' } })
  }
  const verified = authenticator.verify(token)
  return verified instanceof Promise ? verified.then(known) : known(verified)
}

function known(principal: Principal | undefined): Principal {
  if (!principal) throw new ApiError('invalid_token', 'The key is malformed, unknown, revoked or expired.', { headers: INVALID_TOKEN_HEADERS })
  return principal
}
