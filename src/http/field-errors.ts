// Elysia's validation errors → field errors that teach: one per field, at the field's JSON Pointer, saying what
// the field must be (an enumeration lists its values), in words taken from the field's own schema.
import { ValueErrorType } from '@sinclair/typebox/errors'
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { FieldError } from './errors.ts'
import { EARLIEST_DATE, LATEST_DATE } from './formats.ts'
import { queryOf } from './request-url.ts'

type Schema = Record<string, any>

const FORMATS: Record<string, string> = {
  date: `a calendar date (YYYY-MM-DD) from ${EARLIEST_DATE} to ${LATEST_DATE}`,
  'date-time': `an RFC 3339 date-time from ${EARLIEST_DATE} to ${LATEST_DATE} (UTC), e.g. 2026-11-21T10:00:00.000Z`,
  uri: 'an absolute URL',
  email: 'an email address',
}

function lengthText(s: Schema, unit: string): string {
  const { min, max } = { min: s.minLength ?? s.minItems ?? s.minProperties, max: s.maxLength ?? s.maxItems ?? s.maxProperties }
  if (min !== undefined && max !== undefined) return min === max ? ` of exactly ${min} ${unit}` : ` of ${min} to ${max} ${unit}`
  if (max !== undefined) return ` of at most ${max} ${unit}`
  if (min !== undefined) return ` of at least ${min} ${unit}`
  return ''
}

/** What a value must be, as a phrase: "an integer from 1 to 200", "one of: male, female, unknown". */
export function expectation(schema: Schema): string {
  // A schema whose pattern says more than a person can read from it names what it accepts itself (an OpenAPI extension).
  if (typeof schema['x-expected'] === 'string') return schema['x-expected']
  if (Array.isArray(schema.enum)) return `one of: ${schema.enum.join(', ')}`
  if (schema.const !== undefined) return JSON.stringify(schema.const)
  if (Array.isArray(schema.anyOf)) {
    // Elysia's query integers also accept their text form; a person should read just "an integer".
    const branches = schema.anyOf.filter((b: Schema) => !(b.type === 'string' && (b.format === 'integer' || b.format === 'numeric')))
    if (branches.length && branches.every((b: Schema) => b.const !== undefined)) return `one of: ${branches.map((b: Schema) => b.const).join(', ')}`
    const nullable = branches.some((b: Schema) => b.type === 'null')
    const text = branches.filter((b: Schema) => b.type !== 'null').map(expectation).join(' or ')
    return nullable ? `${text} or null` : text
  }
  switch (schema.type) {
    case 'integer':
    case 'number': {
      const kind = schema.type === 'integer' ? 'an integer' : 'a number'
      const min = schema.minimum ?? schema.exclusiveMinimum
      const max = schema.maximum ?? schema.exclusiveMaximum
      if (min !== undefined && max !== undefined) return `${kind} from ${min} to ${max}`
      if (min !== undefined) return `${kind} of at least ${min}`
      if (max !== undefined) return `${kind} of at most ${max}`
      return kind
    }
    case 'string': {
      if (schema.format && FORMATS[schema.format]) return FORMATS[schema.format]!
      const example = Array.isArray(schema.examples) && typeof schema.examples[0] === 'string' ? ` like ${schema.examples[0]}` : ''
      if (schema.pattern) return `a string${example || ` matching ${schema.pattern}`}`
      return `a string${lengthText(schema, 'characters')}`
    }
    case 'boolean': return 'true or false'
    case 'array': return `a list${lengthText(schema, 'items')}`
    case 'object': return `an object${lengthText(schema, 'fields')}`
    case 'null': return 'null'
    default: return 'a valid value'
  }
}

function messageOf(e: { type: number; schema: Schema }): string {
  if (e.type === ValueErrorType.ObjectRequiredProperty) return `is required; must be ${expectation(e.schema)}`
  if (e.type === ValueErrorType.ObjectAdditionalProperties) return 'is not a field of this request'
  return `must be ${expectation(e.schema)}`
}

/**
 * Elysia reports a query integer that fails its bounds (`limit=0`) from inside its coercion, without the field's
 * name; the field is the query parameter whose value, read as a number, is the one that failed.
 */
function queryFieldOf(requestUrl: string, value: unknown, schema: Schema): string | undefined {
  for (const [name, text] of new URLSearchParams(queryOf(requestUrl))) {
    if (text.trim() !== '' && Number(text) === value && !Value.Check(schema as TSchema, Number(text))) return `/${name}`
  }
  return undefined
}

/** Field errors for an Elysia validation error on `part` (body, query, header) of the request at `requestUrl`. */
export function fieldErrors(error: any, part: '/body' | '/query' | '/header', requestUrl: string): FieldError[] {
  const all: any[] = Array.isArray(error?.all) ? error.all : []
  const located = all.map((e) => {
    const path: string = e.path ?? ''
    return path === '' && error?.type === 'property' && part === '/query' ? { ...e, path: queryFieldOf(requestUrl, e.value, e.schema ?? {}) ?? '' } : e
  })
  const list = schemaErrors(located, part)
  return list.length ? list : [{ path: part, message: String(error?.message ?? 'is invalid') }]
}

/**
 * TypeBox's errors for a value (a whole body, or a part checked on its own like an activity's `details`) as field
 * errors at `prefix` + each error's path: one per field, saying what it must be.
 */
export function schemaErrors(errors: Iterable<{ path?: string; type: number; schema: Schema }>, prefix: string): FieldError[] {
  const byPath = new Map<string, string>()
  for (const e of errors) {
    const path = e.path ?? ''
    // One problem, one error: a missing field is reported as missing, not also as the wrong type.
    if (!byPath.has(path)) byPath.set(path, messageOf(e))
  }
  return [...byPath].map(([path, message]) => ({ path: `${prefix}${path}`, message }))
}
