// An account's records. Column names are the API's field names (snake_case), so presenting a row and importing
// one are the same generic conversion for every area (src/records/rows.ts) instead of a hand-written mapping each.
//
// Every table carries account_id, and every reference between records is a composite foreign key on
// (account_id, id): the database itself refuses a row that points at another account's record.
import { sql } from 'drizzle-orm'
import {
  check, date, doublePrecision, foreignKey, index, integer, jsonb, pgTable, primaryKey, text, unique,
  type AnyPgColumn,
} from 'drizzle-orm/pg-core'
import { accounts } from './foundation.ts'
import { instant } from './instant.ts'

const day = (name: string) => date(name, { mode: 'string' })
const owner = () => text('account_id').notNull().references(() => accounts.id, { onDelete: 'cascade' })
const times = () => ({ created_at: instant('created_at').notNull().default(sql`now()`), updated_at: instant('updated_at').notNull().default(sql`now()`) })
const textArray = (name: string) => text(name).array().notNull().default(sql`'{}'::text[]`)
const oneOf = (name: string, column: AnyPgColumn, values: readonly string[]) =>
  check(name, sql`${column} in (${sql.join(values.map((v) => sql.raw(`'${v}'`)), sql`, `)})`)
/** (account_id, column) → table(account_id, id): a reference that cannot cross accounts. */
const sameAccount = (name: string, accountId: AnyPgColumn, column: AnyPgColumn, target: { account_id: AnyPgColumn; id: AnyPgColumn }) =>
  foreignKey({ name, columns: [accountId, column], foreignColumns: [target.account_id, target.id] })

type OneOf<V extends readonly string[]> = V[number]

export const ENVIRONMENT_KINDS = ['enclosure', 'rack', 'tub', 'room', 'incubator', 'outdoor'] as const
export const ANIMAL_SEXES = ['male', 'female', 'unknown'] as const
export const ANIMAL_STATUSES = ['active', 'sold', 'deceased', 'on_loan'] as const
export const CLUTCH_STATUSES = ['incubating', 'hatched', 'failed'] as const
export const BREEDING_STATUSES = ['planned', 'paired', 'gravid', 'laid', 'unsuccessful'] as const
export const CONDITION_CATEGORIES = ['infection', 'parasite', 'injury', 'metabolic', 'respiratory', 'dermatological', 'reproductive', 'other'] as const
export const CONDITION_SEVERITIES = ['mild', 'moderate', 'severe'] as const
export const CONDITION_STATUSES = ['active', 'monitoring', 'resolved'] as const
export const DOCUMENT_KINDS = ['vet_report', 'permit', 'receipt', 'pedigree', 'photo', 'contract', 'other'] as const
export const CONTACT_KINDS = ['customer', 'supplier', 'veterinarian', 'breeder', 'other'] as const
export const INVOICE_STATUSES = ['draft', 'open', 'paid', 'void'] as const

export const environments = pgTable('environments', {
  id: text('id').primaryKey(),
  account_id: owner(),
  name: text('name').notNull(),
  kind: text('kind').$type<OneOf<typeof ENVIRONMENT_KINDS>>().notNull(),
  parent_id: text('parent_id'),
  location: text('location'),
  width_cm: doublePrecision('width_cm'),
  depth_cm: doublePrecision('depth_cm'),
  height_cm: doublePrecision('height_cm'),
  substrate: text('substrate'),
  notes: text('notes'),
  ...times(),
}, (t) => [
  unique('environments_account_id_key').on(t.account_id, t.id),
  sameAccount('environments_parent_fk', t.account_id, t.parent_id, t),
  oneOf('environments_kind_check', t.kind, ENVIRONMENT_KINDS),
  index('environments_account_updated_idx').on(t.account_id, t.updated_at),
])

export const animals = pgTable('animals', {
  id: text('id').primaryKey(),
  account_id: owner(),
  name: text('name').notNull(),
  reference_id: text('reference_id'),
  species_id: text('species_id').notNull(),
  sex: text('sex').$type<OneOf<typeof ANIMAL_SEXES>>().notNull().default('unknown'),
  status: text('status').$type<OneOf<typeof ANIMAL_STATUSES>>().notNull().default('active'),
  morph: text('morph'),
  traits: textArray('traits'),
  birth_date: day('birth_date'),
  acquired_date: day('acquired_date'),
  weight_grams: doublePrecision('weight_grams'),
  weighed_at: instant('weighed_at'),
  environment_id: text('environment_id'),
  dam_id: text('dam_id'),
  sire_id: text('sire_id'),
  tags: textArray('tags'),
  notes: text('notes'),
  metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
  /** Bumped on every write; the ETag. */
  version: integer('version').notNull().default(1),
  ...times(),
  deleted_at: instant('deleted_at'),
}, (t) => [
  unique('animals_account_id_key').on(t.account_id, t.id),
  sameAccount('animals_environment_fk', t.account_id, t.environment_id, environments),
  sameAccount('animals_dam_fk', t.account_id, t.dam_id, t),
  sameAccount('animals_sire_fk', t.account_id, t.sire_id, t),
  oneOf('animals_sex_check', t.sex, ANIMAL_SEXES),
  oneOf('animals_status_check', t.status, ANIMAL_STATUSES),
  index('animals_account_species_idx').on(t.account_id, t.species_id).where(sql`${t.deleted_at} is null`),
  index('animals_account_updated_idx').on(t.account_id, t.updated_at),
])

