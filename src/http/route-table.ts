import { ROUTE_POLICY, type RoutePolicy } from './operation.ts'

export interface ApiRoute { method: string; path: string; policy: RoutePolicy }

interface PathEntry {
  path: string
  methods: Map<string, ApiRoute>
  allow: string
  allPublic: boolean
  /** The answers match() gives for this path, built once: match() runs on every request. */
  routeMatches: Map<string, RouteMatch>
  methodMismatch: RouteMatch
}

export type RouteMatch =
  | { kind: 'route'; route: ApiRoute; allPublic: boolean }
  | { kind: 'method'; allow: string; allPublic: boolean }
  | { kind: 'none' }

const NO_MATCH: RouteMatch = { kind: 'none' }

/**
 * The served /api/v1 routes, indexed for the request pipeline, which must know a route's policy (and which
 * methods its path allows, for 405) before Elysia parses the body. Built from the app's own route list.
 */
export class RouteTable {
  private readonly staticPaths = new Map<string, PathEntry>()
  private readonly paramPaths: { pattern: RegExp; entry: PathEntry }[] = []

  constructor(routes: readonly { method: string; path: string; hooks?: { detail?: Record<string, unknown> } }[], prefix: string) {
    const entries = new Map<string, PathEntry>()
    for (const route of routes) {
      if (!route.path.startsWith(prefix)) continue
      const policy = route.hooks?.detail?.[ROUTE_POLICY] as RoutePolicy | undefined
      if (!policy) throw new Error(`${route.method} ${route.path} declares no operation policy (use op())`)
      let entry = entries.get(route.path)
      if (!entry) { entry = { path: route.path, methods: new Map(), allow: '', allPublic: true, routeMatches: new Map(), methodMismatch: NO_MATCH }; entries.set(route.path, entry) }
      entry.methods.set(route.method, { method: route.method, path: route.path, policy })
    }
    for (const entry of entries.values()) {
      entry.allow = [...entry.methods.keys()].sort().join(', ')
      entry.allPublic = [...entry.methods.values()].every((r) => r.policy.public)
      for (const [method, route] of entry.methods) entry.routeMatches.set(method, { kind: 'route', route, allPublic: entry.allPublic })
      entry.methodMismatch = { kind: 'method', allow: entry.allow, allPublic: entry.allPublic }
      if (entry.path.includes(':')) {
        const source = entry.path.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')
        this.paramPaths.push({ pattern: new RegExp(`^${source}$`), entry })
      } else {
        this.staticPaths.set(entry.path, entry)
      }
    }
  }

  match(method: string, path: string): RouteMatch {
    let entry = this.staticPaths.get(path)
    if (!entry) for (const candidate of this.paramPaths) if (candidate.pattern.test(path)) { entry = candidate.entry; break }
    if (!entry) return NO_MATCH
    return entry.routeMatches.get(method) ?? entry.methodMismatch
  }
}
