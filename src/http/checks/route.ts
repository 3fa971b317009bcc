// Step 4 (CONTRACT §5, §9): 404 and 405 for what v1 does not serve, and a deprecated route's headers.
import { ApiError } from '../errors.ts'
import type { RequestState } from '../request-state.ts'
import type { ApiRoute, RouteMatch } from '../route-table.ts'

export function checkRoute(state: RequestState, method: string, path: string, match: RouteMatch): ApiRoute {
  if (match.kind === 'none') {
    // A write to a path v1 does not serve is a write v1 does not include (CONTRACT §5): 405, no methods allowed.
    if (method === 'GET' || method === 'HEAD') throw new ApiError('not_found', `No route ${method} ${path}.`)
    // The Allow header is empty (RFC 9110 §10.2.1: no method is served there), which a person may take for a missing
    // header: the detail says so, and why GET is a 404 on the same path.
    throw new ApiError('method_not_allowed', `${method} is not part of API v1 on ${path}: API v1 serves no method on this path, so the Allow header is empty and a GET here is 404. The reference lists what v1 serves (GET /api/v1/openapi.json).`, { headers: { allow: '' } })
  }
  if (match.kind === 'method') {
    throw new ApiError('method_not_allowed', `${method} is not allowed on ${path}; allowed: ${match.allow}.`, { headers: { allow: match.allow } })
  }
  const route = match.route
  state.route = route
  const d = route.policy.deprecation
  if (d) {
    state.headers['deprecation'] = `@${Math.floor(d.since.getTime() / 1000)}`
    state.headers['sunset'] = d.sunset.toUTCString()
    state.headers['link'] = `<${d.link}>; rel="deprecation"; type="text/html"`
  }
  return route
}
