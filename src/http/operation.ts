// Every route declares who may call it here, next to its schemas; the request pipeline and the OpenAPI
// document both read this one declaration (the route's `detail`), so they cannot disagree.
import type { Scope } from '../auth/scopes.ts'

export type KeyKind = 'personal' | 'device'

export interface OperationOptions {
  /** The operation's stable name in the document and in generated clients: camelCase, verb first (listAnimals). */
  operationId: string
  summary: string
  description?: string
  tags: string[]
  /** Who may call: `public` (no key), or the key kinds accepted. Defaults to personal tokens. */
  auth?: 'public' | readonly KeyKind[]
  /** Scopes a personal token must hold (all of them). Empty: any valid personal token. */
  scopes?: readonly Scope[]
  /** Statuses this operation can answer beyond the ones the pipeline gives every operation. */
  errors?: readonly number[]
  /** Request media types accepted for a body (default JSON). */
  accepts?: readonly string[]
  /** Marks the route deprecated: it then sends Deprecation, Sunset and Link headers (CONTRACT §9). */
  deprecation?: { since: Date; sunset: Date; link: string }
  /** The success response carries the record's ETag (and PATCH/DELETE honour If-Match). */
  etag?: boolean
  /** The operation honours Idempotency-Key; replays carry Idempotent-Replayed. */
  idempotent?: boolean
  /** A query (or form/JSON body) field that may carry the key instead of a header, for constrained firmware. */
  keyParam?: string
  /** The key may also come as `keyParam` in the body (the handler authenticates it once the body is read). */
  keyInBody?: boolean
  /** Media types the success response offers besides JSON (chosen by Accept or a query parameter), with their headers. */
  produces?: Record<string, { schema: object; headers?: readonly string[] }>
  hide?: boolean
}

/** The security schemes a key kind may be presented by: `Authorization: Bearer` or `X-API-Key` (see openapi-document.ts). */
const SECURITY_SCHEMES = {
  personal: ['personalToken', 'personalTokenHeader'],
  device: ['deviceKey', 'deviceKeyHeader'],
} as const
/** The scheme for a device key in a query parameter (`keyParam`). */
export const DEVICE_KEY_QUERY_SCHEME = 'deviceKeyQuery'

/** Internal fields ride along on `detail` under this key and are removed from the published document. */
export const ROUTE_POLICY = 'x-route-policy'

export interface RoutePolicy {
  public: boolean
  /** Scopes required of a personal token, or null when personal tokens may not call the route. */
  personalScopes: readonly string[] | null
  deviceAllowed: boolean
  errors: readonly number[]
  accepts: readonly string[]
  deprecation: OperationOptions['deprecation'] | undefined
  etag: boolean
  idempotent: boolean
  keyParam: string | undefined
  produces: OperationOptions['produces']
}

const MIN_SUNSET_NOTICE_MS = 90 * 24 * 3600 * 1000

export function op(options: OperationOptions) {
  const auth = options.auth ?? ['personal']
  const scopes = [...(options.scopes ?? [])]
  if (options.deprecation && options.deprecation.sunset.getTime() - options.deprecation.since.getTime() < MIN_SUNSET_NOTICE_MS) {
    throw new Error(`${options.summary}: a sunset must come at least 90 days after the deprecation`)
  }
  const policy: RoutePolicy = {
    public: auth === 'public',
    personalScopes: auth !== 'public' && auth.includes('personal') ? scopes : null,
    deviceAllowed: auth !== 'public' && auth.includes('device'),
    errors: options.errors ?? [],
    accepts: options.accepts ?? ['application/json'],
    deprecation: options.deprecation,
    etag: options.etag ?? false,
    idempotent: options.idempotent ?? false,
    keyParam: options.keyParam,
    produces: options.produces,
  }
  // Alternatives: any one of them admits the request. OpenAPI has no scheme for a key inside the body, so an
  // operation taking one also lists the empty requirement and says so in its description.
  const security: Record<string, string[]>[] = auth === 'public' ? [] : auth.flatMap((kind) => SECURITY_SCHEMES[kind].map((scheme) => ({ [scheme]: kind === 'personal' ? scopes : [] })))
  if (options.keyParam) security.push({ [DEVICE_KEY_QUERY_SCHEME]: [] })
  if (options.keyInBody) security.push({})
  return {
    operationId: options.operationId,
    summary: options.summary,
    ...(options.description ? { description: options.description } : {}),
    tags: options.tags,
    security,
    ...(options.deprecation ? { deprecated: true } : {}),
    ...(options.hide ? { hide: true } : {}),
    [ROUTE_POLICY]: policy,
  }
}
