// The one scope table (CONTRACT §2): `<area>:read` and `<area>:write` for every data area, plus `keys:write`.
const SCOPE_AREAS = [
  'animals', 'activities', 'breeding', 'medical', 'contacts', 'sales', 'documents', 'environment', 'sensors', 'webhooks',
  // Additive to v1 (issue 16): threshold and stale-sensor alerts.
  'alerts',
] as const
export type ScopeArea = (typeof SCOPE_AREAS)[number]
/** Scopes about the account itself rather than a data area: `keys:write` signs in to the web console (/console). */
const ACCOUNT_SCOPES = ['keys:write'] as const
export type Scope = `${ScopeArea}:${'read' | 'write'}` | (typeof ACCOUNT_SCOPES)[number]

export const ALL_SCOPES: readonly Scope[] = [...SCOPE_AREAS.flatMap((area) => [`${area}:read`, `${area}:write`] as Scope[]), ...ACCOUNT_SCOPES]
const known = new Set<string>(ALL_SCOPES)

export function isScope(value: string): value is Scope {
  return known.has(value)
}

/** Parses a comma- or space-separated list of scope names; `all` or `*` grants every scope. */
export function parseScopes(text: string): Scope[] {
  const names = text.split(/[\s,]+/).filter(Boolean)
  if (names.includes('all') || names.includes('*')) return [...ALL_SCOPES]
  const unknown = names.filter((n) => !isScope(n))
  if (unknown.length) throw new Error(`unknown scope(s): ${unknown.join(', ')}; known: ${ALL_SCOPES.join(' ')}`)
  return [...new Set(names)] as Scope[]
}
