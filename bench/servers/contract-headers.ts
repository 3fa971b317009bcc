// The seven headers CONTRACT puts on every authenticated response, with values that change per request as ours
// do (a new request id, a rate-limit count going down), for the baselines that answer like our server.
import { ulid } from '../../src/ids.ts'
import { API_VERSION } from '../../src/platform.ts'

const LIMIT = 1_000_000_000
const WINDOW_SECONDS = 60
let used = 0

export function contractHeaders(): Record<string, string> {
  used++
  const now = Date.now()
  const resetMs = WINDOW_SECONDS * 1000 - (now % (WINDOW_SECONDS * 1000))
  return {
    'x-request-id': `req_${ulid(now)}`,
    'api-version': API_VERSION,
    'ratelimit-policy': `"default";q=${LIMIT};w=${WINDOW_SECONDS}`,
    'ratelimit': `"default";r=${LIMIT - used};t=${Math.ceil(resetMs / 1000)}`,
    'x-ratelimit-limit': String(LIMIT),
    'x-ratelimit-remaining': String(LIMIT - used),
    'x-ratelimit-reset': String(Math.ceil((now + resetMs) / 1000)),
  }
}
