// parseBatch's duplicate check on its own: within one batch, the first reading of a (channel, ts) is kept and every
// later one is refused as duplicate_reading, whatever order the timestamps come in. parseBatch remembers only each
// channel's latest timestamp until one arrives out of order; this holds it to a plain set of every pair.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import type { DeviceInfo } from '../../ingest/devices.ts'
import { parseBatch } from '../../ingest/parse.ts'

const NOW = Date.UTC(2026, 10, 27, 12)
const device: DeviceInfo = {
  id: 'dev_a', accountId: 'acct_a',
  channels: new Map([['t1', { metric: 'temperature', environmentId: null }]]),
  unmapped: new Set(), configuration: [],
}

/** The indices a plain set of (channel, ts) pairs refuses. */
function duplicatesOf(items: readonly { channel: string; ts: number }[]): number[] {
  const seen = new Set<string>()
  const refused: number[] = []
  items.forEach(({ channel, ts }, index) => {
    const key = `${channel}\u0000${ts}`
    if (seen.has(key)) refused.push(index)
    else seen.add(key)
  })
  return refused
}

describe('parseBatch duplicates', () => {
  test('in order, out of order and repeated: the first of each (channel, ts) is kept, the later ones refused', () => {
    const base = NOW - 60_000
    const items = [
      { channel: 't1', value: 1, ts: base }, { channel: 't1', value: 2, ts: base + 1 }, { channel: 'h1', value: 3, ts: base },
      { channel: 't1', value: 4, ts: base + 1 }, // the channel's latest again
      { channel: 't1', value: 5, ts: base - 5 }, // earlier than the latest, new
      { channel: 't1', value: 6, ts: base }, // earlier than the latest, seen
      { channel: 'h1', value: 7, ts: base + 2 }, { channel: 'h1', value: 8, ts: base + 2 },
    ]
    const parsed = parseBatch(items, device, NOW)
    expect(parsed.rejected.map((r) => [r.index, r.code])).toEqual([[3, 'duplicate_reading'], [5, 'duplicate_reading'], [7, 'duplicate_reading']])
    expect(parsed.readings.map((r) => r.value)).toEqual([1, 2, 3, 5, 7])
  })

  test('any batch: the refused indices are those a set of every (channel, ts) refuses', () => {
    const item = fc.record({ channel: fc.constantFrom('t1', 'h1', 'c2'), ts: fc.integer({ min: 0, max: 6 }).map((k) => NOW - 10_000 + k) })
    fc.assert(fc.property(fc.array(item, { maxLength: 40 }), (items) => {
      const parsed = parseBatch(items.map((i, n) => ({ ...i, value: n })), device, NOW)
      expect(parsed.rejected.map((r) => r.index)).toEqual(duplicatesOf(items))
      expect(parsed.rejected.every((r) => r.code === 'duplicate_reading')).toBe(true)
      expect(parsed.readings.length + parsed.rejected.length).toBe(items.length)
    }), { numRuns: 500 })
  })
})
