// Records' timestamps come out of Postgres as text and go to the API without a Date (db/schema/instant.ts):
// the conversion must give exactly what Date#toISOString gave before, for every instant the API can hold.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { isoFromPostgres } from '../../db/schema/instant.ts'

/** What Postgres (DateStyle ISO, TimeZone UTC) writes for a timestamptz(3): trailing zeros of the fraction dropped. */
function postgresText(ms: number): string {
  const iso = new Date(ms).toISOString() // YYYY-MM-DDTHH:MM:SS.mmmZ
  const fraction = iso.slice(20, 23).replace(/0+$/, '')
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction ? `.${fraction}` : ''}+00`
}

describe('isoFromPostgres', () => {
  test('gives toISOString’s text for any instant from 1970 to 9999, milliseconds included', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) }), (ms) => {
      expect(isoFromPostgres(postgresText(ms))).toBe(new Date(ms).toISOString())
    }), { numRuns: 5000 })
  })

  test('whole seconds and short fractions are padded to three digits', () => {
    expect(isoFromPostgres('2026-11-23 04:51:49+00')).toBe('2026-11-23T04:51:49.000Z')
    expect(isoFromPostgres('2026-11-23 04:51:49.3+00')).toBe('2026-11-23T04:51:49.300Z')
    expect(isoFromPostgres('2026-11-23 04:51:49.38+00')).toBe('2026-11-23T04:51:49.380Z')
  })

  test('a session in another time zone still answers in UTC', () => {
    expect(isoFromPostgres('2026-11-23 05:51:49.3+01')).toBe('2026-11-23T04:51:49.300Z')
    expect(isoFromPostgres('2026-11-23 10:21:49.385+05:30')).toBe('2026-11-23T04:51:49.385Z')
    expect(isoFromPostgres('2026-11-22 20:51:49-08')).toBe('2026-11-23T04:51:49.000Z')
  })
})
