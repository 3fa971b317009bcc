// Whether an error means the database could not be reached or could not answer in time, rather than that the
// query was wrong: those become 503 service_unavailable with Retry-After (the client should retry), never a 500.
// Drivers and drizzle wrap errors in one another, so the whole `cause` chain is looked at.

/** Node/Bun socket errors and postgres.js's own connection errors. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH',
  'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED',
])

/**
 * SQLSTATEs that say "not now" rather than "not this": connection exceptions (class 08), too many connections,
 * the server shutting down or starting up, and a statement cancelled by statement_timeout.
 */
function isTransientSqlState(code: string): boolean {
  return code.startsWith('08') || code === '53300' || code === '57P01' || code === '57P02' || code === '57P03' || code === '57014'
}

interface Coded { code?: unknown; errno?: unknown; cause?: unknown; message?: unknown }

export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error as Coded | undefined, depth = 0; e && depth < 5; e = e.cause as Coded | undefined, depth++) {
    const code = typeof e.code === 'string' ? e.code : undefined
    if (code && (CONNECTION_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && isTransientSqlState(code)))) return true
    // PGlite closed under a request (shutdown) says so only in its message.
    if (typeof e.message === 'string' && e.message === 'PGlite is closed') return true
  }
  return false
}
