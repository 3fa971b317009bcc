// @husbandry/sdk: a typed client for the Animal-Husbandry Records Service API v1. See ../README.md.
export { HusbandryClient, type ConditionalOptions } from './client.ts'
export { ProblemError, type Problem, type ProblemDetail } from './errors.ts'
export { Paginator } from './pagination.ts'
export { resumingStream, type StreamEvent, type StreamOptions } from './streams.ts'
export { NOT_COVERED, ROUTES, type RoutedOperationId } from './routes.ts'
export { parseRateLimit, retryAfterMs, type CallOptions, type ClientOptions, type FetchLike, type RateLimitStatus, type Result, type RetryEvent, type RetryOptions } from './transport.ts'
export type { BodyOf, Input, ItemOf, ListQuery, OperationId, Page, QueryOf, ResultOf, Schemas } from './types.ts'
export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from './webhooks.ts'
/** The generated document types, for anything the names above do not cover. */
export type { components, operations, paths } from './api.ts'