export const activities = pgTable('activities', {
  id: text('id').primaryKey(),
  account_id: owner(),
  animal_id: text('animal_id').notNull(),
  type: text('type').notNull(),
  occurred_at: instant('occurred_at').notNull(),
  details: jsonb('details').$type<Record<string, unknown>>().notNull().default({}),
  notes: text('notes'),
  ...times(),
}, (t) => [
  sameAccount('activities_animal_fk', t.account_id, t.animal_id, animals),
  index('activities_account_occurred_idx').on(t.account_id, t.occurred_at.desc(), t.id.desc()),
  index('activities_animal_occurred_idx').on(t.account_id, t.animal_id, t.occurred_at.desc(), t.id.desc()),
  index('activities_account_updated_idx').on(t.account_id, t.updated_at),
])

/**
 * The durable half of Idempotency-Key (CONTRACT §5): written in the same transaction as the activity, so the
 * primary key refuses a second write for the same key even when Redis has lost the lock and the cached response.
 */
export const idempotencyKeys = pgTable('idempotency_keys', {
  account_id: owner(),
  key: text('key').notNull(),
  /** SHA-256 of the canonical request (method, path, body): the same key with another request is refused. */
  fingerprint: text('fingerprint').notNull(),
  status: integer('status').notNull(),
  body: text('body').notNull(),
  created_at: instant('created_at').notNull().default(sql`now()`),
}, (t) => [primaryKey({ columns: [t.account_id, t.key] }), index('idempotency_keys_created_idx').on(t.created_at)])

/** Webhook events written in the same transaction as the change they report (CONTRACT §8); delivered later. */
export const outboxEvents = pgTable('outbox_events', {
  id: text('id').primaryKey(),
  account_id: owner(),
  type: text('type').notNull(),
  /** The minified envelope exactly as it will be signed and sent. */
  payload: text('payload').notNull(),
  created_at: instant('created_at').notNull().default(sql`now()`),
}, (t) => [index('outbox_events_account_idx').on(t.account_id, t.id)])

export const breedingRecords = pgTable('breeding_records', {
  id: text('id').primaryKey(),
  account_id: owner(),
  species_id: text('species_id').notNull(),
  dam_id: text('dam_id'),
  sire_id: text('sire_id'),
  season: integer('season').notNull(),
  status: text('status').$type<OneOf<typeof BREEDING_STATUSES>>().notNull(),
  paired_on: day('paired_on'),
  separated_on: day('separated_on'),
  locks_observed: integer('locks_observed').notNull().default(0),
  ovulation_on: day('ovulation_on'),
  pre_lay_shed_on: day('pre_lay_shed_on'),
  notes: text('notes'),
  ...times(),
}, (t) => [
  unique('breeding_records_account_id_key').on(t.account_id, t.id),
  sameAccount('breeding_records_dam_fk', t.account_id, t.dam_id, animals),
  sameAccount('breeding_records_sire_fk', t.account_id, t.sire_id, animals),
  oneOf('breeding_records_status_check', t.status, BREEDING_STATUSES),
  index('breeding_records_account_updated_idx').on(t.account_id, t.updated_at),
])

export const clutches = pgTable('clutches', {
  id: text('id').primaryKey(),
  account_id: owner(),
  breeding_record_id: text('breeding_record_id'),
  species_id: text('species_id').notNull(),
  dam_id: text('dam_id'),
  sire_id: text('sire_id'),
  status: text('status').$type<OneOf<typeof CLUTCH_STATUSES>>().notNull(),
  laid_on: day('laid_on').notNull(),
  egg_count: integer('egg_count').notNull(),
  fertile_count: integer('fertile_count'),
  slug_count: integer('slug_count'),
  hatched_count: integer('hatched_count'),
  incubator_id: text('incubator_id'),
  incubation_temperature_c: doublePrecision('incubation_temperature_c'),
  expected_hatch_on: day('expected_hatch_on'),
  hatched_on: day('hatched_on'),
  notes: text('notes'),
  ...times(),
}, (t) => [
  sameAccount('clutches_breeding_record_fk', t.account_id, t.breeding_record_id, breedingRecords),
  sameAccount('clutches_dam_fk', t.account_id, t.dam_id, animals),
  sameAccount('clutches_sire_fk', t.account_id, t.sire_id, animals),
  sameAccount('clutches_incubator_fk', t.account_id, t.incubator_id, environments),
  oneOf('clutches_status_check', t.status, CLUTCH_STATUSES),
  index('clutches_account_list_idx').on(t.account_id, t.id),
  index('clutches_account_updated_idx').on(t.account_id, t.updated_at),
])

