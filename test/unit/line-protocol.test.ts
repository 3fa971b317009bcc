// The line-protocol parser on its own (ingest/influx/line-protocol.ts), the cases of InfluxDB's line protocol
// reference one by one, the series → channel key rule (series-channel.ts), and points → readings (write.ts).
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import type { DeviceInfo } from '../../ingest/devices.ts'
import { parseLineProtocol, plainDecimal, plainTimestampMs, SeriesCache, timestampMs, type Precision } from '../../ingest/influx/line-protocol.ts'
import { MAX_CHANNEL_CHARS, seriesChannel } from '../../ingest/influx/series-channel.ts'
import { linesToReadings } from '../../ingest/influx/write.ts'

const one = (line: string, precision: Precision = 'ns') => {
  const parsed = parseLineProtocol(line, precision)
  expect(parsed.errors).toEqual([])
  expect(parsed.points).toHaveLength(1)
  return parsed.points[0]!
}
const reason = (line: string) => {
  const parsed = parseLineProtocol(line, 'ns')
  expect(parsed.points).toEqual([])
  expect(parsed.errors).toHaveLength(1)
  return parsed.errors[0]!.reason
}

describe('line protocol grammar', () => {
  test('measurement, tags, fields and timestamp', () => {
    const p = one('weather,location=us-midwest,season=summer temperature=82,humidity=71.5 1465839830100400200')
    expect(p).toMatchObject({
      series: { measurement: 'weather', tags: ['location', 'us-midwest', 'season', 'summer'] },
      fields: [{ key: 'temperature', value: 82 }, { key: 'humidity', value: 71.5 }], ts: 1465839830100, line: 1,
    })
  })

  test('escaped spaces, commas and equals signs in measurement, tag keys, tag values and field keys', () => {
    const p = one('my\\ weather\\,now,loc\\ ation=us\\,mid\\=west,a\\=b=c\\ d temp\\ erature=1,x\\,y\\=z=2')
    expect(p.series.measurement).toBe('my weather,now')
    expect(p.series.tags).toEqual(['loc ation', 'us,mid=west', 'a=b', 'c d'])
    expect(p.fields.map((f) => f.key)).toEqual(['temp erature', 'x,y=z'])
    // An unescaped `=` in a measurement is itself; a backslash before anything else too; `\\` is one backslash.
    expect(one('a=b c=1').series.measurement).toBe('a=b')
    expect(one('a\\b c=1').series.measurement).toBe('a\\b')
    expect(one('a\\\\ c=1').series.measurement).toBe('a\\')
  })

  test('quoted strings are skipped and counted, with escaped quotes, backslashes, commas, spaces and line breaks inside', () => {
    const parsed = parseLineProtocol('m s="a \\"quoted\\", spaced = string \\\\",v=1,t="two\nlines" 1000000\nn v=2', 'ns')
    expect(parsed.errors).toEqual([])
    expect(parsed.stringFields).toBe(2)
    expect(parsed.points.map((p) => [p.series.measurement, p.fields, p.line])).toEqual([['m', [{ key: 'v', value: 1 }], 1], ['n', [{ key: 'v', value: 2 }], 3]])
  })

  test('integers with i, unsigned with u, their ranges', () => {
    expect(one('m a=-12i,b=12u,c=9223372036854775807i,d=-9223372036854775808i,e=18446744073709551615u').fields.map((f) => f.value))
      .toEqual([-12, 12, 9223372036854775807, -9223372036854775808, 18446744073709551615])
    expect(reason('m a=9223372036854775808i')).toContain('out of range')
    expect(reason('m a=-9223372036854775809i')).toContain('out of range')
    expect(reason('m a=18446744073709551616u')).toContain('out of range')
    expect(reason('m a=-1u')).toContain('invalid unsigned')
    expect(reason('m a=1.5i')).toContain('invalid integer')
  })

  test('floats as InfluxDB writes them; NaN, Inf and hex are not numbers', () => {
    expect(one('m a=1,b=-1.5,c=.5,d=1.,e=1e3,f=-2.5E-2').fields.map((f) => f.value)).toEqual([1, -1.5, 0.5, 1, 1000, -0.025])
    for (const bad of ['NaN', 'Inf', '-Inf', '0x10', '1_000', '1e', '--1', '+1']) expect(reason(`m a=${bad}`)).toContain('invalid field value')
    expect(reason('m a=1e999')).toContain('out of range')
  })

  test('booleans t T true True TRUE f F false False FALSE are 1 and 0; other spellings are errors', () => {
    expect(one('m a=t,b=T,c=true,d=True,e=TRUE').fields.map((f) => f.value)).toEqual([1, 1, 1, 1, 1])
    expect(one('m a=f,b=F,c=false,d=False,e=FALSE').fields.map((f) => f.value)).toEqual([0, 0, 0, 0, 0])
    expect(reason('m a=tRUE')).toContain('invalid field value')
    expect(reason('m a=yes')).toContain('invalid field value')
  })

  test('a missing timestamp is undefined (the receive time, later)', () => {
    expect(one('m v=1').ts).toBeUndefined()
    expect(one('m v=1   ').ts).toBeUndefined()
  })

  test('each precision', () => {
    const cases: [Precision, string, number][] = [
      ['ns', '1700000000123456789', 1700000000123], ['us', '1700000000123456', 1700000000123], ['ms', '1700000000123', 1700000000123],
      ['s', '1700000000', 1700000000000], ['m', '28333333', 28333333 * 60_000], ['h', '472222', 472222 * 3_600_000],
    ]
    for (const [precision, ts, ms] of cases) expect(one(`m v=1 ${ts}`, precision).ts).toBe(ms)
    // Sub-millisecond digits are dropped, never rounded up (19 digits of nanoseconds are past a double's integers).
    expect(timestampMs('1700000000123999999', 'ns')).toBe(1700000000123)
    expect(timestampMs('999', 'ns')).toBe(0)
    expect(timestampMs('-1', 'ns')).toBe(-1)
  })

  test('timestamps outside int64, or not integers, break the line', () => {
    expect(reason('m v=1 9223372036854775808')).toContain('out of range')
    expect(reason('m v=1 12345678901234567890123')).toContain('out of range')
    expect(reason('m v=1 1.5')).toContain('invalid timestamp')
    expect(reason('m v=1 1700000000 extra')).toContain('unexpected text')
  })

  test('comments and blank lines are skipped; CRLF endings and leading whitespace are taken; line numbers count them', () => {
    const parsed = parseLineProtocol('# a comment\r\n\r\n   \n\t# indented comment\na v=1\r\nb v=2 1000000000\r\n  c v=3\n\nbad\r\n', 'ns')
    expect(parsed.points.map((p) => [p.series.measurement, p.line, p.ts])).toEqual([['a', 5, undefined], ['b', 6, 1000], ['c', 7, undefined]])
    expect(parsed.errors).toEqual([{ line: 9, text: 'bad', reason: 'missing fields' }])
  })

  test('grammar errors name the line, and the lines around it still parse', () => {
    const parsed = parseLineProtocol('ok v=1\nnofields\nm,t v=1\nm,t= v=1\nm v\nm v=\nm =1\n,t=1 v=1\nm v="open\nok2 v=2', 'ns')
    expect(parsed.points.map((p) => p.series.measurement)).toEqual(['ok'])
    expect(parsed.errors.map((e) => [e.line, e.reason])).toEqual([
      [2, 'missing fields'], [3, 'missing tag value for tag key "t"'], [4, 'missing tag value for tag key "t"'],
      [5, 'missing field value for field key "v"'], [6, 'missing field value for field key "v"'], [7, 'missing field key'],
      [8, 'missing measurement'], [9, 'unterminated string field value'],
    ])
    expect(reason('m,a=1,a=2 v=1')).toBe('duplicate tag key "a"')
  })

  test('hostile input: a 10 MB line, 100,000 tags, NUL, a lone surrogate: errors or points, never a throw', () => {
    const long = `m v=${'1'.repeat(10 * 1024 * 1024)}`
    expect(reason(long)).toContain('out of range')
    expect(reason(`m v=${'1'.repeat(400)}`)).toContain('out of range')
    expect(one(`${'m'.repeat(10 * 1024 * 1024)} v=1`).series.measurement).toHaveLength(10 * 1024 * 1024)
    const manyTags = `m,${Array.from({ length: 100_000 }, (_, i) => `t${i}=v`).join(',')} v=1`
    expect(one(manyTags).series.tags).toHaveLength(200_000)
    const errors = parseLineProtocol(`m\0 v=1\nm v=\0`, 'ns')
    expect(errors.points[0]!.series.measurement).toBe('m\0')
    expect(errors.errors[0]!.reason).toContain('invalid field value')
    expect(parseLineProtocol('m\uD800 v=1', 'ns').points).toHaveLength(1)
    // An error repeats at most 120 characters of its line.
    expect(parseLineProtocol(`${'x'.repeat(5000)}`, 'ns').errors[0]!.text).toHaveLength(121)
  })
})

