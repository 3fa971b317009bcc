// InfluxDB line protocol (https://docs.influxdata.com/influxdb/v2/reference/syntax/line-protocol/), parsed into
// points: `measurement[,tag=value…] field=value[,field=value…] [timestamp]`, one per line. Knows nothing of devices
// or readings (./write.ts maps points to readings): grammar, escapes, value types and timestamps only.
//
// What it follows from InfluxDB's reference (and from VictoriaMetrics' lib/protoparser/influx, which parses the same):
// - Escapes: in the measurement, tag keys, tag values and field keys a backslash before `,`, `=`, space or another
//   backslash stands for that character; a backslash before anything else is itself. In a string field value `\"`
//   and `\\` are escapes. A quoted string may span lines.
// - Field values: floats (`1`, `-1.5`, `.5`, `1e3`; no NaN or Inf), integers `12i` (int64), unsigned `12u`
//   (uint64), booleans `t T true True TRUE f F false False FALSE`, strings `"…"`. Numbers and booleans become a
//   number (true = 1, false = 0); integers beyond 2^53 lose precision as every reading is a float8.
// - Timestamp: optional, an integer in the request's precision, converted to epoch milliseconds (sub-millisecond
//   digits are dropped, not rounded: readings are kept to the millisecond).
// - Blank lines and lines starting with `#` (after optional spaces or tabs) are skipped; CRLF endings are taken.
// A line that breaks the grammar is reported by its number and text, and the lines around it still parse.

export type Precision = 'ns' | 'us' | 'ms' | 's' | 'm' | 'h'

/** A field whose value is a number or boolean (as a number); string fields are only counted. */
export interface NumericField { key: string; value: number }

/** A measurement and tag set; one object per distinct text while it stays in the SeriesCache given to the parser. */
export interface Series {
  measurement: string
  /** Tag keys and values, alternating (`[k1, v1, k2, v2]`), in the order the line gave them. */
  tags: string[]
  /** The series as the line wrote it (escapes and all). */
  readonly text: string
  /** Channel keys by field key: filled by whoever maps series to channels (write.ts), kept with the series. */
  readonly channels: Map<string, string>
  /**
   * The field keys last written at each place in a line of this series (those written without escapes): a collector
   * writes a series' fields in the same order every time, so the parser compares the text with the key there instead
   * of making the key's string anew, and the channels' lookup meets a string whose hash is known.
   */
  readonly fieldKeys: string[]
  /**
   * The series of the line that followed this one's last time: a collector writes its series in the same order in
   * every body, so the next line's text is compared with it before it is hashed for the cache (the bench's bodies:
   * 0.17 to 0.13 µs per line, bench/lineproto-parse.ts).
   */
  next?: Series
}

/**
 * Series by the text a line writes them in (escapes and all: the same text is the same series), so a series seen
 * before costs one lookup instead of its tags' parse. Found by a hash of the text taken while scanning it, then the
 * text compared in place: keyed by the text itself, each line sliced a string for the Map to hash and compare, 24 %
 * of the samples of parse and mapping (bench/lineproto-parse.ts under --cpu-prof); by hash, with the field keys
 * below, the parse of the bench's bodies went from 0.30 to 0.17 µs per line. Two series of one hash take turns in
 * the cache, each parsed in full when it finds the other there. Starts over past MAX_CACHED_SERIES (bounds memory).
 */
export class SeriesCache {
  private readonly byHash = new Map<number, Series>()
  /** The series written as `body` from `start` to `end`, whose hash (Scanner.series) is `hash`, if seen before. */
  get(body: string, start: number, end: number, hash: number): Series | undefined {
    const known = this.byHash.get(hash)
    return known !== undefined && known.text.length === end - start && body.startsWith(known.text, start) ? known : undefined
  }
  add(hash: number, series: Series) {
    if (this.byHash.size >= MAX_CACHED_SERIES) this.byHash.clear()
    this.byHash.set(hash, series)
  }
}
const MAX_CACHED_SERIES = 100_000
/** Field keys remembered per series (fieldKeys): more than any collector writes on one line. */
const MAX_KNOWN_FIELDS = 64

