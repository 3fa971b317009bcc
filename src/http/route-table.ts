import { expectation } from './field-errors.ts'
import { ROUTE_POLICY, type RoutePolicy } from './operation.ts'

export interface ApiRoute {
  method: string; path: string; policy: RoutePolicy
  /** Query parameters the route's schema types as integers, and what each must be (checks/query-integers.ts). */
  integerQuery: readonly { name: string; message: string }[]
}

/** The answers match() gives for one path, built once: match() runs on every request. */
interface PathEntry { routeMatches: Map<string, RouteMatch>; methodMismatch: RouteMatch }

export type RouteMatch =
  | { kind: 'route'; route: ApiRoute; allPublic: boolean; allow: string }
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
  /** Every method some route of the server answers (HEAD with GET): others are refused on any path. */
  readonly servedMethods = new Set<string>(['HEAD'])
  /** The methods each path outside the prefix (console, docs, health) answers, for the Allow of a 405. */
  private readonly outsideStatic = new Map<string, string[]>()
  private readonly outsideParams: { pattern: RegExp; methods: string[] }[] = []

  constructor(routes: readonly { method: string; path: string; hooks?: { detail?: Record<string, unknown>; query?: unknown } }[], prefix: string) {
    const methodsByPath = new Map<string, Map<string, ApiRoute>>()
    for (const route of routes) {
      this.servedMethods.add(route.method)
      if (!route.path.startsWith(prefix)) {
        const methods = route.path.includes(':') ? undefined : this.outsideStatic.get(route.path)
        if (methods) methods.push(route.method)
        else if (route.path.includes(':')) this.outsideParams.push({ pattern: pathPattern(route.path), methods: [route.method] })
        else this.outsideStatic.set(route.path, [route.method])
        continue
      }
      const policy = route.hooks?.detail?.[ROUTE_POLICY] as RoutePolicy | undefined
      if (!policy) throw new Error(`${route.method} ${route.path} declares no operation policy (use op())`)
      let methods = methodsByPath.get(route.path)
      if (!methods) { methods = new Map(); methodsByPath.set(route.path, methods) }
      methods.set(route.method, { method: route.method, path: route.path, policy, integerQuery: integerQueryParams(route.hooks?.query) })
    }
    for (const [path, methods] of methodsByPath) {
      const allPublic = [...methods.values()].every((r) => r.policy.public)
      const allow = withHead([...methods.keys()])
      const entry: PathEntry = {
        routeMatches: new Map([...methods].map(([method, route]) => [method, { kind: 'route', route, allPublic, allow }])),
        methodMismatch: { kind: 'method', allow, allPublic },
      }
      if (path.includes(':')) {
        this.paramPaths.push({ pattern: pathPattern(path), entry })
      } else {
        this.staticPaths.set(path, entry)
      }
    }
  }

  /** What a path outside the prefix answers, as an Allow header (empty for a path no route has). */
  allowOutside(path: string): string {
    const methods = this.outsideStatic.get(path) ?? this.outsideParams.filter((p) => p.pattern.test(path)).flatMap((p) => p.methods)
    return withHead(methods)
  }

  match(method: string, path: string): RouteMatch {
    let entry = this.staticPaths.get(path)
    if (!entry) for (const candidate of this.paramPaths) if (candidate.pattern.test(path)) { entry = candidate.entry; break }
    if (!entry) return NO_MATCH
    return entry.routeMatches.get(method) ?? entry.methodMismatch
  }
}

/** A route's query parameters whose schema is an integer (`t.Integer`, optional or not), with the schema's own message. */
function integerQueryParams(querySchema: unknown): { name: string; message: string }[] {
  const properties = (querySchema as { properties?: Record<string, { type?: string; anyOf?: { type?: string }[] }> } | undefined)?.properties ?? {}
  return Object.entries(properties)
    .filter(([, schema]) => schema.type === 'integer' || schema.anyOf?.some((branch) => branch.type === 'integer'))
    .map(([name, schema]) => ({ name, message: `must be ${expectation(schema)}` }))
}

/** An Allow header's value: the methods, and HEAD wherever GET is served (app.ts answers it as a GET). */
function withHead(methods: string[]): string {
  const all = new Set(methods)
  if (all.has('GET')) all.add('HEAD')
  return [...all].sort().join(', ')
}

/** `/console/devices/:id` → a pattern matching `/console/devices/<anything but a slash>`. */
function pathPattern(path: string): RegExp {
  const source = path.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')
  return new RegExp(`^${source}$`)
}