describe('the fast paths agree with the full ones', () => {
  test('property: a plain decimal reads as Number() reads it; anything else is left to the full path', () => {
    const decimal = fc.tuple(fc.boolean(), fc.stringMatching(/^[0-9]{0,9}$/), fc.option(fc.stringMatching(/^[0-9]{0,8}$/)))
      .map(([negative, whole, fraction]) => `${negative ? '-' : ''}${whole}${fraction === null ? '' : `.${fraction}`}`)
    fc.assert(fc.property(decimal, fc.constantFrom('', ',', ' ', '\n', 'i', 'e3'), (token, after) => {
      const value = plainDecimal(`${token}${after}`, 0)
      const digits = token.replace(/[^0-9]/g, '').length
      const plain = digits > 0 && digits <= 15 && !['i', 'e3'].includes(after)
      expect(value).toBe(plain ? Number(token) : undefined)
    }), { numRuns: 2000 })
    expect(plainDecimal('0.1', 0)).toBe(0.1)
    expect(plainDecimal('123456789012345.6', 0)).toBeUndefined()
  })

  test('property: a digits-only timestamp reads as timestampMs reads it, in every precision; past int64 it is left to it', () => {
    const precisions: Precision[] = ['ns', 'us', 'ms', 's', 'm', 'h']
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n }), fc.constantFrom(...precisions), (n, precision) => {
      const token = String(n)
      const fast = plainTimestampMs(token, 0, token.length, precision)
      if (fast === undefined) return
      expect(n <= 9223372036854775807n).toBe(true)
      expect(fast).toBe(timestampMs(token, precision))
    }), { numRuns: 2000 })
    expect(plainTimestampMs('9223372036854775807', 0, 19, 'ns')).toBe(9223372036854)
    expect(plainTimestampMs('9223372036854775808', 0, 19, 'ns')).toBeUndefined()
    expect(plainTimestampMs('1700000000123999999', 0, 19, 'ns')).toBe(1700000000123)
  })
})

