import { Elysia } from 'elysia'
import type { Principal } from '../auth/authenticator.ts'
import { ApiError } from './errors.ts'
import { requestState } from './request-state.ts'

/** The verified caller of an authenticated route (the pipeline guarantees one is there). */
export function principalOf(request: Request): Principal {
  const principal = requestState(request).principal
  if (!principal) throw new ApiError('authentication_required', 'This route needs a key.')
  return principal
}

/**
 * `principal: true` on a route gives its handler `principal`, the verified caller, typed. Every module that has
 * such routes uses this plugin (Elysia deduplicates it by name). The pipeline admitted the request before any
 * handler runs, so the lookup cannot fail on a route that needs a key.
 */
export const principalMacro = new Elysia({ name: 'principal' }).macro({
  principal: { resolve: ({ request }) => ({ principal: principalOf(request) }) },
})
