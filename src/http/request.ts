import type { Principal } from '../auth/authenticator.ts'
import { ApiError } from './errors.ts'
import { requestState } from './request-state.ts'

/** The verified caller of an authenticated route (the pipeline guarantees one is there). */
export function principalOf(request: Request): Principal {
  const principal = requestState(request).principal
  if (!principal) throw new ApiError('authentication_required', 'This route needs a key.')
  return principal
}