describe('the series cache', () => {
  test('a series seen before is the same object, however its fields and timestamp change; a bad line is still refused', () => {
    const cache = new SeriesCache()
    const first = parseLineProtocol('cpu,host=a,region=x v=1 1000000\ncpu,host=a,region=x v=2,w=3i', 'ns', cache)
    expect(first.points[0]!.series).toBe(first.points[1]!.series)
    const again = parseLineProtocol('cpu,host=a,region=x v=9\ncpu,host=a,region=x v=abc\ncpu,host=a,region=x', 'ns', cache)
    expect(again.points[0]!.series).toBe(first.points[0]!.series)
    expect(again.errors.map((e) => [e.line, e.reason])).toEqual([[2, 'invalid field value "abc" for field key "v"'], [3, 'missing fields']])
  })

  test('two series of one hash (31·h + c: "Aa" and "BB") each parse as themselves, whichever the cache holds', () => {
    const cache = new SeriesCache()
    for (let i = 0; i < 2; i++) {
      const { points } = parseLineProtocol('Aa,t=x v=1\nBB,t=x v=2\nAa,t=x v=3', 'ns', cache)
      expect(points.map((p) => [p.series.measurement, p.fields[0]!.value])).toEqual([['Aa', 1], ['BB', 2], ['Aa', 3]])
    }
  })

  test('a series\' field keys are read anew where the text differs from the keys remembered: another order, a longer or shorter key, an escape', () => {
    const cache = new SeriesCache()
    const body = 'm a=1,b=2\nm b=3,a=4\nm ab=5,a=6\nm a=7,abc=8\nm a\\ b=9,b=10\nm a\\ b=11,b=12'
    for (let i = 0; i < 2; i++) {
      expect(parseLineProtocol(body, 'ns', cache).points.map((p) => p.fields)).toEqual([
        [{ key: 'a', value: 1 }, { key: 'b', value: 2 }], [{ key: 'b', value: 3 }, { key: 'a', value: 4 }],
        [{ key: 'ab', value: 5 }, { key: 'a', value: 6 }], [{ key: 'a', value: 7 }, { key: 'abc', value: 8 }],
        [{ key: 'a b', value: 9 }, { key: 'b', value: 10 }], [{ key: 'a b', value: 11 }, { key: 'b', value: 12 }],
      ])
    }
  })

  test('the series guessed from the line before (the one that followed it last time) is taken only where the text repeats it up to its space', () => {
    const cache = new SeriesCache()
    const series = (body: string) => parseLineProtocol(body, 'ns', cache).points.map((p) => [p.series.measurement, ...p.series.tags])
    for (let i = 0; i < 2; i++) expect(series('cpu v=0\ncpu,host=a v=1\ncpu,host=ab v=2\ncpu,host=a\\ b v=3')).toEqual([['cpu'], ['cpu', 'host', 'a'], ['cpu', 'host', 'ab'], ['cpu', 'host', 'a b']])
    expect(series('cpu v=0\ncpu,host=ab v=2\ncpu,host=a\\ b v=3\ncpu,host=a v=1\ncpu,host=a v=4')).toEqual([['cpu'], ['cpu', 'host', 'ab'], ['cpu', 'host', 'a b'], ['cpu', 'host', 'a'], ['cpu', 'host', 'a']])
    expect(series('cpu v=0\ncpu,host=a\r\ncpu,host=a v=5').length).toBe(2)
  })

  test('a series text that broke the grammar is not remembered, and stays refused', () => {
    const cache = new SeriesCache()
    for (let i = 0; i < 2; i++) expect(parseLineProtocol('cpu,host= v=1\ncpu,host=a,host=b v=1', 'ns', cache).errors.map((e) => e.reason)).toEqual(['missing tag value for tag key "host"', 'duplicate tag key "host"'])
  })

  test('property: a body parses the same with a cache warmed by earlier bodies as without one', () => {
    const name = fc.constantFrom('a', 'b', 'c\\ d', 'e\\,f', 'g=h')
    const lineOf = fc.tuple(name, fc.array(fc.tuple(fc.constantFrom('k', 'l', 'm'), name), { maxLength: 3 }), fc.constantFrom('v=1', 'v=2i,w=t', 'v=x', 'v="s"', ''), fc.constantFrom('', ' 1000000', ' bad'))
      .map(([m, tags, fields, ts]) => `${m}${tags.map(([k, v]) => `,${k}=${v}`).join('')} ${fields}${ts}`)
    const cache = new SeriesCache()
    const strip = (parsed: ReturnType<typeof parseLineProtocol>) => ({ ...parsed, points: parsed.points.map((p) => ({ ...p, series: { measurement: p.series.measurement, tags: p.series.tags } })) })
    fc.assert(fc.property(fc.array(lineOf, { maxLength: 8 }), (lines) => {
      const body = lines.join('\n')
      expect(strip(parseLineProtocol(body, 'ns', cache))).toEqual(strip(parseLineProtocol(body, 'ns')))
    }), { numRuns: 300 })
  })
})