export const medicalConditions = pgTable('medical_conditions', {
  id: text('id').primaryKey(),
  account_id: owner(),
  animal_id: text('animal_id').notNull(),
  name: text('name').notNull(),
  category: text('category').$type<OneOf<typeof CONDITION_CATEGORIES>>().notNull(),
  severity: text('severity').$type<OneOf<typeof CONDITION_SEVERITIES>>().notNull(),
  status: text('status').$type<OneOf<typeof CONDITION_STATUSES>>().notNull(),
  diagnosed_on: day('diagnosed_on').notNull(),
  resolved_on: day('resolved_on'),
  veterinarian: text('veterinarian'),
  treatment: text('treatment'),
  notes: text('notes'),
  ...times(),
}, (t) => [
  sameAccount('medical_conditions_animal_fk', t.account_id, t.animal_id, animals),
  oneOf('medical_conditions_category_check', t.category, CONDITION_CATEGORIES),
  oneOf('medical_conditions_severity_check', t.severity, CONDITION_SEVERITIES),
  oneOf('medical_conditions_status_check', t.status, CONDITION_STATUSES),
  index('medical_conditions_account_list_idx').on(t.account_id, t.id),
  index('medical_conditions_account_updated_idx').on(t.account_id, t.updated_at),
])

export const contacts = pgTable('contacts', {
  id: text('id').primaryKey(),
  account_id: owner(),
  name: text('name').notNull(),
  company: text('company'),
  kind: text('kind').$type<OneOf<typeof CONTACT_KINDS>>().notNull(),
  email: text('email'),
  phone: text('phone'),
  address_line1: text('address_line1'),
  city: text('city'),
  region: text('region'),
  postal_code: text('postal_code'),
  country: text('country'),
  tags: textArray('tags'),
  notes: text('notes'),
  ...times(),
}, (t) => [
  unique('contacts_account_id_key').on(t.account_id, t.id),
  oneOf('contacts_kind_check', t.kind, CONTACT_KINDS),
  index('contacts_account_updated_idx').on(t.account_id, t.updated_at),
])

export interface InvoiceLine { description: string; quantity: number; unit_amount: number; amount: number; animal_id: string | null }

export const invoices = pgTable('invoices', {
  id: text('id').primaryKey(),
  account_id: owner(),
  number: text('number').notNull(),
  contact_id: text('contact_id'),
  status: text('status').$type<OneOf<typeof INVOICE_STATUSES>>().notNull(),
  currency: text('currency').notNull(),
  issued_on: day('issued_on').notNull(),
  due_on: day('due_on'),
  paid_at: instant('paid_at'),
  line_items: jsonb('line_items').$type<InvoiceLine[]>().notNull().default([]),
  subtotal: integer('subtotal').notNull(),
  tax: integer('tax').notNull().default(0),
  total: integer('total').notNull(),
  notes: text('notes'),
  ...times(),
}, (t) => [
  unique('invoices_account_number_key').on(t.account_id, t.number),
  sameAccount('invoices_contact_fk', t.account_id, t.contact_id, contacts),
  oneOf('invoices_status_check', t.status, INVOICE_STATUSES),
  check('invoices_total_check', sql`${t.total} = ${t.subtotal} + ${t.tax}`),
  index('invoices_account_list_idx').on(t.account_id, t.id),
  index('invoices_account_updated_idx').on(t.account_id, t.updated_at),
])

export const documents = pgTable('documents', {
  id: text('id').primaryKey(),
  account_id: owner(),
  title: text('title').notNull(),
  kind: text('kind').$type<OneOf<typeof DOCUMENT_KINDS>>().notNull(),
  animal_id: text('animal_id'),
  contact_id: text('contact_id'),
  file_name: text('file_name').notNull(),
  content_type: text('content_type').notNull(),
  size_bytes: integer('size_bytes').notNull(),
  sha256: text('sha256'),
  url: text('url'),
  issued_on: day('issued_on'),
  notes: text('notes'),
  ...times(),
}, (t) => [
  sameAccount('documents_animal_fk', t.account_id, t.animal_id, animals),
  sameAccount('documents_contact_fk', t.account_id, t.contact_id, contacts),
  oneOf('documents_kind_check', t.kind, DOCUMENT_KINDS),
  index('documents_account_list_idx').on(t.account_id, t.id),
  index('documents_account_updated_idx').on(t.account_id, t.updated_at),
])
