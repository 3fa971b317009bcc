import { t } from 'elysia'
import { JsonInteger } from '../../http/schemas.ts'
import { BREEDING_STATUSES, CLUTCH_STATUSES, breedingRecords, clutches } from '../../../db/schema/index.ts'
import { defineArea } from '../../records/areas.ts'
import { DateOnly, IdOf, Instant, Notes, UpdatedSince, nullable, oneOf } from '../../records/fields.ts'
import { atOrAfter, dateFrom, dateTo, eitherEquals, equals } from '../../records/filters.ts'

const RecordStatus = oneOf(BREEDING_STATUSES, 'planned → paired → gravid → laid, or unsuccessful.')
const ClutchStatus = oneOf(CLUTCH_STATUSES)
const SpeciesId = t.String({ minLength: 1, maxLength: 100, description: 'A `/species` id.' })
// t.Integer, not JsonInteger: it is also used nullable, and a nullable JsonInteger would change the published
// schema's form (type: [integer, null] instead of anyOf); these lists are not hot.
const Count = t.Integer({ minimum: 0, maximum: 1000 })

export const BreedingRecord = t.Object({
  id: IdOf('breeding'),
  species_id: SpeciesId,
  dam_id: nullable(IdOf('animal', 'The female.')),
  sire_id: nullable(IdOf('animal', 'The male.')),
  season: JsonInteger({ minimum: 1900, maximum: 2200, description: 'Breeding season (year).' }),
  status: RecordStatus,
  paired_on: nullable(DateOnly),
  separated_on: nullable(DateOnly),
  locks_observed: Count,
  ovulation_on: nullable(DateOnly),
  pre_lay_shed_on: nullable(DateOnly),
  notes: nullable(Notes),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/BreedingRecord' })

export const Clutch = t.Object({
  id: IdOf('clutch'),
  breeding_record_id: nullable(IdOf('breeding', 'The pairing that produced it.')),
  species_id: SpeciesId,
  dam_id: nullable(IdOf('animal')),
  sire_id: nullable(IdOf('animal')),
  status: ClutchStatus,
  laid_on: DateOnly,
  egg_count: Count,
  fertile_count: nullable(Count),
  slug_count: nullable(Count),
  hatched_count: nullable(Count),
  incubator_id: nullable(IdOf('environment', 'The incubator (an environment).')),
  incubation_temperature_c: nullable(t.Number({ minimum: 0, maximum: 50 })),
  expected_hatch_on: nullable(DateOnly),
  hatched_on: nullable(DateOnly),
  notes: nullable(Notes),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/Clutch' })

const AnimalFilter = t.Optional(t.String({ maxLength: 40, description: 'Records with this animal as dam or sire.' }))

export const breedingRecordsArea = defineArea({
  name: 'breeding-records', path: '/breeding/records', tag: 'Breeding', scope: 'breeding:read', idKind: 'breeding',
  summary: 'List breeding records', description: 'Pairings: who was put with whom, in which season, and how it went.',
  table: breedingRecords, item: BreedingRecord,
  filters: {
    status: t.Optional(RecordStatus),
    species_id: t.Optional(t.String({ maxLength: 100 })),
    animal_id: AnimalFilter,
    season: t.Optional(t.Integer({ minimum: 1900, maximum: 2200 })),
    updated_since: UpdatedSince,
  },
  conditions: (f) => [
    equals(breedingRecords.status, f.status), equals(breedingRecords.species_id, f.species_id), equals(breedingRecords.season, f.season),
    eitherEquals(breedingRecords.dam_id, breedingRecords.sire_id, f.animal_id), atOrAfter(breedingRecords.updated_at, f.updated_since),
  ],
})

export const clutchesArea = defineArea({
  name: 'clutches', path: '/breeding/clutches', tag: 'Breeding', scope: 'breeding:read', idKind: 'clutch',
  summary: 'List clutches', description: 'Eggs laid, their incubation and how many hatched.',
  table: clutches, item: Clutch,
  filters: {
    status: t.Optional(ClutchStatus),
    species_id: t.Optional(t.String({ maxLength: 100 })),
    animal_id: AnimalFilter,
    breeding_record_id: t.Optional(t.String({ maxLength: 40 })),
    laid_from: t.Optional(t.String({ format: 'date', description: 'Laid on or after this date.' })),
    laid_to: t.Optional(t.String({ format: 'date', description: 'Laid on or before this date.' })),
    updated_since: UpdatedSince,
  },
  conditions: (f) => [
    equals(clutches.status, f.status), equals(clutches.species_id, f.species_id), equals(clutches.breeding_record_id, f.breeding_record_id),
    eitherEquals(clutches.dam_id, clutches.sire_id, f.animal_id), dateFrom(clutches.laid_on, f.laid_from), dateTo(clutches.laid_on, f.laid_to),
    atOrAfter(clutches.updated_at, f.updated_since),
  ],
})
