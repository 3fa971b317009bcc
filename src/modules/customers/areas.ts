import { t } from 'elysia'
import { JsonInteger } from '../../http/schemas.ts'
import { CONTACT_KINDS, INVOICE_STATUSES, contacts, invoices } from '../../../db/schema/index.ts'
import { defineArea } from '../../records/areas.ts'
import { DateOnly, IdOf, Instant, Notes, Tags, UpdatedSince, nullable, oneOf } from '../../records/fields.ts'
import { atOrAfter, dateFrom, dateTo, equals, hasTag, search } from '../../records/filters.ts'

const ContactKind = oneOf(CONTACT_KINDS)
const InvoiceStatus = oneOf(INVOICE_STATUSES)
const Amount = JsonInteger({ description: 'In the currency’s minor unit (cents).' })

export const Contact = t.Object({
  id: IdOf('contact'),
  name: t.String({ minLength: 1, maxLength: 200 }),
  company: nullable(t.String({ maxLength: 200 })),
  kind: ContactKind,
  email: nullable(t.String({ format: 'email', maxLength: 254 })),
  phone: nullable(t.String({ maxLength: 50 })),
  address_line1: nullable(t.String({ maxLength: 200 })),
  city: nullable(t.String({ maxLength: 100 })),
  region: nullable(t.String({ maxLength: 100 })),
  postal_code: nullable(t.String({ maxLength: 20 })),
  country: nullable(t.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2.', examples: ['DE'] })),
  tags: Tags,
  notes: nullable(Notes),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/Contact' })

export const InvoiceLine = t.Object({
  description: t.String({ minLength: 1, maxLength: 500 }),
  quantity: JsonInteger({ minimum: 1 }),
  unit_amount: Amount,
  amount: Amount,
  animal_id: nullable(IdOf('animal', 'The animal sold on this line, if any.')),
}, { additionalProperties: false })

export const Invoice = t.Object({
  id: IdOf('invoice'),
  number: t.String({ minLength: 1, maxLength: 50, description: 'Unique within the account.' }),
  contact_id: nullable(IdOf('contact', 'The customer.')),
  status: InvoiceStatus,
  currency: t.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217.', examples: ['EUR'] }),
  issued_on: DateOnly,
  due_on: nullable(DateOnly),
  paid_at: nullable(Instant),
  line_items: t.Array(InvoiceLine, { maxItems: 500 }),
  subtotal: Amount,
  tax: Amount,
  total: JsonInteger({ description: 'subtotal + tax, in the minor unit.' }),
  notes: nullable(Notes),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/Invoice' })

export const contactsArea = defineArea({
  name: 'contacts', path: '/contacts', tag: 'Customers', scope: 'contacts:read', idKind: 'contact',
  summary: 'List contacts', description: 'Customers, suppliers, vets and fellow breeders.',
  table: contacts, item: Contact,
  filters: {
    kind: t.Optional(ContactKind),
    tag: t.Optional(t.String({ maxLength: 50 })),
    q: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'Case-insensitive search in name, company and email.' })),
    updated_since: UpdatedSince,
  },
  conditions: (f) => [equals(contacts.kind, f.kind), hasTag(contacts.tags, f.tag), search(f.q, contacts.name, contacts.company, contacts.email), atOrAfter(contacts.updated_at, f.updated_since)],
})

export const invoicesArea = defineArea({
  name: 'invoices', path: '/sales/invoices', tag: 'Customers', scope: 'sales:read', idKind: 'invoice',
  summary: 'List invoices', description: 'Sales invoices with their lines; amounts in minor units.',
  table: invoices, item: Invoice,
  filters: {
    status: t.Optional(InvoiceStatus),
    contact_id: t.Optional(t.String({ maxLength: 40 })),
    issued_from: t.Optional(t.String({ format: 'date', description: 'Issued on or after this date.' })),
    issued_to: t.Optional(t.String({ format: 'date', description: 'Issued on or before this date.' })),
    updated_since: UpdatedSince,
  },
  conditions: (f) => [
    equals(invoices.status, f.status), equals(invoices.contact_id, f.contact_id), dateFrom(invoices.issued_on, f.issued_from),
    dateTo(invoices.issued_on, f.issued_to), atOrAfter(invoices.updated_at, f.updated_since),
  ],
})
