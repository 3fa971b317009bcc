// Step 5 (CONTRACT §2): 403, in the contract's order: a device key outside its routes, then the plan, then the scope.
import type { Principal } from '../../auth/authenticator.ts'
import { planHasAccess } from '../../plans.ts'
import type { PlatformStatusSource } from '../../platform.ts'
import { ApiError } from '../errors.ts'
import type { ApiRoute } from '../route-table.ts'

export function authorize(platform: PlatformStatusSource, principal: Principal, route: ApiRoute): void {
  const policy = route.policy
  if (principal.kind === 'device' && !policy.deviceAllowed) {
    throw new ApiError('device_key_not_allowed', 'A device key may only submit readings and read its own device.')
  }
  if (!planHasAccess(principal.plan, principal.liveTestAllowlisted, platform.current())) {
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