export interface Point {
  series: Series
  fields: NumericField[]
  /** Epoch milliseconds, or undefined when the line has no timestamp. */
  ts: number | undefined
  /** The line's number in the body, 1-based (for errors found after parsing: a timestamp out of range). */
  line: number
  /** Where the line begins and ends in the body (its text, for errors found after parsing). */
  start: number
  end: number
}

export interface LineError { line: number; text: string; reason: string }

export interface ParsedLines {
  points: Point[]
  errors: LineError[]
  /** String fields seen (not readings, not errors). */
  stringFields: number
}

/** The longest line text an error repeats: enough to find the line, not an echo of a hostile megabyte. */
const ERROR_TEXT_CHARS = 120

/** What one timestamp unit is in milliseconds: a divisor for the sub-millisecond units, a factor for the rest. */
const DIVISOR_DIGITS: Partial<Record<Precision, number>> = { ns: 6, us: 3 }
const FACTOR: Partial<Record<Precision, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

const INTEGER = /^-?\d+$/
const UNSIGNED = /^\d+$/
const INT64_MAX = 9223372036854775807n
const INT64_MIN = -9223372036854775808n
const UINT64_MAX = 18446744073709551615n
const INT64_MAX_DIGITS = '9223372036854775807'
const INT64_MIN_DIGITS = '9223372036854775808'
const TRUE = new Set(['t', 'T', 'true', 'True', 'TRUE'])
const FALSE = new Set(['f', 'F', 'false', 'False', 'FALSE'])
// Character codes the scanner compares (charCodeAt: no one-character strings made per character).
const NEWLINE = 10, RETURN = 13, SPACE = 32, TAB = 9, COMMA = 44, EQUALS = 61, BACKSLASH = 92, QUOTE = 34, HASH = 35
const DIGIT_0 = 48, DIGIT_9 = 57, MINUS = 45, PLUS = 43, DOT = 46, LOWER_E = 101, UPPER_E = 69

class LineSyntaxError extends Error {}
const fail = (reason: string): never => { throw new LineSyntaxError(reason) }

/** Parses a whole body; never throws for bad input (each bad line is an error, the rest are points). */
export function parseLineProtocol(text: string, precision: Precision, cache: SeriesCache = new SeriesCache()): ParsedLines {
  const points: Point[] = []
  const errors: LineError[] = []
  let stringFields = 0
  let pos = 0
  let line = 1
  const length = text.length
  const scanner = new Scanner(text)
  while (pos < length) {
    // Leading spaces and tabs, then a blank line or a comment.
    let first = text.charCodeAt(pos)
    while (first === SPACE || first === TAB) first = text.charCodeAt(++pos)
    if (first === NEWLINE) { pos++; line++; continue }
    if (first === RETURN && text.charCodeAt(pos + 1) === NEWLINE) { pos += 2; line++; continue }
    if (first === HASH) {
      const end = text.indexOf('\n', pos)
      pos = end === -1 ? length : end + 1
      line++
      continue
    }
    if (pos >= length) break
    const start = pos
    const startLine = line
    scanner.reset(start)
    try {
      const point = scanner.point(precision, startLine, cache)
      stringFields += scanner.stringFields
      point.start = start
      point.end = scanner.pos
      points.push(point)
      line += scanner.newlines + 1
      pos = scanner.pos + 1
    } catch (error) {
      if (!(error instanceof LineSyntaxError)) throw error
      // Resume after the line the error is on: a string spanning lines is not re-read as lines of its own.
      const at = Math.max(scanner.pos, start)
      const end = text.indexOf('\n', at)
      const stop = end === -1 ? length : end
      errors.push({ line: startLine, text: lineText(text, start, stop), reason: error.message })
      line += scanner.newlines + 1
      pos = stop + 1
    }
  }
  return { points, errors, stringFields }
}

