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
/** Days in each month of a common year; February of a leap year has 29. */
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
const ZERO = 48
/** The two-digit number at `at`, or -1 where a character is not a digit. */
const twoDigits = (value: string, at: number) => {
  const tens = value.charCodeAt(at) - ZERO
  const ones = value.charCodeAt(at + 1) - ZERO
  return tens >= 0 && tens <= 9 && ones >= 0 && ones <= 9 ? tens * 10 + ones : -1
}

/**
 * The form our own serializers write (toISOString: `2025-01-31T23:59:59.999Z`), checked by character codes: the
 * full check below (ajv's pattern, split, two regular expressions, Date.parse) was a tenth of the server's CPU on an
 * /animals page walk, where every record's response carries its instants. The same answer as the full check for
 * every string of this shape (test/unit/formats.test.ts); undefined for any other shape, and for second 60, which
 * the full check decides.
 */
export function canonicalInstant(value: string): boolean | undefined {
  if (value.length !== 24 || value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45 || value.charCodeAt(10) !== 84 || value.charCodeAt(13) !== 58
    || value.charCodeAt(16) !== 58 || value.charCodeAt(19) !== 46 || value.charCodeAt(23) !== 90) return undefined
  const century = twoDigits(value, 0), yearOfCentury = twoDigits(value, 2), month = twoDigits(value, 5), day = twoDigits(value, 8)
  const hour = twoDigits(value, 11), minute = twoDigits(value, 14), second = twoDigits(value, 17), milli = twoDigits(value, 20), milliOnes = value.charCodeAt(22) - ZERO
  if (century < 0 || yearOfCentury < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0 || milli < 0 || milliOnes < 0 || milliOnes > 9) return undefined
  if (second === 60) return undefined
  const year = century * 100 + yearOfCentury
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  const days = month === 2 && leap ? 29 : MONTH_DAYS[month - 1]
  return year >= 1 && days !== undefined && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59
}

/** The full check: any RFC 3339 date-time, within the years the API takes. */
export const isApiDateTime = (value: string) => isDateTime(value) && withinInstantRange(Date.parse(value))
FormatRegistry.Set('date-time', (value) => canonicalInstant(value) ?? isApiDateTime(value))
