// Fixed-shape queries, built once by drizzle and run as prepared statements on the database or inside any open
// transaction. Building a query costs drizzle tens of microseconds every time (the SQL tree walked, the columns
// mapped); a prepared one is built once per process and driver, and postgres.js then also prepares it (named)
// once per connection, so Postgres parses and plans it once instead of on every call. PGlite runs in this
// process and parses every statement anyway: there only drizzle's building is saved.
//
// A statement's text is fixed: every value is a `sql.placeholder`, and a variable-length list goes as one array
// parameter (`= any(…)`), so the number of statements is bounded by the shapes the code names, never by values.
import { is, SQL } from 'drizzle-orm'
import type { Db } from './client.ts'

/** A database handle or an open transaction on it (drizzle's). */
export type Executor = Pick<Db, 'insert' | 'select' | 'update' | 'delete' | 'execute' | '$with' | 'with'>

interface PreparedQuery<Result> { execute(values?: Record<string, unknown>): Promise<Result> }

/**
 * Drizzle binds a prepared query to the connection it was prepared on; to run one built once inside a transaction
 * it runs a copy bound to that transaction's connection. Both drivers' prepared queries (postgres-js, pglite)
 * keep it in `client` and read it on every execute (drizzle-orm 0.45); the suites on both backends run these
 * statements inside transactions, where a wrong binding would write outside them or wait forever (PGlite).
 */
interface Internals {
  session: { client: unknown; constructor: object; prepareQuery(query: unknown, fields: undefined, name: string, arrayMode: boolean): PreparedQuery<unknown> }
  dialect: { sqlToQuery(sql: SQL): unknown }
}
const internals = (executor: Executor) => executor as unknown as Internals

/**
 * `build` makes the query from any handle, with placeholders for its values; `name` names it on the server
 * (unique per shape). The returned function runs it with the values on the given database or transaction.
 */
export function prepared<Result>(name: string, build: (db: Executor) => { prepare(name: string): PreparedQuery<Result> }): (executor: Executor, values: Record<string, unknown>) => Promise<Result>
/** A statement drizzle's builders cannot express (a data-modifying CTE), as SQL; its result is the driver's own. */
export function prepared(name: string, build: (db: Executor) => SQL): (executor: Executor, values: Record<string, unknown>) => Promise<unknown>
export function prepared<Result>(name: string, build: (db: Executor) => { prepare(name: string): PreparedQuery<Result> } | SQL) {
  // One per driver kind: a process (a test) may hold a postgres.js and a PGlite database at once.
  const byDriver = new Map<object, PreparedQuery<Result>>()
  return (executor: Executor, values: Record<string, unknown>): Promise<Result> => {
    const { session, dialect } = internals(executor)
    let query = byDriver.get(session.constructor)
    if (!query) {
      const built = build(executor)
      query = is(built, SQL) ? session.prepareQuery(dialect.sqlToQuery(built), undefined, name, false) as PreparedQuery<Result> : built.prepare(name)
      byDriver.set(session.constructor, query)
    }
    const bound = Object.create(query) as PreparedQuery<Result> & { client: unknown }
    bound.client = session.client
    return bound.execute(values)
  }
}
