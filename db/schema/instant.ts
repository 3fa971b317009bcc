// The records' timestamps as the API writes them, straight from Postgres's own text (issue 13, "dates serialised
// once"): no Date is made on the way out. drizzle would turn each value into a Date, the presenter back into text,
// and a page of 50 animals holds 150 of them; in the integrator mix those conversions were about 7 % of the
// server's CPU samples.
import { customType } from 'drizzle-orm/pg-core'

/**
 * Postgres writes a timestamptz (DateStyle ISO) as `YYYY-MM-DD HH:MM:SS[.fff]±HH[:MM]`; at UTC, which our
 * connections ask for, the zone is `+00`. The API's text is RFC 3339 UTC with milliseconds.
 */
export function isoFromPostgres(text: string): string {
  const length = text.length
  if (length >= 22 && length <= 26 && text.charCodeAt(10) === 32 && text.endsWith('+00')) {
    const fraction = length === 22 ? '000' : (text.slice(20, length - 3) + '00').slice(0, 3)
    return `${text.slice(0, 10)}T${text.slice(11, 19)}.${fraction}Z`
  }
  // Another session time zone, or a year Postgres writes otherwise: Date does the arithmetic.
  return new Date(text.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00')).toISOString()
}

/** timestamptz(3), read and written as RFC 3339 text. */
export const instant = customType<{ data: string; driverData: string }>({
  dataType: () => 'timestamp (3) with time zone',
  fromDriver: (value) => (typeof value === 'string' ? isoFromPostgres(value) : new Date(value as unknown as Date).toISOString()),
  toDriver: (value) => value,
})
