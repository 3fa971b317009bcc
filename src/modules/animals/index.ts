// /animals and /animal-types: the one area with full CRUD in v1 (CONTRACT §5).
import { Elysia, t } from 'elysia'
import { ANIMAL_SEXES, ANIMAL_STATUSES } from '../../../db/schema/index.ts'
import type { Deps } from '../../deps.ts'
import { ApiError } from '../../http/errors.ts'
import { Preconditions } from '../../http/etag.ts'
import { versioned } from '../../http/declared-response.ts'
import { op } from '../../http/operation.ts'
import { API_PREFIX } from '../../http/pipeline.ts'
import { principalMacro } from '../../http/request.ts'
import { PageOf, pageQuery, JsonInteger } from '../../http/schemas.ts'
import { isId } from '../../ids.ts'
import { DateOnly, IdOf, Instant, Metadata, Notes, Tags, UpdatedSince, nullable, oneOf } from '../../records/fields.ts'
import { AnimalListQuery, Sex, Status } from './queries.ts'
import { createAnimal, deleteAnimal, getAnimal, listAnimals, listAnimalTypes, presentAnimal, updateAnimal } from './service.ts'

const Name = t.String({ minLength: 1, maxLength: 100 })
const ReferenceId = t.String({ minLength: 1, maxLength: 64, description: "The keeper's own reference (e.g. a ring number or a spreadsheet id)." })
const SpeciesId = t.String({ minLength: 1, maxLength: 100, description: 'A `/species` id.', examples: ['python-regius'] })
const Morph = t.String({ maxLength: 200, description: 'Visual morph, e.g. "banana pastel".' })
const Traits = t.Array(t.String({ minLength: 1, maxLength: 100 }), { maxItems: 50, description: 'Genetic traits, e.g. "het clown", "pastel", "66% het pied".' })

