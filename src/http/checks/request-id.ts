// Step 1 (CONTRACT §1): every response carries X-Request-Id: a valid incoming one is echoed, else ours stands.
import type { RequestState } from '../request-state.ts'

const REQUEST_ID_SHAPE = /^[A-Za-z0-9._:-]{1,128}$/

export function adoptRequestId(request: Request, state: RequestState): void {
  const incoming = request.headers.get('x-request-id')
  if (incoming !== null && REQUEST_ID_SHAPE.test(incoming)) {
    state.requestId = incoming
    state.headers['x-request-id'] = incoming
  }
}