/** A line's text for an error: without its line ending, cut to ERROR_TEXT_CHARS. */
export function lineText(text: string, start: number, end: number): string {
  let stop = end
  if (text[stop - 1] === '\r') stop--
  return stop - start > ERROR_TEXT_CHARS ? `${text.slice(start, start + ERROR_TEXT_CHARS)}…` : text.slice(start, stop)
}

/** One line's scan at a time; `pos` ends on the line's `\n` (or the body's end). */
class Scanner {
  stringFields = 0
  /** Line breaks inside quoted strings of this line. */
  newlines = 0
  pos = 0
  /** The series of the last line that had one (its `next` is the guess for this line's). */
  private previous: Series | undefined
  constructor(readonly text: string) {}

  reset(start: number) {
    this.pos = start
    this.stringFields = this.newlines = 0
  }

  point(precision: Precision, line: number, cache: SeriesCache): Point {
    const text = this.text
    const series = this.series(cache)
    if (text.charCodeAt(this.pos) !== SPACE) fail('missing fields')
    this.skipSpaces()
    const fields: NumericField[] = []
    for (let index = 0; ; index++) {
      const key = this.fieldKey(series, index)
      if (key === '') fail('missing field key')
      if (text.charCodeAt(this.pos) !== EQUALS) fail(`missing field value for field key "${key}"`)
      this.pos++
      if (text.charCodeAt(this.pos) === QUOTE) { this.quoted(); this.stringFields++ } else fields.push({ key, value: this.fieldValue(key) })
      if (text.charCodeAt(this.pos) !== COMMA) break
      this.pos++
    }
    let ts: number | undefined
    const c = text.charCodeAt(this.pos)
    if (c === SPACE || c === TAB) {
      this.skipSpaces()
      if (!this.atLineEnd()) {
        const start = this.pos
        let d = text.charCodeAt(this.pos)
        while (d === d && d !== NEWLINE && d !== SPACE && d !== TAB && !(d === RETURN && text.charCodeAt(this.pos + 1) === NEWLINE)) d = text.charCodeAt(++this.pos)
        ts = plainTimestampMs(text, start, this.pos, precision) ?? timestampMs(text.slice(start, this.pos), precision)
        this.skipSpaces()
      }
    }
    if (text.charCodeAt(this.pos) === RETURN) this.pos++
    if (!this.atLineEnd()) fail('unexpected text after the timestamp')
    return { series, fields, ts, line, start: 0, end: 0 }
  }

  /** The measurement and tags, from the cache when this text was seen before (the usual case for a collector). */
  private series(cache: SeriesCache): Series {
    const text = this.text
    const start = this.pos
    // The series that followed the previous line's last time, when this line repeats it up to its space: that
    // space ends the series as it ended that one (the same characters scan the same way).
    const guess = this.previous?.next
    if (guess !== undefined && text.startsWith(guess.text, start) && text.charCodeAt(start + guess.text.length) === SPACE) {
      this.pos = start + guess.text.length
      return (this.previous = guess)
    }
    // The series ends at the first unescaped space (or the line's end, which the full parse below reports).
    // Its hash on the way (31·h + c over its characters, escaped ones included), for the cache.
    let end = start
    let hash = 0
    for (let c = text.charCodeAt(end); c === c && c !== SPACE && c !== NEWLINE; c = text.charCodeAt(++end)) {
      hash = (Math.imul(hash, 31) + c) | 0
      if (c === BACKSLASH) hash = (Math.imul(hash, 31) + (text.charCodeAt(++end) | 0)) | 0
    }
    let series = cache.get(text, start, end, hash)
    if (series) this.pos = end
    else {
      series = this.parseSeries(end)
      // Only a series that parsed to its end (the space before the fields) is remembered.
      if (this.pos !== end) return series
      cache.add(hash, series)
    }
    if (this.previous) this.previous.next = series
    return (this.previous = series)
  }

