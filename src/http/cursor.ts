import { createHmac, timingSafeEqual } from 'node:crypto'
import { ApiError } from './errors.ts'

/** What a cursor is bound to: the list, the account and the exact filters it was issued for. */
export interface CursorScope {
  list: string
  accountId: string
  filters: Record<string, unknown>
}

/** The position after the last item of a page: its sort key values, ending with the id as a tie-breaker. */
export type CursorPosition = readonly (string | number | null)[]

/** JSON with object keys sorted, so equal values always give equal text (cursor bindings, request fingerprints). */
export function canonical(value: unknown): string {
  // Sorted keys so the same filters always bind to the same cursor, whatever order they were written in.
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null)
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : 1))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`
}

/**
 * Opaque, tamper-evident, list-bound cursors: base64url(payload) "." base64url(HMAC). The payload carries only
 * the position; the binding (list, account, filters) is mixed into the MAC, so a cursor replayed on another
 * list, account or filter set fails verification just like a forged one.
 */
export class CursorCodec {
  constructor(private readonly secret: string) {}

  encode(scope: CursorScope, position: CursorPosition): string {
    const payload = Buffer.from(JSON.stringify(position)).toString('base64url')
    return `${payload}.${this.mac(scope, payload)}`
  }

  decode(scope: CursorScope, cursor: string): CursorPosition {
    const dot = cursor.indexOf('.')
    const fail = () => new ApiError('invalid_cursor', 'The cursor is malformed, was altered, or belongs to another list or filter set. Start again without a cursor.')
    if (dot <= 0 || cursor.length > 2048) throw fail()
    const payload = cursor.slice(0, dot)
    // Compare the text, not decoded bytes: base64url has spare bits, so two strings can decode alike.
    const given = Buffer.from(cursor.slice(dot + 1))
    const expected = Buffer.from(this.mac(scope, payload))
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw fail()
    try {
      const position = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
      if (!Array.isArray(position)) throw fail()
      return position
    } catch {
      throw fail()
    }
  }

  private mac(scope: CursorScope, payload: string): string {
    return createHmac('sha256', this.secret)
      .update(`${scope.list}\n${scope.accountId}\n${canonical(scope.filters)}\n${payload}`)
      .digest('base64url').slice(0, 27)
  }
}

export interface Page<T> { data: T[]; has_more: boolean; next_cursor: string | null }

/**
 * Turns `limit + 1` rows fetched in keyset order into a page: the extra row only says whether more exist.
 * `positionOf` gives the sort key of a row, ending with its id.
 */
export function toPage<Row, Out>(
  rows: Row[], limit: number, codec: CursorCodec, scope: CursorScope,
  positionOf: (row: Row) => CursorPosition, present: (row: Row) => Out,
): Page<Out> {
  const hasMore = rows.length > limit
  const pageRows = hasMore ? rows.slice(0, limit) : rows
  const last = pageRows[pageRows.length - 1]
  return {
    data: pageRows.map(present),
    has_more: hasMore,
    next_cursor: hasMore && last !== undefined ? codec.encode(scope, positionOf(last)) : null,
  }
}
