// The request pipeline every /api/v1 request passes before its handler, in the CONTRACT §2 order:
// request id → 401 → 429 → 404/405 → 403 (device, plan, scope) → 413/415 → (parse 400, validate 422) → handler.
// The one exception: a POST /sensors/ping carrying its key only in the body is authenticated by its handler,
// through admitDeferred, once the body is read.
import type { Authenticator, Principal } from '../auth/authenticator.ts'
import type { Config } from '../config.ts'
import { ulid } from '../ids.ts'
import { planHasAccess, rateLimitFor } from '../plans.ts'
import { API_VERSION, type PlatformStatusSource } from '../platform.ts'
import { ApiError } from './errors.ts'
import type { Hit, RateLimiter } from './rate-limit.ts'
import type { ApiRoute, RouteMatch, RouteTable } from './route-table.ts'

export const API_PREFIX = '/api/v1'
export const MAX_BODY_BYTES = 1024 * 1024
const REQUEST_ID_SHAPE = /^[A-Za-z0-9._:-]{1,128}$/

export interface RateLimitState { limit: number; remaining: number; windowSeconds: number; resetSeconds: number; resetAt: number }

/** What the pipeline learned about a request, for its handler and its response. */
export interface RequestState {
  requestId: string
  /** Headers every response to this request carries, errors included. */
  headers: Record<string, string>
  principal?: Principal
  route?: ApiRoute
  rateLimit?: RateLimitState
  /** Authentication waits for the handler, which reads the key from the body (see Pipeline.admitDeferred). */
  deferredAuth?: boolean
}

const states = new WeakMap<Request, RequestState>()

export function requestState(request: Request): RequestState {
  let state = states.get(request)
  if (!state) {
    // Requests that never passed the pipeline (non-API paths) still get an id.
    state = { requestId: `req_${ulid()}`, headers: {} }
    state.headers['x-request-id'] = state.requestId
    state.headers['api-version'] = API_VERSION
    states.set(request, state)
  }
  return state
}

export interface PipelineDeps {
  config: Config
  authenticator: Authenticator
  rateLimiter: RateLimiter
  platform: PlatformStatusSource
  routes: () => RouteTable
}

function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const end = url.indexOf('?', start)
  return end === -1 ? url.slice(start) : url.slice(start, end)
}

/** The token from `Authorization: Bearer` or `X-API-Key`; both present and different is a client error. */
function tokenOf(request: Request): string | undefined {
  const authorization = request.headers.get('authorization')
  const apiKey = request.headers.get('x-api-key') ?? undefined
  let bearer: string | undefined
  if (authorization !== null) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
    if (!match) throw new ApiError('invalid_token', 'The Authorization header must be "Bearer <token>".', { headers: { 'www-authenticate': 'Bearer realm="api", error="invalid_token"' } })
    bearer = match[1]
  }
  if (bearer !== undefined && apiKey !== undefined && bearer !== apiKey) {
    throw new ApiError('invalid_parameter', 'Authorization and X-API-Key carry different tokens; send one.')
  }
  return bearer ?? apiKey
}

/** The rate-limit header values fixed by a key's limit (the window is the pipeline's), made once per limit. */
interface FixedRateLimitTexts { policy: string; limit: string }

function applyRateLimitHeaders(state: RequestState, rl: RateLimitState, fixed: FixedRateLimitTexts) {
  state.headers['ratelimit-policy'] = fixed.policy
  state.headers['ratelimit'] = `"default";r=${rl.remaining};t=${rl.resetSeconds}`
  state.headers['x-ratelimit-limit'] = fixed.limit
  state.headers['x-ratelimit-remaining'] = String(rl.remaining)
  state.headers['x-ratelimit-reset'] = String(rl.resetAt)
}

function deprecationHeaders(state: RequestState, route: ApiRoute) {
  const d = route.policy.deprecation
  if (!d) return
  state.headers['deprecation'] = `@${Math.floor(d.since.getTime() / 1000)}`
  state.headers['sunset'] = d.sunset.toUTCString()
  state.headers['link'] = `<${d.link}>; rel="deprecation"; type="text/html"`
}

