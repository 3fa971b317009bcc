// Field schemas shared by the records areas.
import { t, type TSchema } from 'elysia'
import { ID_PREFIXES, type IdKind } from '../ids.ts'

export const nullable = <T extends TSchema>(schema: T, description?: string) =>
  t.Union([schema, t.Null()], description ? { description } : {})

// Examples on every date and instant: without one, the docs page makes its sample up from the pattern
// (6896-55-76T36:74:17Z, which the API itself refuses).
export const DateOnly = t.String({ format: 'date', description: 'A calendar date, YYYY-MM-DD, from 0001-01-01 to 9999-12-31.', examples: ['2026-11-21'] })
const RFC3339 = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?(Z|z|[+-]\\d{2}:\\d{2})$'
/** An instant: any RFC 3339 offset is accepted; responses always give UTC with milliseconds. */
export const Instant = t.String({ format: 'date-time', pattern: RFC3339, description: 'RFC 3339 date-time from 0001-01-01 to 9999-12-31 in UTC (answers use UTC with milliseconds).', examples: ['2026-11-21T10:00:00.000Z'] })

/** An id of one kind; its examples and description name the prefix. */
export const IdOf = (kind: IdKind, description?: string) =>
  t.String({ pattern: `^${ID_PREFIXES[kind]}_[0-9a-hjkmnp-tv-z]{26}$`, examples: [`${ID_PREFIXES[kind]}_01jd8x3m5v6w7y8z9a0b1c2d3e`], ...(description ? { description } : {}) })

export const Tags = t.Array(t.String({ minLength: 1, maxLength: 50 }), { maxItems: 50, description: 'Free-form labels, at most 50.' })
export const Notes = t.String({ maxLength: 10_000 })
export const Metadata = t.Record(t.String({ minLength: 1, maxLength: 40 }), t.String({ maxLength: 500 }), {
  maxProperties: 50, description: 'Your own key-value pairs (at most 50; keys up to 40 characters, values up to 500).',
})

/** One of a fixed set of strings (an `enum` in the OpenAPI document). */
export function oneOf<const V extends readonly [string, ...string[]]>(values: V, description?: string) {
  const schema = t.UnionEnum(values, description ? { description } : {})
  // Elysia gives UnionEnum a default (the first value), which would silently fill an omitted field.
  delete (schema as { default?: unknown }).default
  return schema
}

/** `updated_since`, which every mutable resource's list accepts for sync (CONTRACT §4). */
export const UpdatedSince = t.Optional(t.String({ format: 'date-time', description: 'Only records updated at or after this instant (for sync).', examples: ['2026-11-21T10:00:00.000Z'] }))
