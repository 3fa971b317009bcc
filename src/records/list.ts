// One keyset-paged list over an account's records (CONTRACT §4): newest first, positioned after the last row
// of the previous page by (sort key, id), never by OFFSET.
import { and, desc, eq, lt, sql, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import type { Deps } from '../deps.ts'
import { toPage, type CursorScope, type Page } from '../http/cursor.ts'

export interface KeysetTable extends PgTable { id: PgColumn; account_id: PgColumn }

export interface ListRequest {
  /** Names the list in its cursors, so a cursor works on this list only. */
  list: string
  accountId: string
  table: KeysetTable
  /** The filters exactly as given; a cursor is bound to them. */
  filters: Record<string, unknown>
  conditions: (SQL | undefined)[]
  limit?: number
  cursor?: string
  /** An immutable instant column to sort by before the id (e.g. occurred_at); default: the id alone (creation order). */
  sortBy?: PgColumn
}

export async function listPage<Out>(deps: Deps, request: ListRequest, present: (row: any) => Out): Promise<Page<Out>> {
  const { table, sortBy } = request
  const scope: CursorScope = { list: request.list, accountId: request.accountId, filters: request.filters }
  const limit = request.limit ?? 50
  const where = [eq(table.account_id, request.accountId), ...request.conditions]
  if (request.cursor) {
    // The cursor's MAC proves we issued it for this list and filter set, so its position is trusted.
    const position = deps.cursors.decode(scope, request.cursor)
    where.push(sortBy
      ? sql`(${sortBy}, ${table.id}) < (${String(position[0])}::timestamptz, ${String(position[1])})`
      : lt(table.id, String(position[0])))
  }
  const rows: any[] = await deps.database.db.select().from(table as PgTable).where(and(...where))
    .orderBy(...(sortBy ? [desc(sortBy), desc(table.id)] : [desc(table.id)]))
    .limit(limit + 1)
  const positionOf = sortBy
    ? (row: any) => [(row[sortBy.name] as Date).toISOString(), row.id as string]
    : (row: any) => [row.id as string]
  return toPage(rows, limit, deps.cursors, scope, positionOf, present)
}