  /** A series' measurement and tags, read from the text. */
  private parseSeries(end: number): Series {
    const text = this.text
    const start = this.pos
    const measurement = this.name(true)
    if (measurement === '') fail('missing measurement')
    const tags: string[] = []
    let tagKeys: Set<string> | undefined
    while (text.charCodeAt(this.pos) === COMMA) {
      this.pos++
      const key = this.name(false)
      if (key === '') fail('missing tag key')
      if (text.charCodeAt(this.pos) !== EQUALS) fail(`missing tag value for tag key "${key}"`)
      this.pos++
      const value = this.name(false)
      if (value === '') fail(`missing tag value for tag key "${key}"`)
      // A scan while tags are few (every collector's case); a set past that, so 100,000 tags cost no 10^10 steps.
      if (tagKeys) { if (tagKeys.has(key)) fail(`duplicate tag key "${key}"`); tagKeys.add(key) }
      else {
        for (let i = 0; i < tags.length; i += 2) if (tags[i] === key) fail(`duplicate tag key "${key}"`)
        if (tags.length >= 32) tagKeys = new Set(tags.filter((_, i) => i % 2 === 0)).add(key)
      }
      tags.push(key, value)
    }
    return { measurement, tags, text: this.pos === end ? text.slice(start, end) : '', channels: new Map(), fieldKeys: [], next: undefined }
  }

  /** The field key at `index` in the line: the series' known key there when the text repeats it, else read anew. */
  private fieldKey(series: Series, index: number): string {
    const known = series.fieldKeys[index]
    // The known key was read whole by name(), so the same characters followed by `=` read as the same key.
    if (known !== undefined && this.text.startsWith(known, this.pos) && this.text.charCodeAt(this.pos + known.length) === EQUALS) {
      this.pos += known.length
      return known
    }
    const start = this.pos
    const key = this.name(false)
    // Only a key without escapes (its text is the key) is remembered, and only in order (no holes).
    if (key !== '' && key.length === this.pos - start && index <= series.fieldKeys.length && index < MAX_KNOWN_FIELDS) series.fieldKeys[index] = key
    return key
  }

  private atLineEnd(): boolean {
    const c = this.text.charCodeAt(this.pos)
    return c !== c || c === NEWLINE || (c === RETURN && this.text.charCodeAt(this.pos + 1) === NEWLINE)
  }

  private skipSpaces() {
    let c = this.text.charCodeAt(this.pos)
    while (c === SPACE || c === TAB) c = this.text.charCodeAt(++this.pos)
  }

  /**
   * A measurement (`measurement`: only `,` and space end it), tag key, tag value or field key (`,`, `=` and space
   * end them): up to an unescaped end, or the line's end.
   */
  private name(measurement: boolean): string {
    const text = this.text
    const start = this.pos
    let escaped = false
    let pos = start
    for (;;) {
      const c = text.charCodeAt(pos)
      // NaN (past the end) is the only value not equal to itself.
      if (c !== c || c === COMMA || c === SPACE || c === NEWLINE || (c === EQUALS && !measurement)) break
      if (c === RETURN && text.charCodeAt(pos + 1) === NEWLINE) break
      if (c === BACKSLASH) {
        const next = text.charCodeAt(pos + 1)
        if (next === COMMA || next === EQUALS || next === SPACE || next === BACKSLASH) { escaped = true; pos += 2; continue }
      }
      pos++
    }
    this.pos = pos
    const raw = text.slice(start, pos)
    return escaped ? raw.replace(ESCAPE, '$1') : raw
  }

