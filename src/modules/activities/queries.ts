// The query of GET /activities, shared by its route (which validates it) and the service (whose input type is
// derived from it, so the two cannot drift apart).
import { t, type Static } from 'elysia'
import { pageQuery } from '../../http/schemas.ts'
import { UpdatedSince } from '../../records/fields.ts'

// The docs page composes an activity's sample from this example and details' ({ grams }): a weighing, which the
// API takes (a feeding with { grams } it refuses).
export const TypeId = t.String({ minLength: 1, maxLength: 50, description: 'An `/activity-types` id.', examples: ['weight'] })

export const ActivityListQuery = t.Object({
  ...pageQuery(),
  animal_id: t.Optional(t.String({ maxLength: 40 })),
  type: t.Optional(TypeId),
  from: t.Optional(t.String({ format: 'date-time', description: 'Occurred at or after this instant.' })),
  to: t.Optional(t.String({ format: 'date-time', description: 'Occurred before this instant.' })),
  updated_since: UpdatedSince,
})
export type ActivityListQuery = Static<typeof ActivityListQuery>
