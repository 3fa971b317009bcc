// The shared store's pub/sub channel names, in one place: a publisher and its subscribers (often in different
// folders and processes) must agree on them, and neither should import the other for a string.

/** Key and account revocations, so every process drops them from its key cache at once. */
export const AUTH_CHANNEL = 'auth:invalidate'
/** A device's channels changed or it was deleted, so every process re-reads it into its ingest cache. */
export const DEVICE_CHANNEL = 'devices:invalidate'