describe('series → channel key', () => {
  const RULE = /^[A-Za-z0-9_.-]{1,32}$/

  test('measurement.field for a series without tags, named within the rule', () => {
    expect(seriesChannel('weather', [], 'temp')).toBe('weather.temp')
    expect(seriesChannel('a'.repeat(15), [], 'b'.repeat(16))).toBe(`${'a'.repeat(15)}.${'b'.repeat(16)}`)
  })

  test('otherwise a readable prefix, `..` and a hash of the exact series, whatever the tags\' order', () => {
    const ha = seriesChannel('°C', ['domain', 'sensor', 'entity_id', 'living_room'], 'value')
    expect(ha).toMatch(/^_C\.sensor\.living_room\.\.[A-Za-z0-9_-]{9}$/)
    expect(seriesChannel('°C', ['entity_id', 'living_room', 'domain', 'sensor'], 'value')).toBe(ha)
    expect(seriesChannel('°C', ['domain', 'sensor', 'entity_id', 'kitchen'], 'value')).not.toBe(ha)
    expect(seriesChannel('cpu.x', [], 'v')).toMatch(/^cpu_x\.v\.\.[A-Za-z0-9_-]{9}$/)
    expect(seriesChannel('a'.repeat(15), [], 'b'.repeat(17))).toHaveLength(32)
  })

  test('property: every series gets a key within the rule, the same one for its tags in any order, distinct ones for distinct series', () => {
    const name = fc.string({ minLength: 1, maxLength: 40 })
    fc.assert(fc.property(name, fc.uniqueArray(fc.tuple(name, name), { selector: ([k]) => k, maxLength: 6 }), name, (measurement, pairs, field) => {
      const tags = pairs.flat()
      const key = seriesChannel(measurement, tags, field)
      expect(key).toMatch(RULE)
      expect(key.length).toBeLessThanOrEqual(MAX_CHANNEL_CHARS)
      expect(seriesChannel(measurement, [...pairs].reverse().flat(), field)).toBe(key)
      expect(seriesChannel(measurement, tags, `${field}x`)).not.toBe(key)
    }), { numRuns: 500 })
  })
})