  /** A string field value, from its opening quote to its closing one (which may be lines later). */
  private quoted() {
    const text = this.text
    let pos = this.pos + 1
    for (;;) {
      const c = text.charCodeAt(pos)
      if (c !== c) { this.pos = text.length; fail('unterminated string field value') }
      if (c === BACKSLASH && (text.charCodeAt(pos + 1) === QUOTE || text.charCodeAt(pos + 1) === BACKSLASH)) { pos += 2; continue }
      if (c === QUOTE) break
      if (c === NEWLINE) this.newlines++
      pos++
    }
    this.pos = pos + 1
  }

  /** A number or boolean field value, as a number. */
  private fieldValue(key: string): number {
    const text = this.text
    const start = this.pos
    const plain = plainDecimal(text, start)
    if (plain !== undefined) { this.pos = plainEnd; return plain }
    // Whether the token holds only what a float may (digits, sign, point, exponent) and starts as one may.
    let numeric = true
    let pos = start
    for (let c = text.charCodeAt(pos); c === c; c = text.charCodeAt(++pos)) {
      if (c === COMMA || c === SPACE || c === TAB || c === NEWLINE || c === RETURN) break
      if (!((c >= DIGIT_0 && c <= DIGIT_9) || c === DOT || c === MINUS || c === PLUS || c === LOWER_E || c === UPPER_E)) numeric = false
    }
    this.pos = pos
    if (text.charCodeAt(pos) === RETURN && text.charCodeAt(pos + 1) !== NEWLINE) fail(`invalid field value for field key "${key}"`)
    const token = text.slice(start, pos)
    if (token === '') fail(`missing field value for field key "${key}"`)
    const first = token.charCodeAt(0)
    // Number() takes what InfluxDB's float grammar does once the characters are checked, but for a leading `+`,
    // a leading exponent and a lone sign or point, which it reads as NaN or which are refused here.
    if (numeric && first !== PLUS && first !== LOWER_E && first !== UPPER_E) {
      const value = Number(token)
      if (value === value && token.charCodeAt(token.length - 1) !== PLUS && token.charCodeAt(token.length - 1) !== MINUS) {
        if (!Number.isFinite(value)) fail(`float "${token.slice(0, 40)}" out of range for field key "${key}"`)
        return value
      }
    }
    const last = token[token.length - 1]
    if (last === 'i') {
      const digits = token.slice(0, -1)
      if (!INTEGER.test(digits)) fail(`invalid integer "${token.slice(0, 40)}" for field key "${key}"`)
      if (digits.length >= 19) { const big = BigInt(digits); if (big > INT64_MAX || big < INT64_MIN) fail(`integer "${token.slice(0, 40)}" out of range for field key "${key}"`) }
      return Number(digits)
    }
    if (last === 'u') {
      const digits = token.slice(0, -1)
      if (!UNSIGNED.test(digits)) fail(`invalid unsigned integer "${token.slice(0, 40)}" for field key "${key}"`)
      if (digits.length >= 20 && BigInt(digits) > UINT64_MAX) fail(`unsigned integer "${token.slice(0, 40)}" out of range for field key "${key}"`)
      return Number(digits)
    }
    if (TRUE.has(token)) return 1
    if (FALSE.has(token)) return 0
    fail(`invalid field value "${token.length > 40 ? `${token.slice(0, 40)}…` : token}" for field key "${key}"`)
    return NaN
  }
}

const ESCAPE = /\\([,= \\])/g

/** Exact powers of ten (every one up to 10^22 is a double exactly). */
const POWERS_OF_TEN = Array.from({ length: 16 }, (_, k) => 10 ** k)
/** Where the last plainDecimal ended (one scanner runs at a time: no object per value). */
let plainEnd = 0

/**
 * The common field value, a plain decimal of at most 15 digits (`21.5`, `-3`, `.5`, `1.`), read while scanning:
 * digits ÷ 10^k is then the correctly rounded double, as Number() would give (both exact below 2^53, and IEEE
 * division rounds correctly), without making the token's string. Undefined for anything else (the full path reads it).
 */
