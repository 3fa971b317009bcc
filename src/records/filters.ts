// The filters lists share; each returns undefined when its parameter is absent (drizzle's and() skips those).
import { eq, gte, lt, lte, or, sql, type SQL } from 'drizzle-orm'
import type { PgColumn } from 'drizzle-orm/pg-core'

export const equals = (column: PgColumn, value: string | number | undefined): SQL | undefined =>
  value === undefined ? undefined : eq(column, value)

/** `updated_since` and other instant lower bounds: at or after. */
export const atOrAfter = (column: PgColumn, instant: string | undefined): SQL | undefined =>
  instant === undefined ? undefined : gte(column, new Date(instant))

/** Instant upper bounds: strictly before, so consecutive windows never count a row twice. */
export const before = (column: PgColumn, instant: string | undefined): SQL | undefined =>
  instant === undefined ? undefined : lt(column, new Date(instant))

/** Inclusive calendar-date range. */
export const dateFrom = (column: PgColumn, day: string | undefined) => (day === undefined ? undefined : gte(column, day))
export const dateTo = (column: PgColumn, day: string | undefined) => (day === undefined ? undefined : lte(column, day))

export const hasTag = (column: PgColumn, tag: string | undefined): SQL | undefined =>
  tag === undefined ? undefined : sql`${column} @> array[${tag}]::text[]`

/** Case-insensitive substring search over several text columns; LIKE wildcards in the text match literally. */
export function search(text: string | undefined, ...columns: PgColumn[]): SQL | undefined {
  if (text === undefined) return undefined
  const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  return or(...columns.map((column) => sql`${column} ilike ${pattern}`))
}

/** Either of two columns equals the value (e.g. an animal as dam or sire). */
export const eitherEquals = (a: PgColumn, b: PgColumn, value: string | undefined): SQL | undefined =>
  value === undefined ? undefined : or(eq(a, value), eq(b, value))
