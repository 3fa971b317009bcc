// Step 3 (CONTRACT §6): 429, and the rate-limit headers every authenticated response carries. Personal tokens count
// exactly in the shared store (one round trip); device keys feed the ingest hot path, so they count locally and
// reconcile in the background (see ../rate-limit.ts).
import type { Principal } from '../../auth/authenticator.ts'
import type { Config } from '../../config.ts'
import { rateLimitFor } from '../../plans.ts'
import { ApiError } from '../errors.ts'
import type { Hit, RateLimiter } from '../rate-limit.ts'
import type { RateLimitState, RequestState } from '../request-state.ts'

/** The refusal of a request over its key's limit, over HTTP (429) and MQTT alike. */
export function rateLimited(limit: number, windowSeconds: number, resetSeconds: number): ApiError {
  return new ApiError('rate_limited', `This key may make ${limit} requests every ${windowSeconds} s; try again in ${resetSeconds} s.`, { headers: { 'retry-after': String(resetSeconds) } })
}

/** The rate-limit header values fixed by a key's limit (the window is the pipeline's), made once per limit. */
interface FixedTexts { policy: string; limit: string }

export function rateLimitCheck(config: Config, rateLimiter: RateLimiter) {
  const windowSeconds = config.rateLimitWindowSeconds
  const windowMs = windowSeconds * 1000
  const fixedTexts = new Map<number, FixedTexts>()
  const fixedTextsFor = (limit: number) => {
    let texts = fixedTexts.get(limit)
    if (!texts) { texts = { policy: `"default";q=${limit};w=${windowSeconds}`, limit: String(limit) }; fixedTexts.set(limit, texts) }
    return texts
  }

  function countAgainstLimit(state: RequestState, principal: Principal, { count, resetMs }: Hit) {
    const limit = rateLimitFor(config, principal.plan, principal.kind)
    const resetSeconds = Math.max(1, Math.ceil(resetMs / 1000))
    const rl: RateLimitState = { limit, remaining: Math.max(0, limit - count), windowSeconds, resetSeconds, resetAt: Math.ceil((Date.now() + resetMs) / 1000) }
    state.rateLimit = rl
    const fixed = fixedTextsFor(limit)
    state.headers['ratelimit-policy'] = fixed.policy
    state.headers['ratelimit'] = `"default";r=${rl.remaining};t=${rl.resetSeconds}`
    state.headers['x-ratelimit-limit'] = fixed.limit
    state.headers['x-ratelimit-remaining'] = String(rl.remaining)
    state.headers['x-ratelimit-reset'] = String(rl.resetAt)
    if (count > limit) {
      throw rateLimited(limit, windowSeconds, resetSeconds)
    }
  }

  /** Counts the request against its key; a promise only when the shared store must answer (personal tokens). */
  return function countRequest(state: RequestState, principal: Principal): void | Promise<void> {
    if (principal.kind === 'device') return countAgainstLimit(state, principal, rateLimiter.local(principal.keyId, windowMs))
    return rateLimiter.exact(principal.keyId, windowMs).then((hit) => countAgainstLimit(state, principal, hit))
  }
}
