// One call = one or more attempts of the same request. What may be tried again, and when:
//
// - 429 and 503, on any request: the service refused it before doing anything ("nothing was changed",
//   CONTRACT §3 and §6), so even a POST without a key is safe to send again. The wait is the service's:
//   Retry-After, else the reset in the RateLimit header when it says nothing remains, else our backoff.
// - network errors, timeouts and other 5xx, only on requests that cannot write twice: GETs, and writes that
//   carry an Idempotency-Key (kept the same on every attempt, so the service replays the first result instead
//   of writing again). Another POST, PATCH or DELETE may have been applied before the answer was lost, so it
//   is not repeated behind the caller's back.
// - 409 idempotency_key_in_use: the first attempt of this very call is still being processed (we gave up on
//   it, the service did not); a later attempt gets its stored answer.
//
// Attempts are bounded (maxAttempts), and so is any one wait (maxDelayMs): a longer Retry-After is thrown to
// the caller at once as the 429/503 ProblemError, instead of sleeping for minutes inside a call.
import { ProblemError } from './errors.ts'
import { ROUTES, type RoutedOperationId } from './routes.ts'
import type { Input, ResultOf } from './types.ts'

/** Any fetch: the global one by default; tests and proxies wrap it. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>

export interface RetryOptions {
  /** Attempts per call, the first included (default 4); 1 turns retries off. */
  maxAttempts?: number
  /** The first wait when the service gives no hint (default 250 ms); it doubles on each retry, with jitter. */
  baseDelayMs?: number
  /** The longest wait before one retry (default 60 s); a service asking for longer gets its error thrown at once. */
  maxDelayMs?: number
}

/** What `onRetry` is told before each wait. */
export interface RetryEvent {
  operationId: RoutedOperationId
  /** The attempt that failed (1 for the first). */
  attempt: number
  /** How long the SDK waits before the next attempt. */
  delayMs: number
  /** The answer's status, when there was an answer. */
  status?: number
  /** The network error or timeout, when there was none. */
  error?: unknown
  /** The Idempotency-Key every attempt of this call carries, if the call has one. */
  idempotencyKey?: string
}

export interface ClientOptions {
  /** The service's address, e.g. `https://records.example.com` (a trailing `/api/v1` is accepted and dropped). */
  baseUrl: string
  /** A personal access token (or a device key, for a device's own calls). Public calls work without one. */
  apiKey?: string
  fetch?: FetchLike
  /** Per attempt (default 30 s); a timed-out attempt counts as a network error. */
  timeoutMs?: number
  retry?: RetryOptions
  /** Called before each retry's wait: for logs and metrics. */
  onRetry?: (event: RetryEvent) => void
  /** Sent on every request (e.g. a tracing header). */
  headers?: Record<string, string>
}

export interface CallOptions {
  /** Aborts the call, waits included; an aborted call is never retried. */
  signal?: AbortSignal
  /**
   * For operations that take one (POST /activities, POST /environment/alert-rules): the key to send instead of
   * a fresh UUID, e.g. one stored with a queued write so that resending it after a restart is still one write.
   */
  idempotencyKey?: string
}

/** The key's budget as the last answer reported it (RateLimit-Policy and RateLimit, CONTRACT §6). */
export interface RateLimitStatus {
  /** The policy's name (`default`). */
  policy: string
  /** Requests allowed per window (`q`), and the window in seconds (`w`), from RateLimit-Policy. */
  limit?: number
  windowSeconds?: number
  /** Requests left in this window (`r`) and seconds until it resets (`t`), from RateLimit. */
  remaining: number
  resetSeconds: number
  /** When that answer arrived. */
  observedAt: Date
}

export interface Result<K extends RoutedOperationId> { data: ResultOf<K>; response: Response }

const DEFAULTS = { maxAttempts: 4, baseDelayMs: 250, maxDelayMs: 60_000, timeoutMs: 30_000 }