export function plainDecimal(text: string, start: number): number | undefined {
  let pos = start
  let c = text.charCodeAt(pos)
  const negative = c === MINUS
  if (negative) c = text.charCodeAt(++pos)
  let mantissa = 0
  let digits = 0
  let fraction = -1
  for (;;) {
    if (c >= DIGIT_0 && c <= DIGIT_9) { mantissa = mantissa * 10 + (c - DIGIT_0); digits++; if (fraction >= 0) fraction++ }
    else if (c === DOT && fraction < 0) fraction = 0
    else break
    c = text.charCodeAt(++pos)
  }
  if (digits === 0 || digits > 15) return undefined
  if (!(c !== c || c === COMMA || c === SPACE || c === TAB || c === NEWLINE || (c === RETURN && text.charCodeAt(pos + 1) === NEWLINE))) return undefined
  plainEnd = pos
  const value = fraction > 0 ? mantissa / POWERS_OF_TEN[fraction]! : mantissa
  return negative ? -value : value
}

/**
 * The common timestamp, digits only (no sign) within what a double holds exactly once cut to milliseconds, read from
 * the text without slicing; undefined for anything else (timestampMs reads it, and refuses what it must).
 */
export function plainTimestampMs(text: string, start: number, end: number, precision: Precision): number | undefined {
  const length = end - start
  const cut = DIVISOR_DIGITS[precision] ?? 0
  // Past int64 (19 digits above its maximum, or more digits) is for timestampMs to refuse.
  if (length === 0 || length - cut > 15 || length > 19) return undefined
  let whole = 0
  // While the digits so far equal int64's maximum's (19 digits only): a larger digit then means out of range.
  let atMaximum = length === 19
  for (let pos = start; pos < end; pos++) {
    const c = text.charCodeAt(pos)
    if (c < DIGIT_0 || c > DIGIT_9) return undefined
    if (atMaximum) {
      const limit = INT64_MAX_DIGITS.charCodeAt(pos - start)
      if (c > limit) return undefined
      if (c < limit) atMaximum = false
    }
    // Digits below the millisecond are dropped: for a non-negative number that truncates toward minus infinity, as timestampMs does.
    if (pos < end - cut) whole = whole * 10 + (c - DIGIT_0)
  }
  return cut ? whole : whole * FACTOR[precision]!
}

/** A timestamp in `precision` units as epoch milliseconds (an int64 in nanoseconds reaches year 2262). */
export function timestampMs(token: string, precision: Precision): number {
  if (!INTEGER.test(token)) fail(`invalid timestamp "${token.slice(0, 40)}"`)
  const negative = token[0] === '-'
  const digits = negative ? token.slice(1) : token
  // Compared as text: equal-length digit strings order as their numbers, and no BigInt is made per line.
  if (digits.length > 19 || (digits.length === 19 && digits > (negative ? INT64_MIN_DIGITS : INT64_MAX_DIGITS))) fail(`timestamp "${token.slice(0, 40)}" out of range`)
  const divisorDigits = DIVISOR_DIGITS[precision]
  if (divisorDigits !== undefined) {
    // Truncated toward minus infinity, by text: 19 digits of nanoseconds are beyond a double's exact integers.
    const whole = digits.length > divisorDigits ? Number(digits.slice(0, -divisorDigits)) : 0
    const hasRemainder = !/^0*$/.test(digits.slice(-divisorDigits))
    return negative ? -whole - (hasRemainder ? 1 : 0) : whole
  }
  return Number(token) * FACTOR[precision]!
}

/** The precisions each API names: v1 takes `n ns u µ ms s m h`, v2 `ns us ms s` (InfluxDB's own sets). */
export const V1_PRECISIONS: Readonly<Record<string, Precision>> = { n: 'ns', ns: 'ns', u: 'us', 'µ': 'us', ms: 'ms', s: 's', m: 'm', h: 'h' }
export const V2_PRECISIONS: Readonly<Record<string, Precision>> = { ns: 'ns', us: 'us', ms: 'ms', s: 's' }
