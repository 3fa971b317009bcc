// Strong entity tags from a record's version counter, and If-Match per RFC 9110 §13.1.1.
import { t } from 'elysia'
import { ApiError } from './errors.ts'

export const etagOf = (version: number) => `"v${version}"`

/** Throws 412 unless `ifMatch` (absent: no precondition) names the current version or is `*`. */
export function requireMatch(ifMatch: string | null | undefined, version: number): void {
  if (ifMatch === null || ifMatch === undefined) return
  const value = ifMatch.trim()
  if (value === '*') return
  // If-Match uses the strong comparison: weak tags (W/"…") never match.
  const tags = value.split(',').map((tag) => tag.trim())
  if (!tags.includes(etagOf(version))) {
    throw new ApiError('precondition_failed', `The record has changed (its ETag is now ${etagOf(version)}); fetch it again and reapply your change.`)
  }
}

/** The request headers of a conditional write (PATCH, DELETE). */
export const Preconditions = t.Object({
  'if-match': t.Optional(t.String({ description: 'The ETag of the version you read; a stale one is refused with 412.' })),
})