export class Transport {
  private readonly baseUrl: string
  private readonly retry: Required<RetryOptions>
  /** See RateLimitStatus; undefined until an authenticated answer arrives. */
  rateLimit: RateLimitStatus | undefined

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '').replace(/\/api\/v1$/, '')
    this.retry = { ...DEFAULTS, ...stripUndefined(options.retry ?? {}) }
  }

  async request<K extends RoutedOperationId>(operationId: K, input: Input<K>, call: CallOptions = {}): Promise<Result<K>> {
    const route: { method: string; path: string; idempotencyKey?: boolean } = ROUTES[operationId]
    const { path, query, body, headers: given } = input as { path?: object; query?: object; body?: unknown; headers?: Record<string, string | undefined> }
    const url = this.baseUrl + fillPath(route.path, path) + queryString(query)

    const headers = new Headers(this.options.headers)
    headers.set('accept', 'application/json')
    if (this.options.apiKey) headers.set('authorization', `Bearer ${this.options.apiKey}`)
    for (const [name, value] of Object.entries(given ?? {})) if (value !== undefined) headers.set(name, value)
    // One key per logical call, made before the first attempt, so every retry is the same request to the service.
    if (route.idempotencyKey && !headers.has('idempotency-key')) headers.set('idempotency-key', call.idempotencyKey ?? crypto.randomUUID())
    const idempotencyKey = headers.get('idempotency-key') ?? undefined
    if (body !== undefined) headers.set('content-type', 'application/json')
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const mayRepeat = route.method === 'GET' || idempotencyKey !== undefined

    const fetchFn = this.options.fetch ?? ((u, init) => fetch(u, init))
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= this.retry.maxAttempts
      const signal = call.signal ? AbortSignal.any([call.signal, AbortSignal.timeout(this.timeoutMs)]) : AbortSignal.timeout(this.timeoutMs)
      let response: Response
      let text: string | undefined
      try {
        response = await fetchFn(url, { method: route.method, headers, body: payload, signal })
        // Read here: a body cut off (or timed out) half way is as lost as an answer that never came.
        if (response.ok) text = await response.text()
      } catch (error) {
        if (call.signal?.aborted || !mayRepeat || last) throw error
        await this.wait({ operationId, attempt, delayMs: this.backoff(attempt), error, idempotencyKey }, call.signal)
        continue
      }
      this.observeRateLimit(response.headers)
      if (response.ok) return { data: parseBody(response, text) as ResultOf<K>, response }

      const refused = response.status === 429 || response.status === 503
      if (!last && (refused || (mayRepeat && response.status >= 500))) {
        const delayMs = this.serverDelay(response) ?? this.backoff(attempt)
        if (delayMs <= this.retry.maxDelayMs) {
          await response.body?.cancel()
          await this.wait({ operationId, attempt, delayMs, status: response.status, idempotencyKey }, call.signal)
          continue
        }
      }
      const problem = await ProblemError.from(response)
      if (!last && idempotencyKey !== undefined && problem.code === 'idempotency_key_in_use') {
        await this.wait({ operationId, attempt, delayMs: this.backoff(attempt), status: response.status, idempotencyKey }, call.signal)
        continue
      }
      throw problem
    }
  }

  /**
   * Opens a stream (text/event-stream): one attempt, its Response as it came, the body unread. With `lastEventId`,
   * sent as Last-Event-ID. No timeout: a stream stays open.
   */
  open<K extends RoutedOperationId>(operationId: K, input: Input<K>, lastEventId: string | undefined, signal: AbortSignal | undefined): Promise<Response> {
    const route: { method: string; path: string } = ROUTES[operationId]
    const { path, query } = input as { path?: object; query?: object }
    const headers = new Headers(this.options.headers)
    headers.set('accept', 'text/event-stream')
    if (this.options.apiKey) headers.set('authorization', `Bearer ${this.options.apiKey}`)
    if (lastEventId !== undefined) headers.set('last-event-id', lastEventId)
    const fetchFn = this.options.fetch ?? ((u, init) => fetch(u, init))
    return fetchFn(this.baseUrl + fillPath(route.path, path) + queryString(query), { method: route.method, headers, signal })
  }

  private get timeoutMs(): number { return this.options.timeoutMs ?? DEFAULTS.timeoutMs }

  private async wait(event: RetryEvent, signal: AbortSignal | undefined): Promise<void> {
    this.options.onRetry?.(event)
    await sleep(event.delayMs, signal)
  }

  /** Exponential, with "full jitter" in its upper half, so clients that failed together do not retry together. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1))
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2))
  }

  /** The wait the service asked for, plus a little jitter on top (never less than it asked). */
  private serverDelay(response: Response): number | undefined {
    let ms = retryAfterMs(response.headers.get('retry-after'))
    if (ms === undefined) {
      // No Retry-After: a RateLimit header saying nothing is left gives the seconds until the window resets.
      const state = parseRateLimit(response.headers.get('ratelimit'))
      if (state?.params.r === 0 && state.params.t !== undefined) ms = state.params.t * 1000
    }
    return ms === undefined ? undefined : Math.ceil(ms + Math.random() * Math.min(1000, ms * 0.1))
  }

  private observeRateLimit(headers: Headers): void {
    const state = parseRateLimit(headers.get('ratelimit'))
    if (state?.params.r === undefined || state.params.t === undefined) return
    const policy = parseRateLimit(headers.get('ratelimit-policy'))
    this.rateLimit = {
      policy: state.name, limit: policy?.params.q, windowSeconds: policy?.params.w,
      remaining: state.params.r, resetSeconds: state.params.t, observedAt: new Date(),
    }
  }
}

/**
 * The first item of a RateLimit or RateLimit-Policy field (draft-ietf-httpapi-ratelimit-headers), as the service
 * sends them: `"default";r=4;t=2` and `"default";q=600;w=60`.
 */
export function parseRateLimit(value: string | null): { name: string; params: Record<string, number> } | undefined {
  if (!value) return undefined
  const [name = '', ...params] = value.split(',')[0]!.split(';').map((part) => part.trim())
  const numbers: Record<string, number> = {}
  for (const param of params) {
    const [key, raw] = param.split('=')
    const n = Number(raw)
    if (key && raw !== undefined && Number.isFinite(n)) numbers[key] = n
  }
  return { name: name.replace(/^"(.*)"$/, '$1'), params: numbers }
}

/** Retry-After as delta-seconds or an HTTP date (RFC 9110 §10.2.3), in milliseconds from now. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const at = Date.parse(text)
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined
}

function fillPath(template: string, params: object | undefined): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = (params as Record<string, unknown> | undefined)?.[name]
    if (value === undefined || value === null || value === '') throw new TypeError(`missing path parameter ${name} for ${template}`)
    return encodeURIComponent(String(value))
  })
}

function queryString(query: object | undefined): string {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue
    for (const item of Array.isArray(value) ? value : [value]) search.append(name, String(item))
  }
  const text = search.toString()
  return text ? `?${text}` : ''
}

function parseBody(response: Response, text: string | undefined): unknown {
  if (response.status === 204 || !text) return undefined
  return response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => { clearTimeout(timer); reject(signal!.reason) }
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve() }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}
