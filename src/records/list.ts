// One keyset-paged list over an account's records (CONTRACT §4): newest first, positioned after the last row
// of the previous page by (sort key, id), never by OFFSET.
import { and, desc, eq, lt, sql, type Placeholder, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import { prepared } from '../../db/prepared.ts'
import type { Deps } from '../deps.ts'
import { toPage, type CursorScope, type Page } from '../http/cursor.ts'
import { shownColumns } from './rows.ts'

export interface KeysetTable extends PgTable { id: PgColumn; account_id: PgColumn }

/** The filters given, each as a placeholder named after it (absent ones stay absent). */
export type Bound<F> = { [K in keyof F]: Placeholder | undefined }

export interface ListRequest<F extends Record<string, unknown> = Record<string, any>> {
  /** Names the list in its cursors and its prepared statements, so a cursor works on this list only. */
  list: string
  accountId: string
  table: KeysetTable
  /** The filters exactly as given; a cursor is bound to them. */
  filters: F
  /**
   * The list's conditions, given each present filter as a placeholder (its value is bound when the statement
   * runs), so a list has one prepared statement per set of filters present, whatever their values.
   */
  conditions: (bound: Bound<F>) => (SQL | undefined)[]
  limit?: number
  cursor?: string
  /** An immutable instant column to sort by before the id (e.g. occurred_at); default: the id alone (creation order). */
  sortBy?: PgColumn
}

type Statement = ReturnType<typeof prepared<any[]>>
/** By list and shape: the filters present and whether a cursor positions the page. */
const statements = new Map<string, Statement>()

function statementFor(request: ListRequest, present: string[]): Statement {
  const shape = `${request.list}(${present.join(',')}${request.cursor ? ';after' : ''})`
  let statement = statements.get(shape)
  if (!statement) {
    const { table, sortBy } = request
    const bound = Object.fromEntries(present.map((key) => [key, sql.placeholder(key)]))
    const where = [eq(table.account_id, sql.placeholder('account')), ...request.conditions(bound)]
    if (request.cursor) {
      where.push(sortBy
        ? sql`(${sortBy}, ${table.id}) < (${sql.placeholder('after0')}::timestamptz, ${sql.placeholder('after1')})`
        : lt(table.id, sql.placeholder('after0')))
    }
    statement = prepared<any[]>(`list:${shape}`, (db) => db.select(shownColumns(table)).from(table as PgTable).where(and(...where))
      .orderBy(...(sortBy ? [desc(sortBy), desc(table.id)] : [desc(table.id)]))
      .limit(sql.placeholder('limit')))
    statements.set(shape, statement)
  }
  return statement
}

export async function listPage<Out, F extends Record<string, unknown>>(deps: Pick<Deps, 'cursors' | 'database'>, request: ListRequest<F>, present: (row: any) => Out): Promise<Page<Out>> {
  const { sortBy } = request
  const scope: CursorScope = { list: request.list, accountId: request.accountId, filters: request.filters }
  const limit = request.limit ?? 50
  const present_ = Object.keys(request.filters).filter((key) => request.filters[key] !== undefined).sort()
  const values: Record<string, unknown> = { account: request.accountId, limit: limit + 1 }
  for (const key of present_) values[key] = request.filters[key]
  if (request.cursor) {
    // The cursor's MAC proves we issued it for this list and filter set, so its position is trusted.
    const position = deps.cursors.decode(scope, request.cursor)
    values.after0 = String(position[0])
    if (sortBy) values.after1 = String(position[1])
  }
  const rows = await statementFor(request as ListRequest, present_)(deps.database.db, values)
  const positionOf = sortBy
    ? (row: any) => [row[sortBy.name] as string, row.id as string]
    : (row: any) => [row.id as string]
  return toPage(rows, limit, deps.cursors, scope, positionOf, present)
}
