import { t } from 'elysia'
import { JsonInteger } from '../../http/schemas.ts'
import { DOCUMENT_KINDS, documents } from '../../../db/schema/index.ts'
import { defineArea } from '../../records/areas.ts'
import { DateOnly, IdOf, Instant, Notes, UpdatedSince, nullable, oneOf } from '../../records/fields.ts'
import { atOrAfter, equals } from '../../records/filters.ts'

const Kind = oneOf(DOCUMENT_KINDS)

export const Document = t.Object({
  id: IdOf('document'),
  title: t.String({ minLength: 1, maxLength: 200 }),
  kind: Kind,
  animal_id: nullable(IdOf('animal', 'The animal it concerns, if any.')),
  contact_id: nullable(IdOf('contact', 'The contact it concerns (vet, buyer, seller), if any.')),
  file_name: t.String({ minLength: 1, maxLength: 255 }),
  content_type: t.String({ minLength: 1, maxLength: 100, examples: ['application/pdf'] }),
  size_bytes: JsonInteger({ minimum: 0 }),
  sha256: nullable(t.String({ pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the file, to verify a download.', examples: ['9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'] })),
  url: nullable(t.String({ format: 'uri', maxLength: 2000, description: 'Where the file can be downloaded.' })),
  issued_on: nullable(DateOnly),
  notes: nullable(Notes),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/Document' })

export const documentsArea = defineArea({
  name: 'documents', path: '/documents', tag: 'Documents', scope: 'documents:read', idKind: 'document',
  summary: 'List documents', description: 'Vet reports, permits, receipts, pedigrees and other files kept with the records (upload is not part of v1).',
  table: documents, item: Document,
  filters: {
    kind: t.Optional(Kind),
    animal_id: t.Optional(t.String({ maxLength: 40 })),
    contact_id: t.Optional(t.String({ maxLength: 40 })),
    updated_since: UpdatedSince,
  },
  conditions: (f) => [equals(documents.kind, f.kind), equals(documents.animal_id, f.animal_id), equals(documents.contact_id, f.contact_id), atOrAfter(documents.updated_at, f.updated_since)],
})