export interface Pipeline {
  /**
   * Runs the checks; throws (or rejects with) ApiError to refuse, returns normally to let the request through.
   * Returns a promise only when a check had to wait.
   */
  run(request: Request): void | Promise<void>
  /**
   * For routes that take the key in the body (`/sensors/ping` by POST form or JSON): the handler passes the
   * key it found, and the checks the pipeline deferred (401, 429, 403) run now.
   */
  admitDeferred(request: Request, token: string | undefined): Promise<void>
}

/**
 * The state it fills is read by handlers (principal) and by every response (headers).
 */
export function createPipeline(deps: PipelineDeps): Pipeline {
  const windowSeconds = deps.config.rateLimitWindowSeconds
  const windowMs = windowSeconds * 1000
  /** Rate-limit header values that depend only on the limit, made once per limit. */
  const fixedTexts = new Map<number, FixedRateLimitTexts>()
  const fixedTextsFor = (limit: number) => {
    let texts = fixedTexts.get(limit)
    if (!texts) { texts = { policy: `"default";q=${limit};w=${windowSeconds}`, limit: String(limit) }; fixedTexts.set(limit, texts) }
    return texts
  }

  // The checks below return a promise only when they must wait (a key not yet cached, a personal key's
  // shared-store rate limit): a device key on the ingest path is admitted without awaiting anything.
  function authenticate(state: RequestState, token: string | undefined): void | Promise<void> {
    if (token === undefined) {
      throw new ApiError('authentication_required', 'Send a key as "Authorization: Bearer <token>" or "X-API-Key: <token>".', { headers: { 'www-authenticate': 'Bearer realm="api"' } })
    }
    const verified = deps.authenticator.verify(token)
    return verified instanceof Promise ? verified.then((principal) => admit(state, principal)) : admit(state, verified)
  }

  function admit(state: RequestState, principal: Principal | undefined): void | Promise<void> {
    if (!principal) {
      throw new ApiError('invalid_token', 'The key is malformed, unknown, revoked or expired.', { headers: { 'www-authenticate': 'Bearer realm="api", error="invalid_token"' } })
    }
    state.principal = principal
    // Device keys feed the ingest hot path, so they are counted locally (see rate-limit.ts).
    if (principal.kind === 'device') return countAgainstLimit(state, principal, deps.rateLimiter.local(principal.keyId, windowMs))
    return deps.rateLimiter.exact(principal.keyId, windowMs).then((hit) => countAgainstLimit(state, principal, hit))
  }

  function countAgainstLimit(state: RequestState, principal: Principal, { count, resetMs }: Hit) {
    const limit = rateLimitFor(deps.config, principal.plan, principal.kind)
    const resetSeconds = Math.max(1, Math.ceil(resetMs / 1000))
    const rl: RateLimitState = { limit, remaining: Math.max(0, limit - count), windowSeconds, resetSeconds, resetAt: Math.ceil((Date.now() + resetMs) / 1000) }
    state.rateLimit = rl
    applyRateLimitHeaders(state, rl, fixedTextsFor(limit))
    if (count > limit) {
      throw new ApiError('rate_limited', `This key may make ${limit} requests every ${windowSeconds} s; try again in ${resetSeconds} s.`, { headers: { 'retry-after': String(resetSeconds) } })
    }
  }

  function authorize(principal: Principal, route: ApiRoute) {
    const policy = route.policy
    if (principal.kind === 'device' && !policy.deviceAllowed) {
      throw new ApiError('device_key_not_allowed', 'A device key may only submit readings and read its own device.')
    }
    if (!planHasAccess(principal.plan, principal.liveTestAllowlisted, deps.platform.current())) {
      throw new ApiError('plan_not_eligible', 'API access needs the Breeder plan or above (or the live-test allowlist while the platform is limited).')
    }
    if (principal.kind === 'personal') {
      if (policy.personalScopes === null) {
        // No scope would let a personal token in, so the list stays empty and required_key says what will.
        throw new ApiError('insufficient_scope', `${route.method} ${route.path} takes a device key (hrs_dev_…), not a personal token: pair the device (POST /sensors/claim/start, or POST /sensors/devices) and send the key it receives.`, {
          headers: { 'www-authenticate': 'Bearer realm="api", error="insufficient_scope", error_description="a device key is required"' },
          fields: { required_scopes: [], required_key: 'device' },
        })
      }
      const missing = policy.personalScopes.filter((s) => !principal.scopes.includes(s))
      if (missing.length) {
        throw new ApiError('insufficient_scope', `This key lacks the scope ${missing.join(', ')}.`, {
          headers: { 'www-authenticate': `Bearer realm="api", error="insufficient_scope", scope="${policy.personalScopes.join(' ')}"` },
          fields: { required_scopes: policy.personalScopes },
        })
      }
    }
  }

  /** Everything after authentication: 404/405, 403, 413/415. */
  function checkRoute(request: Request, state: RequestState, method: string, path: string, match: RouteMatch) {
    if (match.kind === 'none') {
      // A write to a path v1 does not serve is a write v1 does not include (CONTRACT §5): 405, no methods allowed.
      if (method === 'GET' || method === 'HEAD') throw new ApiError('not_found', `No route ${method} ${path}.`)
      throw new ApiError('method_not_allowed', `${method} is not part of API v1 on ${path}.`, { headers: { allow: '' } })
    }
    if (match.kind === 'method') {
      throw new ApiError('method_not_allowed', `${method} is not allowed on ${path}; allowed: ${match.allow}.`, { headers: { allow: match.allow } })
    }
    const route = match.route
    state.route = route
    deprecationHeaders(state, route)
    if (state.principal) authorize(state.principal, route)

    if (method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE') {
      const length = request.headers.get('content-length')
      if (length !== null && Number(length) > MAX_BODY_BYTES) {
        throw new ApiError('payload_too_large', `Request bodies may be at most ${MAX_BODY_BYTES} bytes.`)
      }
      const hasBody = (length !== null && length !== '0') || request.headers.has('transfer-encoding')
      if (hasBody) {
        const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
        if (!route.policy.accepts.includes(type)) {
          throw new ApiError('unsupported_media_type', `Send the body as ${route.policy.accepts.join(' or ')}.`, { headers: { accept: route.policy.accepts.join(', ') } })
        }
      }
    }
  }

  return {
    run(request) {
      const state = requestState(request)
      const incomingId = request.headers.get('x-request-id')
      if (incomingId !== null && REQUEST_ID_SHAPE.test(incomingId)) {
        state.requestId = incomingId
        state.headers['x-request-id'] = incomingId
      }
      const path = pathOf(request.url)
      if (path !== API_PREFIX && !path.startsWith(API_PREFIX + '/')) return

      const method = request.method
      const match = deps.routes().match(method, path)
      const publicRoute = match.kind === 'route' ? match.route.policy.public : match.kind === 'method' && match.allPublic

      if (!publicRoute) {
        const keyParam = match.kind === 'route' ? match.route.policy.keyParam : undefined
        const token = tokenOf(request) ?? (keyParam ? queryParam(request.url, keyParam) : undefined)
        // The key may still be in a form or JSON body the pipeline does not read; the handler admits it.
        if (token === undefined && keyParam && method === 'POST') state.deferredAuth = true
        else {
          const admitted = authenticate(state, token)
          if (admitted) return admitted.then(() => checkRoute(request, state, method, path, match))
        }
      }
      checkRoute(request, state, method, path, match)
    },

    async admitDeferred(request, token) {
      const state = requestState(request)
      if (!state.deferredAuth) return
      state.deferredAuth = false
      await authenticate(state, token)
      authorize(state.principal!, state.route!)
    },
  }
}

/**
 * The first value of a query parameter, as URLSearchParams would give it, found by scanning the URL: the ping
 * path reads its key on every request, and building a URLSearchParams for it cost more than the rest of the check.
 */
function queryParam(url: string, name: string): string | undefined {
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
 * Reads a body within the size cap. With a Content-Length (already checked against the cap by the pipeline) the
 * runtime reads it in one go; only a chunked body is streamed and counted, which costs far more per request.
 */
export async function readBody(request: Request): Promise<string> {
  if (!request.body) return ''
  if (request.headers.has('content-length')) return request.text()
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > MAX_BODY_BYTES) {
      reader.cancel().catch(() => {})
      throw new ApiError('payload_too_large', `Request bodies may be at most ${MAX_BODY_BYTES} bytes.`)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}
