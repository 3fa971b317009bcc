// JSON request bodies, refused cheaply before anything else looks at them. A body nested 100,000 levels deep
// parses fine, then sends the schema validator into deep recursion (seconds of CPU, gigabytes of memory, a stack
// overflow); so the text is scanned for its nesting depth and its longest string and array before JSON.parse, in
// one pass with no allocation. NUL cannot be stored by Postgres and a lone surrogate cannot be encoded as UTF-8
// (it would be stored as U+FFFD): both are refused with the field named. Valid JSON can carry either only as a
// `\u` escape, so bodies without one (every reading a sensor sends) skip that walk.
import { ApiError, type FieldError } from './errors.ts'

export const JSON_LIMITS = {
  /** Objects and arrays inside one another. */
  depth: 32,
  /** Items in one array (a readings batch holds at most 5,000). */
  arrayItems: 10_000,
  /** Characters in one string, as written in the body (escapes count as written). */
  stringChars: 65_536,
} as const

const QUOTE = 34, BACKSLASH = 92, OPEN_OBJECT = 123, CLOSE_OBJECT = 125, OPEN_ARRAY = 91, CLOSE_ARRAY = 93, COMMA = 44
/** 1 for the characters the scan below acts on (a quote, braces, brackets, a comma), by char code up to '}'. */
const STRUCTURAL = new Uint8Array(CLOSE_OBJECT + 1)
for (const code of [QUOTE, OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY, COMMA]) STRUCTURAL[code] = 1

function refuse(message: string): never {
  throw new ApiError('validation_failed', `The body is refused before validation: ${message}.`, { errors: [{ path: '/body', message }] })
}

/**
 * Checks the limits on the raw text. Malformed text is left for JSON.parse to refuse: the scan only needs to be
 * right for well-formed JSON, and never to loop or throw on anything else.
 */
function checkShape(text: string): void {
  // Item counts per open array; objects push -1 so commas inside them are not counted.
  const counts: number[] = []
  let depth = 0
  const length = text.length
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i)
    // Most characters (digits, letters, ':' and spaces) are none of the six: one table lookup passes them. Against
    // the comparisons alone, a POST of 100 readings cost 1.8 µs less of its 71 (medians of 36 alternating pairs, two
    // app versions in one process, 2026-11-28).
    if (c > CLOSE_OBJECT || STRUCTURAL[c] === 0) continue
    if (c === QUOTE) {
      const start = i
      for (i++; i < length; i++) {
        const s = text.charCodeAt(i)
        if (s === BACKSLASH) i++
        else if (s === QUOTE) break
      }
      if (i - start - 1 > JSON_LIMITS.stringChars) refuse(`a string is longer than ${JSON_LIMITS.stringChars} characters`)
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > JSON_LIMITS.depth) refuse(`it nests objects and arrays deeper than ${JSON_LIMITS.depth} levels`)
      counts.push(c === OPEN_ARRAY ? 1 : -1)
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--
      counts.pop()
    } else if (c === COMMA && depth > 0) {
      const top = counts.length - 1
      if (counts[top]! > 0 && ++counts[top]! > JSON_LIMITS.arrayItems) refuse(`an array holds more than ${JSON_LIMITS.arrayItems} items`)
    }
  }
}

// A NUL, or a high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** JSON Pointer of every string (keys included) holding a character no text column can store. */
function unstorableStrings(value: unknown, path: string, found: FieldError[]): void {
  if (typeof value === 'string') {
    if (UNSTORABLE.test(value)) found.push({ path, message: 'contains a NUL character or a lone UTF-16 surrogate, which cannot be stored' })
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => unstorableStrings(item, `${path}/${i}`, found))
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const pointer = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`
      if (UNSTORABLE.test(key)) found.push({ path: pointer, message: 'is a field name with a NUL character or a lone UTF-16 surrogate' })
      unstorableStrings(item, pointer, found)
    }
  }
}

/** Parses a JSON request body within the limits; throws the ApiError to answer with. */
export function parseJsonBody(text: string): unknown {
  checkShape(text)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new ApiError('malformed_json', 'The body is not valid JSON.')
  }
  if (text.includes('\\u')) {
    const found: FieldError[] = []
    unstorableStrings(value, '/body', found)
    if (found.length) throw new ApiError('validation_failed', 'The body holds text that cannot be stored.', { errors: found })
  }
  return value
}

/** The same check for values that arrive outside a JSON body (form fields, query parameters). */
export function unstorableFields(values: Record<string, unknown>, where: string): FieldError[] {
  const found: FieldError[] = []
  unstorableStrings(values, where, found)
  return found
}
