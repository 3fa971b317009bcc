// The date-time format's fast path (canonicalInstant, for the form toISOString writes) answers as the full RFC 3339
// check does, for every string of that shape: real instants, impossible days and times, leap years, year 0000.
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { canonicalInstant, isApiDateTime } from '../../src/http/formats.ts'

const digits = (n: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(''))
/** Any string of the canonical shape, most of them no real instant (month 19, day 00, hour 27, second 60…). */
const canonicalShaped = fc.tuple(digits(4), digits(2), digits(2), digits(2), digits(2), digits(2), digits(3))
  .map(([y, mo, d, h, mi, s, ms]) => `${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`)
/** Real instants of years 0001–9999, as toISOString writes them. */
const realInstant = fc.integer({ min: Date.parse('0001-01-01T00:00:00.000Z'), max: Date.parse('9999-12-31T23:59:59.999Z') })
  .map((ms) => new Date(ms).toISOString())

test('the fast path gives the full check\'s answer for every string of the canonical shape', () => {
  fc.assert(fc.property(canonicalShaped, (text) => {
    const fast = canonicalInstant(text)
    if (fast !== undefined) expect(fast).toBe(isApiDateTime(text))
  }), { numRuns: 20_000 })
})

test('real instants take the fast path and pass; the edges of the calendar are decided as the full check decides them', () => {
  fc.assert(fc.property(realInstant, (text) => {
    expect(canonicalInstant(text)).toBe(true)
    expect(isApiDateTime(text)).toBe(true)
  }), { numRuns: 5_000 })
  const cases = ['2024-02-29T00:00:00.000Z', '2023-02-29T00:00:00.000Z', '2000-02-29T12:00:00.000Z', '1900-02-29T12:00:00.000Z',
    '0000-01-01T00:00:00.000Z', '0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '2025-04-31T00:00:00.000Z',
    '2025-13-01T00:00:00.000Z', '2025-00-10T00:00:00.000Z', '2025-01-00T00:00:00.000Z', '2025-01-01T24:00:00.000Z', '2025-01-01T23:60:00.000Z']
  for (const text of cases) expect(`${text} ${canonicalInstant(text)}`).toBe(`${text} ${isApiDateTime(text)}`)
  // Second 60 and every other shape go to the full check.
  for (const text of ['2016-12-31T23:59:60.000Z', '2025-01-01T00:00:00Z', '2025-01-01t00:00:00.000z', '2025-01-01T00:00:00.000+00:00']) expect(canonicalInstant(text)).toBeUndefined()
})
