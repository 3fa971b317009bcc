// The ingest log's message format: every batch comes back reading for reading (per account, in order), whatever the
// channels, mappings, timestamps and values; a body it did not write is refused, never misread.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { decodeMessage, encodeBatch } from '../../ingest/log/codec.ts'
import type { Reading } from '../../ingest/stores/interface.ts'

const reading: fc.Arbitrary<Reading> = fc.record({
  accountId: fc.constantFrom('acc_a', 'acc_b'),
  deviceId: fc.constantFrom('dev_1', 'dev_2', 'dev_3'),
  channel: fc.constantFrom('t1', 'h1', 'c0', 'ü-channel'),
  ts: fc.integer({ min: 0, max: 253_402_300_799_999 }),
  value: fc.double({ noNaN: true, noDefaultInfinity: true }),
  metric: fc.constantFrom(null, 'temperature', 'humidity'),
  environmentId: fc.constantFrom(null, 'env_1', 'env_2'),
})

describe('ingest-log messages', () => {
  test('decode(encode(batch)) gives back each account\'s readings in order, one message per account', () => {
    fc.assert(fc.property(fc.array(reading, { maxLength: 300 }), (readings) => {
      const messages = encodeBatch(readings, 'hrs.readings')
      const accounts = [...new Set(readings.map((r) => r.accountId))]
      expect(messages.map((m) => m.subject)).toEqual(accounts.map((a) => `hrs.readings.${a}`))
      for (const [i, message] of messages.entries()) {
        const expected = readings.filter((r) => r.accountId === accounts[i])
        expect(message.readings).toBe(expected.length)
        // A message arrives anywhere in a connection's buffer, as a Node Buffer (the NATS client's): decode it from
        // an unaligned view of both kinds.
        const shifted = new Uint8Array(message.data.length + 3)
        shifted.set(message.data, 3)
        expect(decodeMessage(shifted.subarray(3))).toEqual(expected)
        expect(decodeMessage(Buffer.from(shifted.buffer).subarray(3))).toEqual(expected)
      }
    }), { numRuns: 300 })
  })

  test('a body it did not write is refused', () => {
    const [message] = encodeBatch([{ accountId: 'a', deviceId: 'd', channel: 't1', ts: 1, value: 2, metric: null, environmentId: null }], 'p')
    for (const bad of [new Uint8Array(0), new TextEncoder().encode('{"a":"x"}'), message!.data.subarray(0, message!.data.length - 1), Uint8Array.of(2, ...message!.data.subarray(1))]) {
      expect(() => decodeMessage(bad)).toThrow('not an ingest-log message')
    }
  })
})
