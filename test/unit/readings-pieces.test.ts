// Where the planner reads each stretch of a window from (rollupPieces), around minutes whose rollups may lag what was
// written (QuestDB's marks): the pieces cover the window exactly, in order, each rollup piece whole buckets of its
// level that holds no stale minute, and raw readings only where no level's whole bucket fits around a stale minute.
// The answers these pieces give are held to the raw readings by readings-planner.test.ts; this holds the shape.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { INTERVALS, MAX_PIECES, rollupPieces, ROLLUP_LEVELS, stretches } from '../../ingest/planner.ts'
import type { IntervalName } from '../../ingest/stores/interface.ts'

const MIN = 60_000
const DAY = 86_400_000
const T0 = Date.UTC(2026, 0, 5)
const widthOf = (level: string) => ROLLUP_LEVELS.find((l) => l.name === level)!.ms

describe('rollup pieces around stale minutes', () => {
  test('cover the window exactly in at most MAX_PIECES; no rollup piece holds a stale minute; raw only at the edges and the stale minutes themselves', () => {
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 3 * DAY / 1000 }), fc.integer({ min: 1, max: 3 * DAY / 1000 }),
      fc.constantFrom<IntervalName>(...(Object.keys(INTERVALS) as IntervalName[])),
      fc.oneof(fc.array(fc.integer({ min: -60, max: 4 * 24 * 60 }), { maxLength: 3 }), fc.array(fc.integer({ min: -60, max: 4 * 24 * 60 }), { maxLength: 400 })),
      (fromS, spanS, interval, staleMinutes) => {
        const from = T0 + fromS * 1000
        const to = from + spanS * 1000
        const stale = stretches(staleMinutes.map((m) => T0 + m * MIN).sort((a, b) => a - b), MIN)
        const pieces = rollupPieces(from, to, interval, undefined, stale)
        expect(pieces.length).toBeLessThanOrEqual(MAX_PIECES)
        // Exactly the window, in order, with no gap or overlap.
        expect(pieces[0]!.from).toBe(from)
        expect(pieces[pieces.length - 1]!.to).toBe(to)
        for (let i = 1; i < pieces.length; i++) expect(pieces[i]!.from).toBe(pieces[i - 1]!.to)
        for (const piece of pieces) {
          expect(piece.from).toBeLessThan(piece.to)
          if (piece.level === 'raw') {
            // Raw readings only under a minute's edges of the window, or within a stale minute, while the pieces
            // around each fit (two stale ranges add at most 16 to the 9 of a window); past MAX_PIECES, stale ranges
            // close together are read raw as one.
            if (stale.length <= 2) for (let m = Math.ceil(piece.from / MIN) * MIN; m + MIN <= piece.to; m += MIN) expect(stale.some(([a, b]) => a <= m && m + MIN <= b)).toBe(true)
            continue
          }
          const width = widthOf(piece.level)
          expect(piece.from % width).toBe(0)
          expect(piece.to % width).toBe(0)
          expect(stale.some(([a, b]) => a < piece.to && b > piece.from)).toBe(false)
        }
      },
    ), { numRuns: 2_000 })
  })

  test("a dashboard's day in five minutes, with the current minutes and a late one marked: five-minute rollups but around them", () => {
    const now = T0 + DAY + 10 * 3_600_000 + 37 * MIN + 12_000
    const from = now - DAY
    const late = T0 + DAY + 8 * 3_600_000 + 3 * MIN
    const stale = stretches([late, now - 2 * MIN, now - MIN, now], MIN)
    const pieces = rollupPieces(from, now, '5m', undefined, stale)
    const rows = (level: string) => pieces.filter((p) => p.level === level).reduce((n, p) => n + (p.to - p.from) / (level === 'raw' ? MIN : widthOf(level)), 0)
    const iso = (ms: number) => new Date(ms).toISOString()
    // 287 whole five minutes from 10:40 to 10:35 the next day; the one holding the late minute (08:00) is read from
    // minutes but for 08:03, raw. The current minutes (10:35 on) fall after the last whole five minutes: raw.
    expect(rows('5m')).toBe(286)
    expect(pieces.filter((p) => p.level === '1m').map((p) => [iso(p.from), iso(p.to)])).toEqual([
      [iso(Math.ceil(from / MIN) * MIN), iso(Math.ceil(from / (5 * MIN)) * 5 * MIN)], [iso(late - 3 * MIN), iso(late)], [iso(late + MIN), iso(late + 2 * MIN)],
    ])
    expect(pieces.filter((p) => p.level === 'raw').map((p) => [iso(p.from), iso(p.to)]))
      .toEqual([[iso(from), iso(Math.ceil(from / MIN) * MIN)], [iso(late), iso(late + MIN)], [iso(now - 2 * MIN - 12_000), iso(now)]])
  })
})
