// What ends a server process, and what does not (see keepServingThroughOrphanedConnectionErrors).
/** Errors of a connection's socket: what a peer (a database, the shared store) going away raises. */
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'])

/**
 * A connection error raised on a socket no one listens to any more ends a process: an 'error' event without a
 * listener is thrown. One killed a server in CI as its records database stopped (test/processes/postgres-outage.test.ts:
 * `connect ECONNREFUSED` to Postgres's port, only node:net frames on its stack; which driver's socket it was is not
 * known, and 7 runs of that test since, 4 of them on a loaded machine, did not show it again). Such an error answers
 * no request and changes nothing here: the drivers report the outage to the requests they hold, which answer 503. It
 * is logged and the process serves on. Anything else uncaught still ends the process, as it did.
 */
export function keepServingThroughOrphanedConnectionErrors(log: { error(message: string, fields?: Record<string, unknown>): void }) {
  process.on('uncaughtException', (error) => {
    const { code, syscall } = error as NodeJS.ErrnoException
    if (code !== undefined && syscall !== undefined && CONNECTION_ERRORS.has(code)) {
      log.error('connection error outside any request', { code, syscall, error: String(error) })
      return
    }
    console.error(error)
    process.exit(1)
  })
}
