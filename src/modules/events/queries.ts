// The query of GET /events, shared by its route and the service (whose input type is derived from it).
import { t, type Static } from 'elysia'
import { pageQuery } from '../../http/schemas.ts'

const Instant = (description: string) => t.Optional(t.String({ format: 'date-time', description, examples: ['2026-11-21T10:00:00.000Z'] }))

export const EventListQuery = t.Object({
  ...pageQuery(),
  type: t.Optional(t.String({ maxLength: 50, description: 'Only events of this type, e.g. `animal.created`.' })),
  created_from: Instant('Only events created at or after this instant.'),
  created_to: Instant('Only events created before this instant.'),
})
export type EventListQuery = Static<typeof EventListQuery>
