import { t } from 'elysia'
import { CONDITION_CATEGORIES, CONDITION_SEVERITIES, CONDITION_STATUSES, medicalConditions } from '../../../db/schema/index.ts'
import { defineArea } from '../../records/areas.ts'
import { DateOnly, IdOf, Instant, Notes, UpdatedSince, nullable, oneOf } from '../../records/fields.ts'
import { atOrAfter, equals } from '../../records/filters.ts'

const Category = oneOf(CONDITION_CATEGORIES)
const Severity = oneOf(CONDITION_SEVERITIES)
const Status = oneOf(CONDITION_STATUSES, 'active, monitoring (treated, under watch) or resolved.')

export const MedicalCondition = t.Object({
  id: IdOf('condition'),
  animal_id: IdOf('animal'),
  name: t.String({ minLength: 1, maxLength: 200, description: 'e.g. "Respiratory infection", "Mites".' }),
  category: Category,
  severity: Severity,
  status: Status,
  diagnosed_on: DateOnly,
  resolved_on: nullable(DateOnly),
  veterinarian: nullable(t.String({ maxLength: 200 })),
  treatment: nullable(t.String({ maxLength: 2000 })),
  notes: nullable(Notes),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/MedicalCondition' })

export const conditionsArea = defineArea({
  name: 'conditions', path: '/medical/conditions', tag: 'Medical', scope: 'medical:read', idKind: 'condition',
  summary: 'List diagnosed conditions', description: 'Diagnoses per animal, with severity, treatment and outcome.',
  table: medicalConditions, item: MedicalCondition,
  filters: {
    animal_id: t.Optional(t.String({ maxLength: 40 })),
    status: t.Optional(Status),
    severity: t.Optional(Severity),
    category: t.Optional(Category),
    updated_since: UpdatedSince,
  },
  conditions: (f) => [
    equals(medicalConditions.animal_id, f.animal_id), equals(medicalConditions.status, f.status), equals(medicalConditions.severity, f.severity),
    equals(medicalConditions.category, f.category), atOrAfter(medicalConditions.updated_at, f.updated_since),
  ],
})
