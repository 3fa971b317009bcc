// The query of GET /animals, shared by its route (which validates it) and the service (whose input type is derived
// from it, so the two cannot drift apart).
import { t, type Static } from 'elysia'
import { ANIMAL_SEXES, ANIMAL_STATUSES } from '../../../db/schema/index.ts'
import { pageQuery } from '../../http/schemas.ts'
import { UpdatedSince, oneOf } from '../../records/fields.ts'

export const Sex = oneOf(ANIMAL_SEXES)
export const Status = oneOf(ANIMAL_STATUSES, 'active, sold, deceased, or on_loan (kept elsewhere for now).')

export const AnimalListQuery = t.Object({
  ...pageQuery(),
  species_id: t.Optional(t.String({ maxLength: 100, description: 'Animals of this `/species` id (the same name as the field, and as on `/breeding/*`).' })),
  species: t.Optional(t.String({ maxLength: 100, deprecated: true, description: 'Deprecated alias of `species_id`, kept for existing clients; sending both with different values is a 400.' })),
  status: t.Optional(Status),
  sex: t.Optional(Sex),
  environment_id: t.Optional(t.String({ maxLength: 40 })),
  tag: t.Optional(t.String({ maxLength: 50, description: 'Animals carrying this tag.' })),
  q: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'Case-insensitive search in name and reference_id.' })),
  updated_since: UpdatedSince,
})
/** What the service filters by: the route's query, with the deprecated `species` folded into `species_id`. */
export type AnimalListQuery = Omit<Static<typeof AnimalListQuery>, 'species'>
