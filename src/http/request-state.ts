// What the pipeline learns about a request, kept beside the request (not on it) for its handler and its response.
import type { Principal } from '../auth/authenticator.ts'
import { ulid } from '../ids.ts'
import { API_VERSION } from '../platform.ts'
import type { ApiRoute } from './route-table.ts'

export interface RateLimitState { limit: number; remaining: number; windowSeconds: number; resetSeconds: number; resetAt: number }

export interface RequestState {
  requestId: string
  /** performance.now() when the request arrived (for the access log and the latency histogram). */
  startedAt: number
  /** The status of the error response, when one was sent (the app's error handler sets it). */
  errorStatus?: number
  /** Headers every response to this request carries, errors included. */
  headers: Record<string, string>
  principal?: Principal
  route?: ApiRoute
  rateLimit?: RateLimitState
  /** Set by `writeOnce` (idempotency.ts): whether this answer was written now or replays a stored one. */
  idempotency?: 'fresh' | 'replayed'
  /** Answered 304 Not Modified (declared-response.ts): the request is given back to its key's rate limit. */
  notModified?: boolean
  /** Authentication waits for the handler, which reads the key from the body (see Pipeline.admitDeferred). */
  deferredAuth?: boolean
  /** The method the client sent, when it differs from the request's: a HEAD answered as a GET (app.ts). */
  method?: 'HEAD'
  /** A HEAD whose answer came from a GET of the same resource; that GET is the one logged. */
  answeredAsGet?: boolean
}

const states = new WeakMap<Request, RequestState>()

export function requestState(request: Request): RequestState {
  let state = states.get(request)
  if (!state) {
    // Requests that never passed the pipeline (non-API paths) still get an id.
    state = { requestId: `req_${ulid()}`, startedAt: performance.now(), headers: {} }
    state.headers['x-request-id'] = state.requestId
    state.headers['api-version'] = API_VERSION
    states.set(request, state)
  }
  return state
}
