import { t } from 'elysia'
import { ENVIRONMENT_KINDS, environments } from '../../../db/schema/index.ts'
import { defineArea } from '../../records/areas.ts'
import { IdOf, Instant, Notes, UpdatedSince, nullable, oneOf } from '../../records/fields.ts'
import { atOrAfter, equals, search } from '../../records/filters.ts'

const Kind = oneOf(ENVIRONMENT_KINDS, 'What the place is: an enclosure, a rack (holding tubs), a tub, a room, an incubator, or outdoors.')

export const Environment = t.Object({
  id: IdOf('environment'),
  name: t.String({ minLength: 1, maxLength: 100 }),
  kind: Kind,
  parent_id: nullable(IdOf('environment', 'The environment this one sits in (a tub in a rack, an enclosure in a room).')),
  location: nullable(t.String({ maxLength: 200 })),
  width_cm: nullable(t.Number({ exclusiveMinimum: 0 })),
  depth_cm: nullable(t.Number({ exclusiveMinimum: 0 })),
  height_cm: nullable(t.Number({ exclusiveMinimum: 0 })),
  substrate: nullable(t.String({ maxLength: 100 })),
  notes: nullable(Notes),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/Environment' })

export const environmentsArea = defineArea({
  name: 'environments', path: '/environment/environments', tag: 'Environment', scope: 'environment:read', idKind: 'environment',
  summary: 'List environments', description: 'Enclosures, racks, rooms and incubators where animals live; sensor channels map onto them.',
  table: environments, item: Environment,
  filters: {
    kind: t.Optional(Kind),
    parent_id: t.Optional(t.String({ maxLength: 40 })),
    q: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'Case-insensitive search in name and location.' })),
    updated_since: UpdatedSince,
  },
  conditions: (f) => [equals(environments.kind, f.kind), equals(environments.parent_id, f.parent_id), search(f.q, environments.name, environments.location), atOrAfter(environments.updated_at, f.updated_since)],
})
