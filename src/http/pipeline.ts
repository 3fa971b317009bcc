// The request pipeline every /api/v1 request passes before its handler, in the order of CONTRACT §2; one file per
// step, in checks/:
//   1. request-id.ts     X-Request-Id: echo a valid incoming one
//   2. authenticate.ts   401: the key from Authorization, X-API-Key or the route's key parameter
//   3. rate-limit.ts     429, and the rate-limit headers
//   4. route.ts          404/405, and a deprecated route's headers
//   5. authorize.ts      403: device key, plan, scope
//   6. body-limits.ts    413/415 (then the app reads the body within the cap: 400 malformed, 422 invalid)
//   7. query-integers.ts 400 for an integer parameter not written in decimal digits (the schema checks the rest)
// Before them, on every path: host.ts (400 for a Host that names no host; 405 for a method no route serves).
// The one exception: a POST /sensors/ping carrying its key only in the body is authenticated by its handler,
// through admitDeferred, once the body is read.
import type { Authenticator, Principal } from '../auth/authenticator.ts'
import type { Config } from '../config.ts'
import type { PlatformStatusSource } from '../platform.ts'
import { authenticate, queryParam, tokenOf } from './checks/authenticate.ts'
import { authorize } from './checks/authorize.ts'
import { checkBodyHeaders } from './checks/body-limits.ts'
import { checkHost, refuseUnservedMethod } from './checks/host.ts'
import { rateLimitCheck } from './checks/rate-limit.ts'
import { adoptRequestId } from './checks/request-id.ts'
import { checkQueryIntegers } from './checks/query-integers.ts'
import { checkRoute } from './checks/route.ts'
import type { Cors } from './cors.ts'
import type { RateLimiter } from './rate-limit.ts'
import { pathOf } from './request-url.ts'
import { requestState, type RequestState } from './request-state.ts'
import type { RouteMatch, RouteTable } from './route-table.ts'

export const API_PREFIX = '/api/v1'

export interface PipelineDeps {
  config: Config
  /** CORS_ORIGINS, when set: an allowed origin's API answers carry its headers. */
  cors?: Cors
  authenticator: Authenticator
  rateLimiter: RateLimiter
  platform: PlatformStatusSource
  routes: () => RouteTable
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

/** The state it fills is read by handlers (principal) and by every response (headers). */
export function createPipeline(deps: PipelineDeps): Pipeline {
  const countRequest = rateLimitCheck(deps.config, deps.rateLimiter)

  // Steps 2 and 3. A promise only when one of them must wait (a key not yet cached, a personal key's shared-store
  // count): a cached device key on the ingest path is admitted without awaiting anything.
  function admit(state: RequestState, token: string | undefined): void | Promise<void> {
    const principal = authenticate(deps.authenticator, token)
    return principal instanceof Promise ? principal.then((p) => count(state, p)) : count(state, principal)
  }

  function count(state: RequestState, principal: Principal): void | Promise<void> {
    state.principal = principal
    return countRequest(state, principal)
  }

  // Steps 4 to 6.
  function afterAdmission(request: Request, state: RequestState, method: string, path: string, match: RouteMatch) {
    const route = checkRoute(state, method, path, match)
    if (state.principal) authorize(deps.platform, state.principal, route)
    checkBodyHeaders(request, method, route)
    checkQueryIntegers(request.url, route)
  }

  return {
    run(request) {
      const state = requestState(request)
      adoptRequestId(request, state)
      checkHost(request)
      const path = pathOf(request.url)
      const method = request.method
      const routes = deps.routes()
      if (path !== API_PREFIX && !path.startsWith(API_PREFIX + '/')) {
        if (!routes.servedMethods.has(method)) refuseUnservedMethod(method, path, routes.allowOutside(path))
        return
      }
      if (deps.cors) {
        const corsHeaders = deps.cors.headersFor(request)
        if (corsHeaders) Object.assign(state.headers, corsHeaders)
      }

      const match = routes.match(method, path)
      const publicRoute = match.kind === 'route' ? match.route.policy.public : match.kind === 'method' && match.allPublic

      if (!publicRoute) {
        const keyParam = match.kind === 'route' ? match.route.policy.keyParam : undefined
        const token = tokenOf(request) ?? (keyParam ? queryParam(request.url, keyParam) : undefined)
        // The key may still be in a form or JSON body the pipeline does not read; the handler admits it.
        if (token === undefined && keyParam && method === 'POST') state.deferredAuth = true
        else {
          const admitted = admit(state, token)
          if (admitted) return admitted.then(() => afterAdmission(request, state, method, path, match))
        }
      }
      afterAdmission(request, state, method, path, match)
    },

    async admitDeferred(request, token) {
      const state = requestState(request)
      if (!state.deferredAuth) return
      state.deferredAuth = false
      await admit(state, token)
      authorize(deps.platform, state.principal!, state.route!)
    },
  }
}
