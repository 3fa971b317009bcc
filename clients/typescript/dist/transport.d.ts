import { type RoutedOperationId } from './routes.ts';
import type { Input, ResultOf } from './types.ts';
/** Any fetch: the global one by default; tests and proxies wrap it. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;
export interface RetryOptions {
    /** Attempts per call, the first included (default 4); 1 turns retries off. */
    maxAttempts?: number;
    /** The first wait when the service gives no hint (default 250 ms); it doubles on each retry, with jitter. */
    baseDelayMs?: number;
    /** The longest wait before one retry (default 60 s); a service asking for longer gets its error thrown at once. */
    maxDelayMs?: number;
}
/** What `onRetry` is told before each wait. */
export interface RetryEvent {
    operationId: RoutedOperationId;
    /** The attempt that failed (1 for the first). */
    attempt: number;
    /** How long the SDK waits before the next attempt. */
    delayMs: number;
    /** The answer's status, when there was an answer. */
    status?: number;
    /** The network error or timeout, when there was none. */
    error?: unknown;
    /** The Idempotency-Key every attempt of this call carries, if the call has one. */
    idempotencyKey?: string;
}
export interface ClientOptions {
    /** The service's address, e.g. `https://records.example.com` (a trailing `/api/v1` is accepted and dropped). */
    baseUrl: string;
    /** A personal access token (or a device key, for a device's own calls). Public calls work without one. */
    apiKey?: string;
    fetch?: FetchLike;
    /** Per attempt (default 30 s); a timed-out attempt counts as a network error. */
    timeoutMs?: number;
    retry?: RetryOptions;
    /** Called before each retry's wait: for logs and metrics. */
    onRetry?: (event: RetryEvent) => void;
    /** Sent on every request (e.g. a tracing header). */
    headers?: Record<string, string>;
}
export interface CallOptions {
    /** Aborts the call, waits included; an aborted call is never retried. */
    signal?: AbortSignal;
    /**
     * For operations that take one (POST /activities, POST /environment/alert-rules): the key to send instead of
     * a fresh UUID, e.g. one stored with a queued write so that resending it after a restart is still one write.
     */
    idempotencyKey?: string;
}
/** The key's budget as the last answer reported it (RateLimit-Policy and RateLimit, CONTRACT §6). */
export interface RateLimitStatus {
    /** The policy's name (`default`). */
    policy: string;
    /** Requests allowed per window (`q`), and the window in seconds (`w`), from RateLimit-Policy. */
    limit?: number;
    windowSeconds?: number;
    /** Requests left in this window (`r`) and seconds until it resets (`t`), from RateLimit. */
    remaining: number;
    resetSeconds: number;
    /** When that answer arrived. */
    observedAt: Date;
}
export interface Result<K extends RoutedOperationId> {
    data: ResultOf<K>;
    response: Response;
}
export declare class Transport {
    private readonly options;
    private readonly baseUrl;
    private readonly retry;
    /** See RateLimitStatus; undefined until an authenticated answer arrives. */
    rateLimit: RateLimitStatus | undefined;
    constructor(options: ClientOptions);
    request<K extends RoutedOperationId>(operationId: K, input: Input<K>, call?: CallOptions): Promise<Result<K>>;
    /**
     * Opens a stream (text/event-stream): one attempt, its Response as it came, the body unread. With `lastEventId`,
     * sent as Last-Event-ID. No timeout: a stream stays open.
     */
    open<K extends RoutedOperationId>(operationId: K, input: Input<K>, lastEventId: string | undefined, signal: AbortSignal | undefined): Promise<Response>;
    private get timeoutMs();
    private wait;
    /** Exponential, with "full jitter" in its upper half, so clients that failed together do not retry together. */
    private backoff;
    /** The wait the service asked for, plus a little jitter on top (never less than it asked). */
    private serverDelay;
    private observeRateLimit;
}
/**
 * The first item of a RateLimit or RateLimit-Policy field (draft-ietf-httpapi-ratelimit-headers), as the service
 * sends them: `"default";r=4;t=2` and `"default";q=600;w=60`.
 */
export declare function parseRateLimit(value: string | null): {
    name: string;
    params: Record<string, number>;
} | undefined;
/** Retry-After as delta-seconds or an HTTP date (RFC 9110 §10.2.3), in milliseconds from now. */
export declare function retryAfterMs(value: string | null, now?: number): number | undefined;
