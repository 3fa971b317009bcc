// @husbandry/sdk: a typed client for the Animal-Husbandry Records Service API v1. See ../README.md.
export { HusbandryClient } from "./client.js";
export { ProblemError } from "./errors.js";
export { Paginator } from "./pagination.js";
export { resumingStream } from "./streams.js";
export { NOT_COVERED, ROUTES } from "./routes.js";
export { parseRateLimit, retryAfterMs } from "./transport.js";
export { verifyWebhook, WebhookVerificationError } from "./webhooks.js";
