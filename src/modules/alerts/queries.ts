// The query of GET /environment/alert-rules, shared by its route (which validates it) and the service (whose input
// type is derived from it, so the two cannot drift apart).
import { t, type Static } from 'elysia'
import { pageQuery } from '../../http/schemas.ts'
import { UpdatedSince } from '../../records/fields.ts'

export const RuleListQuery = t.Object({
  ...pageQuery(),
  environment_id: t.Optional(t.String({ maxLength: 40 })),
  device_id: t.Optional(t.String({ maxLength: 40 })),
  metric: t.Optional(t.String({ maxLength: 50 })),
  updated_since: UpdatedSince,
})
export type RuleListQuery = Static<typeof RuleListQuery>