export const Animal = t.Object({
  id: IdOf('animal'),
  name: Name,
  reference_id: nullable(ReferenceId),
  species_id: SpeciesId,
  sex: Sex,
  status: Status,
  morph: nullable(Morph),
  traits: Traits,
  birth_date: nullable(DateOnly),
  acquired_date: nullable(DateOnly),
  weight_grams: nullable(t.Number(), 'Latest recorded weight, from the newest weight activity.'),
  weighed_at: nullable(Instant, 'When the latest weight was taken.'),
  environment_id: nullable(IdOf('environment', 'Where the animal lives.')),
  dam_id: nullable(IdOf('animal', 'Mother.')),
  sire_id: nullable(IdOf('animal', 'Father.')),
  tags: Tags,
  notes: nullable(Notes),
  metadata: Metadata,
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/Animal' })

/** The nullable fields, written alike on create and patch. */
const optionalNullable = {
  reference_id: t.Optional(nullable(ReferenceId)),
  morph: t.Optional(nullable(Morph)),
  birth_date: t.Optional(nullable(DateOnly)),
  acquired_date: t.Optional(nullable(DateOnly)),
  environment_id: t.Optional(nullable(IdOf('environment'))),
  dam_id: t.Optional(nullable(IdOf('animal'))),
  sire_id: t.Optional(nullable(IdOf('animal'))),
  notes: t.Optional(nullable(Notes)),
}

const AnimalCreate = t.Object({
  name: Name,
  species_id: SpeciesId,
  sex: t.Optional(Sex),
  status: t.Optional(Status),
  traits: t.Optional(Traits),
  tags: t.Optional(Tags),
  metadata: t.Optional(Metadata),
  ...optionalNullable,
}, { additionalProperties: false, $id: '#/components/schemas/AnimalCreate' })

const AnimalPatch = t.Object({
  name: t.Optional(Name),
  species_id: t.Optional(SpeciesId),
  sex: t.Optional(Sex),
  status: t.Optional(Status),
  traits: t.Optional(nullable(Traits, 'null clears the list.')),
  tags: t.Optional(nullable(Tags, 'null clears the list.')),
  metadata: t.Optional(nullable(t.Record(t.String({ minLength: 1, maxLength: 40 }), nullable(t.String({ maxLength: 500 }))), 'Merged key by key: a null value removes that key; null here removes them all.')),
  ...optionalNullable,
}, { additionalProperties: false, $id: '#/components/schemas/AnimalPatch', description: 'A JSON merge patch (RFC 7396): members present replace the current value; null clears it.' })

const AnimalType = t.Object({
  species_id: SpeciesId,
  scientific_name: nullable(t.String()),
  common_name: nullable(t.String()),
  count: JsonInteger({ description: 'Animals of this species in the account (deleted ones excluded).' }),
}, { $id: '#/components/schemas/AnimalType' })

const IdParam = t.Object({ id: t.String({ description: 'An animal id (`anm_…`).' }) })


const animalId = (id: string) => {
  if (!isId('animal', id)) throw new ApiError('not_found', 'No such animal.')
  return id
}

export function animalsModule(deps: Deps) {
  return new Elysia({ name: 'animals', prefix: API_PREFIX })
    .use(principalMacro)
    .get('/animal-types', ({ principal, query }) => listAnimalTypes(deps, principal.accountId, query), {
      principal: true,
      query: t.Object(pageQuery()),
      response: { 200: PageOf(AnimalType) },
      detail: op({ operationId: 'listAnimalTypes', summary: 'List the species present in this account, with counts', tags: ['Animals'], scopes: ['animals:read'] }),
    })
    .get('/animals', ({ principal, query: { species, ...query } }) => {
      if (species !== undefined && query.species_id !== undefined && species !== query.species_id) {
        throw new ApiError('invalid_parameter', 'species is the old name of species_id; send one of them.', { errors: [{ path: '/query/species', message: 'differs from species_id; send species_id only' }] })
      }
      return listAnimals(deps, principal.accountId, { ...query, species_id: query.species_id ?? species })
    }, {
      principal: true,
      query: AnimalListQuery,
      response: { 200: PageOf(Animal) },
      detail: op({ operationId: 'listAnimals', summary: 'List animals', description: 'Newest first. Deleted animals are not listed.', tags: ['Animals'], scopes: ['animals:read'] }),
    })
    .post('/animals', async ({ principal, body, set }) => {
      const row = await createAnimal(deps, principal.accountId, body)
      set.status = 201
      return versioned(row, presentAnimal)
    }, {
      principal: true,
      body: AnimalCreate,
      response: { 201: Animal },
      detail: op({ operationId: 'createAnimal', summary: 'Create an animal', tags: ['Animals'], etag: true, scopes: ['animals:write'], errors: [422] }),
    })
    .get('/animals/:id', async ({ principal, params, set }) => {
      const row = await getAnimal(deps.database.db, principal.accountId, animalId(params.id))
      if (!row) throw new ApiError('not_found', 'No such animal.')
      return versioned(row, presentAnimal)
    }, {
      principal: true,
      params: IdParam,
      response: { 200: Animal },
      detail: op({ operationId: 'getAnimal', summary: 'Get an animal', tags: ['Animals'], etag: true, scopes: ['animals:read'], errors: [404] }),
    })
    .patch('/animals/:id', async ({ principal, params, body, headers, set }) => {
      const row = await updateAnimal(deps, principal.accountId, animalId(params.id), body, headers['if-match'] ?? null)
      return versioned(row, presentAnimal)
    }, {
      principal: true,
      params: IdParam,
      headers: Preconditions,
      body: AnimalPatch,
      response: { 200: Animal },
      detail: op({
        operationId: 'updateAnimal',
        summary: 'Update an animal (JSON merge patch)', tags: ['Animals'], etag: true, scopes: ['animals:write'], errors: [404, 412, 422],
        accepts: ['application/merge-patch+json', 'application/json'],
      }),
    })
    .delete('/animals/:id', async ({ principal, params, headers, set }) => {
      await deleteAnimal(deps, principal.accountId, animalId(params.id), headers['if-match'] ?? null)
      set.status = 204
    }, {
      principal: true,
      params: IdParam,
      headers: Preconditions,
      response: { 204: t.Void({ description: 'Deleted.' }) },
      detail: op({ operationId: 'deleteAnimal', summary: 'Delete an animal', description: 'A soft delete: the animal is gone from the API but kept in storage.', tags: ['Animals'], etag: true, scopes: ['animals:write'], errors: [404, 412] }),
    })
}