describe('line protocol round trip', () => {
  const escapeName = (s: string, special: RegExp) => s.replace(special, (c) => `\\${c}`)
  test('property: points written as line protocol (escaped) parse back to the same series, values and timestamps', () => {
    const name = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !/[\n\r\\#"]/.test(s) && !/^[ \t]/.test(s))
    const value = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }).map((v) => ({ text: String(v).replace('Infinity', '1'), value: Number(String(v).replace('Infinity', '1')) })),
      fc.integer().map((v) => ({ text: `${v}i`, value: v })), fc.boolean().map((v) => ({ text: v ? 'true' : 'F', value: v ? 1 : 0 })))
    fc.assert(fc.property(name, fc.uniqueArray(fc.tuple(name, name), { selector: ([k]) => k, maxLength: 4 }), fc.uniqueArray(fc.tuple(name, value), { selector: ([k]) => k, minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 2 ** 40 }), (measurement, tags, fields, ms) => {
      const line = `${escapeName(measurement, /[, ]/g)}${tags.map(([k, v]) => `,${escapeName(k, /[,= ]/g)}=${escapeName(v, /[,= ]/g)}`).join('')} ${fields.map(([k, v]) => `${escapeName(k, /[,= ]/g)}=${v.text}`).join(',')} ${ms}`
      const p = one(line, 'ms')
      expect(p.series.measurement).toBe(measurement)
      expect(p.series.tags).toEqual(tags.flat())
      expect(p.fields).toEqual(fields.map(([key, v]) => ({ key, value: v.value })))
      expect(p.ts).toBe(ms)
    }), { numRuns: 500 })
  })
})

describe('points → readings', () => {
  const NOW = Date.UTC(2026, 10, 27, 12)
  const device: DeviceInfo = {
    id: 'dev_a', accountId: 'acct_a',
    channels: new Map([['weather.temp', { metric: 'temperature', environmentId: 'env_a' }]]),
    unmapped: new Set(), configuration: [],
  }
  const readingsOf = (body: string, precision: Precision = 'ms') => linesToReadings(body, parseLineProtocol(body, precision), device, NOW)

  test('each numeric field is a reading on its series\' channel, mapped through the device; no timestamp is now', () => {
    const { parsed, errors } = readingsOf(`weather temp=21.5,hum=60i,door=t,note="open" ${NOW - 1000}\nweather temp=22`)
    expect(errors).toEqual([])
    expect(parsed.readings).toEqual([
      { accountId: 'acct_a', deviceId: 'dev_a', channel: 'weather.temp', ts: NOW - 1000, value: 21.5, metric: 'temperature', environmentId: 'env_a' },
      { accountId: 'acct_a', deviceId: 'dev_a', channel: 'weather.hum', ts: NOW - 1000, value: 60, metric: null, environmentId: null },
      { accountId: 'acct_a', deviceId: 'dev_a', channel: 'weather.door', ts: NOW - 1000, value: 1, metric: null, environmentId: null },
      { accountId: 'acct_a', deviceId: 'dev_a', channel: 'weather.temp', ts: NOW, value: 22, metric: 'temperature', environmentId: 'env_a' },
    ])
    expect([...parsed.unmapped].sort()).toEqual(['weather.door', 'weather.hum'])
  })

  test('timestamps before 2000 or more than 5 minutes ahead refuse their line, named with its text', () => {
    const { parsed, errors } = readingsOf(`a v=1 ${NOW}\nb v=1 1700000000\nc v=1 ${NOW + 600_000}`)
    expect(parsed.readings.map((r) => r.channel)).toEqual(['a.v'])
    expect(errors).toEqual([
      { line: 2, text: 'b v=1 1700000000', reason: 'timestamp before 2000-01-01 (check the precision)' },
      { line: 3, text: `c v=1 ${NOW + 600_000}`, reason: 'timestamp more than 5 minutes in the future (check the precision)' },
    ])
  })

  test('a series written twice at one millisecond keeps the later value, in order or not', () => {
    const { parsed } = readingsOf(`a v=1 ${NOW - 5}\na v=2 ${NOW - 9}\na v=3 ${NOW - 5}\nb v=1 ${NOW}\nb v=2 ${NOW}`)
    expect(parsed.readings.map((r) => [r.channel, r.ts, r.value])).toEqual([['a.v', NOW - 5, 3], ['a.v', NOW - 9, 2], ['b.v', NOW, 2]])
  })
})
