// Schemas shared by many routes: the problem body and the list envelope.
import { Type, type IntegerOptions, type NumberOptions } from '@sinclair/typebox'
import { t, type TSchema } from 'elysia'

/**
 * An integer inside a JSON document (a response, or a JSON body). Elysia's t.Integer also takes numeric
 * strings, which query strings need; that makes it a transform, and Elysia then re-encodes a response declared
 * with one field by field, through TypeBox's interpreter, on every request. Hot-path responses use this.
 */
export const JsonInteger = (options?: IntegerOptions) => Type.Integer(options)
/**
 * A number inside a JSON document. Request bodies use JsonInteger and JsonNumber, never Elysia's t.Integer and
 * t.Number: those take "5" for 5, so a body's number string was stored as a string (issue 24).
 */
export const JsonNumber = (options?: NumberOptions) => Type.Number(options)

export const Problem = t.Object({
  type: t.String({ format: 'uri' }),
  title: t.String(),
  status: JsonInteger(),
  detail: t.String(),
  code: t.String({ description: 'Stable machine-readable error code (CONTRACT §3).' }),
  request_id: t.String(),
  errors: t.Array(t.Object({ path: t.String({ description: 'JSON Pointer into the request (body, query or path).' }), message: t.String() })),
  required_scopes: t.Optional(t.Array(t.String(), { description: 'On insufficient_scope: the scopes the operation needs (empty when no scope admits a personal token: see `required_key`).' })),
  required_key: t.Optional(t.Literal('device', { description: 'On insufficient_scope for an operation only a device key may call.' })),
  checks: t.Optional(t.Record(t.String(), t.Union([t.Literal('ok'), t.Literal('down')]), { description: 'On /readyz 503: each backend and whether it answered.' })),
  // Readings queries refused before they run (ingest/planner.ts): what the limit is and how to fit under it.
  max_rows: t.Optional(JsonInteger({ description: 'On query_too_expensive: the most rows a readings query may cover.' })),
  rows: t.Optional(JsonInteger({ description: 'On query_too_expensive: the rows this query covers (series × buckets).' })),
  series: t.Optional(JsonInteger({ description: 'On query_too_expensive: the series the filter matches.' })),
  buckets: t.Optional(JsonInteger({ description: 'On query_too_expensive: the buckets of the window at this interval.' })),
  max_window_seconds: t.Optional(JsonInteger({ description: 'On query_too_expensive: the longest window that fits at this interval.' })),
  suggested_interval: t.Optional(t.String({ description: 'On query_too_expensive: the finest coarser interval that fits; on beyond_retention: the finest interval the kept rollups answer (with `suggested_from`).' })),
  suggested_from: t.Optional(t.String({ format: 'date-time', description: 'On beyond_retention: a `from` on the grid of `suggested_interval`.' })),
  retention_days: t.Optional(t.Record(t.String(), JsonInteger(), { description: 'On beyond_retention: days each kept level (`raw`, `1m`, `5m`, `1h`, `1d`) is kept; 0 = forever.' })),
  retained_from: t.Optional(t.Record(t.String(), t.Union([t.String({ format: 'date-time' }), t.Null()]), { description: 'On beyond_retention: the earliest instant each kept level still holds (null: forever).' })),
}, { $id: '#/components/schemas/Problem', description: 'RFC 9457 problem details.' })

/** The list envelope every list answers with (CONTRACT §4). */
export function PageOf<T extends TSchema>(item: T) {
  return t.Object({
    data: t.Array(item),
    has_more: t.Boolean(),
    next_cursor: t.Union([t.String(), t.Null()], { description: 'Pass as `cursor` to get the next page; null on the last page.' }),
  })
}

export const Timestamp = t.String({ format: 'date-time', description: 'RFC 3339 UTC with milliseconds.' })

/** `limit` and `cursor`, the paging parameters of every list. */
export function pageQuery(defaultLimit = 50, maxLimit = 200) {
  return {
    limit: t.Optional(t.Integer({ minimum: 1, maximum: maxLimit, default: defaultLimit, description: `Page size, 1–${maxLimit} (default ${defaultLimit}).` })),
    cursor: t.Optional(t.String({ maxLength: 2048, description: 'The `next_cursor` of the previous page; bound to this list and its filters.' })),
  }
}
