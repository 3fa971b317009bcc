// The shared store's pub/sub channel names, in one place: a publisher and its subscribers (often in different
// folders and processes) must agree on them, and neither should import the other for a string.

/** Key and account revocations, so every process drops them from its key cache at once. */
export const AUTH_CHANNEL = 'auth:invalidate'
/** A device's channels changed or it was deleted, so every process re-reads it into its ingest cache. */
export const DEVICE_CHANNEL = 'devices:invalidate'
/** Carries an account id: that account's alert rules changed, so every process's evaluator re-reads them. */
export const RULES_CHANNEL = 'alert-rules:invalidate'
/** Carries `origin \t rule \t kind \t device \t channel \t environment \t 1|0` when an alert opened (1) or closed (0). */
export const STATE_CHANNEL = 'alerts:state'
/** Carries `origin \t batch…`: readings a process wrote without the ingest log, for every other process's streams (src/streams/hub.ts). */
export const READINGS_CHANNEL = 'readings:written'
/** Carries a process's origin id: it holds readings streams, so the others publish their written batches (src/streams/hub.ts). */
export const LISTENING_CHANNEL = 'readings:listening'
