// Records tables name their columns after the API's fields, so one conversion serves every area both ways.
import { getTableColumns } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'

/** Storage-only columns that never appear in the API. */
const HIDDEN = new Set(['account_id', 'version', 'deleted_at'])
type Hidden = 'account_id' | 'version' | 'deleted_at'

/** The columns of `table` the API shows: what a list selects, so storage-only columns are neither sent nor decoded. */
export function shownColumns(table: PgTable) {
  return Object.fromEntries(Object.entries(getTableColumns(table)).filter(([name]) => !HIDDEN.has(name)))
}

/** A row's type as the API shows it. */
export type Presented<Row> = {
  [K in keyof Row as K extends Hidden ? never : K]: Row[K] extends Date ? string : Row[K] extends Date | null ? string | null : Row[K]
}

/** A stored row as the API shows it: storage-only columns dropped, instants as RFC 3339 UTC with milliseconds. */
export function presentRow<Row extends Record<string, unknown>>(row: Row): Presented<Row> {
  const out: Record<string, unknown> = {}
  // for…in rather than Object.entries, which allocates a pair per field (a page of 50 animals has a thousand).
  for (const key in row) {
    if (HIDDEN.has(key)) continue
    const value = row[key]
    out[key] = value instanceof Date ? value.toISOString() : value
  }
  return out as Presented<Row>
}
