// The string formats our schemas use, checked fast and strictly.
//
// @elysiajs/openapi bundles @sinclair/typemap, which on import replaces TypeBox's global `date`, `email`, `uuid`…
// format checks with ones that build a new zod schema on every call. Every checked field then cost tens of
// microseconds: a page of 50 animals (two dates each) spent milliseconds validating its own response. Importing
// it here first and then registering Elysia's own tables (from ajv-formats: RFC 3339 full-date and date-time,
// RFC 3986 URI, the HTML email pattern) undoes that for every format our schemas name.
import '@elysiajs/openapi'
import { FormatRegistry } from '@sinclair/typebox'
import { fullFormats } from 'elysia/type-system/format'

/**
 * Dates and instants the API takes, in bodies and query strings alike: years 0001 to 9999 (in UTC, for an
 * instant). RFC 3339 writes four-digit years; Postgres refuses year 0000 (there is none) and a query with such a
 * date failed as a 500. One range for every date field, so a value one endpoint takes is never refused by another.
 */
export const EARLIEST_DATE = '0001-01-01'
export const LATEST_DATE = '9999-12-31'
const EARLIEST_MS = Date.parse(`${EARLIEST_DATE}T00:00:00.000Z`)
const LATEST_MS = Date.parse(`${LATEST_DATE}T23:59:59.999Z`)

/** Whether an instant (epoch ms) is one the API takes and every store can hold. */
const withinInstantRange = (ms: number) => ms >= EARLIEST_MS && ms <= LATEST_MS

const check = (name: string) => {
  const format = fullFormats[name as keyof typeof fullFormats] as RegExp | ((value: string) => boolean)
  return typeof format === 'function' ? format : (value: string) => format.test(value)
}
const isDate = check('date')
const isDateTime = check('date-time')

/** Whether an RFC 3339 date-time names a real day and time (no 2025-02-30, 24:00 or 23:60): ingest/parse.ts uses it too. */
export const isCalendarDateTime = (value: string) => isDateTime(value)

FormatRegistry.Set('email', check('email'))
FormatRegistry.Set('uri', check('uri'))
// Four-digit years compare as text.
FormatRegistry.Set('date', (value) => isDate(value) && value >= EARLIEST_DATE)
FormatRegistry.Set('date-time', (value) => isDateTime(value) && withinInstantRange(Date.parse(value)))
