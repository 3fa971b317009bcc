// The filters lists share. Each takes the filter's placeholder (see records/list.ts) and returns undefined when
// the filter is absent (drizzle's and() skips those). Values are bound as given, so whatever a filter needs done
// to its value is done in SQL, and the statement's text stays the same for every value.
import { eq, gte, lt, lte, or, sql, type Placeholder, type SQL } from 'drizzle-orm'
import type { PgColumn } from 'drizzle-orm/pg-core'

type Bound = Placeholder | undefined

export const equals = (column: PgColumn, value: Bound): SQL | undefined =>
  value === undefined ? undefined : eq(column, value)

/** `updated_since` and other instant lower bounds (RFC 3339): at or after. */
export const atOrAfter = (column: PgColumn, instant: Bound): SQL | undefined =>
  instant === undefined ? undefined : gte(column, sql`${instant}::timestamptz`)

/** Instant upper bounds: strictly before, so consecutive windows never count a row twice. */
export const before = (column: PgColumn, instant: Bound): SQL | undefined =>
  instant === undefined ? undefined : lt(column, sql`${instant}::timestamptz`)

/** Inclusive calendar-date range. */
export const dateFrom = (column: PgColumn, day: Bound) => (day === undefined ? undefined : gte(column, sql`${day}::date`))
export const dateTo = (column: PgColumn, day: Bound) => (day === undefined ? undefined : lte(column, sql`${day}::date`))

export const hasTag = (column: PgColumn, tag: Bound): SQL | undefined =>
  tag === undefined ? undefined : sql`${column} @> array[${tag}::text]`

/** Case-insensitive substring search over several text columns; LIKE wildcards in the text match literally. */
export function search(text: Bound, ...columns: PgColumn[]): SQL | undefined {
  if (text === undefined) return undefined
  const pattern = sql`'%' || regexp_replace(${text}::text, '([\\\\%_])', '\\\\\\1', 'g') || '%'`
  return or(...columns.map((column) => sql`${column} ilike ${pattern}`))
}

/** Either of two columns equals the value (e.g. an animal as dam or sire). */
export const eitherEquals = (a: PgColumn, b: PgColumn, value: Bound): SQL | undefined =>
  value === undefined ? undefined : or(eq(a, value), eq(b, value))
