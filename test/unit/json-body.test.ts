// The JSON body gate: limits checked on the raw text before JSON.parse, and text Postgres cannot store refused
// with the field named. Properties over generated JSON (fast-check), then the hostile shapes that used to cost.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { ApiError } from '../../src/http/errors.ts'
import { JSON_LIMITS, parseJsonBody } from '../../src/http/json-body.ts'

function refusal(text: string): { code: string; paths: string[] } | undefined {
  try {
    parseJsonBody(text)
    return undefined
  } catch (error) {
    if (!(error instanceof ApiError)) throw error
    return { code: error.code, paths: (error.extra.errors ?? []).map((e) => e.path) }
  }
}

const storable = (s: string) => !/\u0000|[\ud800-\udfff]/.test(s)

describe('parseJsonBody', () => {
  test('any JSON value within the limits parses to what JSON.parse gives', () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 }).filter(storable)
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, fc.constant(null), fc.boolean(), fc.double({ noNaN: true, noDefaultInfinity: true }), text,
        fc.array(tie('node'), { maxLength: 5 }), fc.dictionary(text, tie('node'), { maxKeys: 5 })),
    })).node
    fc.assert(fc.property(value, (v) => {
      const body = JSON.stringify(v)
      expect(parseJsonBody(body)).toEqual(JSON.parse(body))
    }), { numRuns: 2_000 })
  })

  test('nesting is refused past the limit, with arrays, objects or both, and without running JSON.parse on it', () => {
    const nested = (levels: number, open: string, close: string) => open.repeat(levels) + close.repeat(levels)
    expect(refusal(nested(JSON_LIMITS.depth, '[', ']'))).toBeUndefined()
    expect(refusal(nested(JSON_LIMITS.depth + 1, '[', ']'))).toEqual({ code: 'validation_failed', paths: ['/body'] })
    expect(refusal('{"a":'.repeat(JSON_LIMITS.depth + 1) + '1' + '}'.repeat(JSON_LIMITS.depth + 1))).toEqual({ code: 'validation_failed', paths: ['/body'] })
    // 100,000 levels, as the probe sent: refused at once (the scan stops at the first level past the limit).
    expect(refusal(nested(100_000, '[', ']'))?.code).toBe('validation_failed')
    expect(refusal('{"x":' + nested(100_000, '[{"y":', '}]'))?.code).toBe('validation_failed')
    // Brackets inside strings are text, not nesting.
    expect(refusal(JSON.stringify({ note: '['.repeat(1000) }))).toBeUndefined()
  })

  test('long arrays and strings are refused past their limits; quotes and escapes do not confuse the scan', () => {
    expect(refusal(JSON.stringify(Array(JSON_LIMITS.arrayItems).fill(0)))).toBeUndefined()
    expect(refusal(JSON.stringify(Array(JSON_LIMITS.arrayItems + 1).fill(0)))?.code).toBe('validation_failed')
    // Commas in strings and in nested objects are not items of the outer array.
    expect(refusal(JSON.stringify([{ a: 1, b: 2, c: 3 }, ','.repeat(20_000).slice(0, 20_000)]))?.code).toBeUndefined()
    expect(refusal(JSON.stringify({ s: 'x'.repeat(JSON_LIMITS.stringChars) }))).toBeUndefined()
    expect(refusal(JSON.stringify({ s: 'x'.repeat(JSON_LIMITS.stringChars + 1) }))?.code).toBe('validation_failed')
    expect(refusal(JSON.stringify({ s: 'a\\"b"c', t: ['"', '\\'] }))).toBeUndefined()
  })

  test('NUL and lone surrogates are refused naming each field; proper pairs (emoji) pass', () => {
    expect(refusal('{"name":"a\\u0000b"}')).toEqual({ code: 'validation_failed', paths: ['/body/name'] })
    expect(refusal('{"name":"\\ud800"}')).toEqual({ code: 'validation_failed', paths: ['/body/name'] })
    expect(refusal('{"name":"x\\udc00"}')).toEqual({ code: 'validation_failed', paths: ['/body/name'] })
    expect(refusal('{"tags":["ok","\\ud83d"],"details":{"a/b":"\\u0000"}}')).toEqual({ code: 'validation_failed', paths: ['/body/tags/1', '/body/details/a~1b'] })
    expect(refusal('{"\\u0000":1}')).toEqual({ code: 'validation_failed', paths: ['/body/\u0000'] })
    expect(refusal('{"name":"\\ud83d\\udc0d snake"}')).toBeUndefined()
    expect(parseJsonBody('{"name":"\\ud83d\\udc0d"}')).toEqual({ name: '🐍' })
  })

  test('malformed text is still a 400 malformed_json, whatever the scan saw', () => {
    for (const text of ['{', '[1,]', '"unterminated', '}}}', '{"a":1}x', '\\']) expect(refusal(text)?.code).toBe('malformed_json')
  })
})
