// Operator bulk load: rows shaped like the API's items (so a list page's `data` can be imported again) go into one
// account's records, validated first, all in one transaction.
//
// Imports do NOT write webhook events: they are an operator's bulk load (a migration or a restore), not changes an
// integrator made through the API, and thousands of `animal.created` deliveries would flood every endpoint.
import { t } from 'elysia'
import type { TObject, TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { ValueError } from '@sinclair/typebox/errors'
import { eq, getTableColumns, sql } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import { activities, animals } from '../../db/schema/index.ts'
import type { Deps } from '../deps.ts'
import { idAt, newId, type IdKind } from '../ids.ts'
import { Activity } from '../modules/activities/index.ts'
import { Animal } from '../modules/animals/index.ts'
import type { Executor } from '../webhooks/outbox.ts'
import { READ_ONLY_AREAS } from '../records/all-areas.ts'
import { activityDetailsErrors, futureError, speciesError } from '../records/rules.ts'
import { recordWeights } from '../modules/animals/service.ts'
import type { FieldError } from '../http/errors.ts'
import type { KeysetTable } from '../records/list.ts'

/** Rows per INSERT statement: large enough that thousands of rows take a handful of round trips, small enough to
 *  stay far below Postgres's 65 535 bind parameters (animals have 21 columns: 500 rows ≈ 10 500 parameters). */
const CHUNK = 500

export interface ImportArea {
  name: string
  idKind: IdKind
  table: KeysetTable
  /** The API item schema; the import schema is derived from it. */
  item: TObject
}

/** Every area the importer knows: the two writable ones plus each read-only area, under their list names. */
const IMPORT_AREAS: readonly ImportArea[] = [
  { name: 'animals', idKind: 'animal', table: animals as unknown as KeysetTable, item: Animal },
  { name: 'activities', idKind: 'activity', table: activities as unknown as KeysetTable, item: Activity },
  ...READ_ONLY_AREAS.map(({ name, idKind, table, item }) => ({ name, idKind, table, item })),
]
export const IMPORT_AREA_NAMES = IMPORT_AREAS.map((a) => a.name)

export function importArea(name: string): ImportArea | undefined {
  return IMPORT_AREAS.find((a) => a.name === name)
}

/** A refused import: `errors` holds one line per problem, `row N: /field message`; nothing was written. */
export class ImportError extends Error {
  constructor(message: string, readonly errors: string[] = []) { super(message) }
}

// ---------------------------------------------------------------------------------------------------------------
// The import schema

const isNull = (s: TSchema) => s.type === 'null'
/** The schema without its `| null` (nullable fields are `Union([X, Null])`). */
function baseOf(schema: TSchema): TSchema {
  if (Array.isArray(schema.anyOf)) {
    const rest = (schema.anyOf as TSchema[]).filter((s) => !isNull(s))
    if (rest.length === 1) return rest[0]!
  }
  return schema
}
const isNullable = (schema: TSchema) => Array.isArray(schema.anyOf) && (schema.anyOf as TSchema[]).some(isNull)

/**
 * The API's `date` format also accepts other spellings (`2025/03/01`, full date-times) that Postgres would read
 * differently; an import takes exactly what the API answers with, `YYYY-MM-DD`. Returns a copy (symbols kept).
 */
function strictDates(schema: TSchema): TSchema {
  const out: TSchema = { ...schema }
  if (schema.type === 'string' && schema.format === 'date') out.pattern = '^\\d{4}-\\d{2}-\\d{2}$'
  if (Array.isArray(schema.anyOf)) out.anyOf = schema.anyOf.map(strictDates)
  if (schema.items) out.items = strictDates(schema.items)
  if (schema.properties) out.properties = Object.fromEntries(Object.entries(schema.properties as Record<string, TSchema>).map(([k, v]) => [k, strictDates(v)]))
  return out
}

interface Compiled {
  area: ImportArea
  schema: TObject
  check: TypeCheck<TObject>
  /** Nullable fields: absent means null. */
  nullable: string[]
  /** Fields that hold an id of this same area (parent_id, dam_id…): their targets must be inserted first. */
  selfRefs: string[]
}

const compiled = new Map<string, Compiled>()

/**
 * Derived from the item schema: `id`, timestamps, nullable fields and fields with a database default are optional;
 * the rest (the non-nullable fields without a default) are required. Unknown fields are refused, as in the API.
 */
function compile(area: ImportArea): Compiled {
  let c = compiled.get(area.name)
  if (c) return c
  const columns = getTableColumns(area.table as PgTable)
  const properties: Record<string, TSchema> = {}
  const nullable: string[] = []
  const selfRefs: string[] = []
  const idPattern = (area.item.properties.id as TSchema).pattern
  for (const [name, field] of Object.entries(area.item.properties as Record<string, TSchema>)) {
    const schema = strictDates(field)
    if (isNullable(field)) nullable.push(name)
    if (name !== 'id' && baseOf(field).pattern === idPattern) selfRefs.push(name)
    const optional = name === 'id' || isNullable(field) || columns[name]?.hasDefault === true
    properties[name] = optional ? t.Optional(schema) : schema
  }
  const schema = t.Object(properties, { additionalProperties: false })
  c = { area, schema, check: TypeCompiler.Compile(schema), nullable, selfRefs }
  compiled.set(area.name, c)
  return c
}


/** What a string field must look like, in words, where TypeBox would quote a regular expression. */
function shapeOf(schema: TSchema): string | undefined {
  if (schema.type !== 'string') return undefined
  if (schema.format === 'date') return 'a date, YYYY-MM-DD'
  if (schema.format === 'date-time') return 'an RFC 3339 date-time'
  const id = /^\^([a-z]+)_\[/.exec(schema.pattern ?? '')
  return id ? `an id of the form ${id[1]}_…` : undefined
}

const innerCheckers = new WeakMap<TSchema, TypeCheck<TSchema>>()
/** TypeBox's messages, made readable where they are not ("Expected kind 'UnionEnum'", "Expected union value"). */
function messageOf(error: ValueError): string {
  const schema = error.schema as TSchema
  const base = baseOf(schema)
  const orNull = base === schema ? '' : ', or null'
  if (Array.isArray(base.enum)) return `must be one of ${base.enum.join(', ')}${orNull}`
  const shape = shapeOf(base)
  if (shape) return `must be ${shape}${orNull}`
  if (base !== schema) {
    // A nullable field with a wrong value: say what the non-null member wanted.
    let checker = innerCheckers.get(base)
    if (!checker) innerCheckers.set(base, checker = TypeCompiler.Compile(base))
    const inner = checker.Errors(error.value).First()
    return inner ? `${inner.message} (or null)` : error.message
  }
  return error.message
}

function schemaErrors(check: TypeCheck<TSchema>, value: unknown, prefix = ''): { path: string; message: string }[] {
  const seen = new Set<string>()
  const out: { path: string; message: string }[] = []
  for (const error of check.Errors(value)) {
    const path = prefix + (error.path || '/')
    if (seen.has(path)) continue // the first complaint per field is the useful one
    seen.add(path)
    out.push({ path, message: messageOf(error) })
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------
// Rules beyond the schema

/** What the API checks on writes but a schema cannot say: the API's own rules (records/rules.ts), at row paths.
 *  References to other records are left to the foreign keys, which also catch another account's record. */
function ruleErrors(area: string, row: Record<string, any>): { path: string; message: string }[] {
  const errors: { path: string; message: string }[] = []
  const found = (error: FieldError | undefined) => { if (error) errors.push(error) }
  if (typeof row.species_id === 'string') found(speciesError(row.species_id, '/species_id'))
  if (area === 'activities') {
    // A type that is not a string is the schema's to report.
    if (typeof row.type === 'string') errors.push(...activityDetailsErrors(row.type, row.details ?? {}, { type: '/type', details: '/details' }))
    if (typeof row.occurred_at === 'string') found(futureError(Date.parse(row.occurred_at), Date.now(), '/occurred_at'))
  }
  for (const field of ['dam_id', 'sire_id', 'parent_id']) {
    if (row[field] && row.id && row[field] === row.id) errors.push({ path: `/${field}`, message: 'cannot be the record itself' })
  }
  if (row.dam_id && row.dam_id === row.sire_id) errors.push({ path: '/sire_id', message: 'cannot be the same animal as dam_id' })
  if (area === 'invoices' && [row.total, row.subtotal, row.tax ?? 0].every(Number.isInteger) && row.total !== row.subtotal + (row.tax ?? 0)) errors.push({ path: '/total', message: 'must equal subtotal + tax' })
  return errors
}

// ---------------------------------------------------------------------------------------------------------------
// Importing

interface Prepared { rowNo: number; values: Record<string, unknown> }

/** Validates every row (all errors, not the first) and turns them into column values ready to insert. */
function prepare(c: Compiled, accountId: string, rows: unknown[]): Prepared[] {
  const errors: string[] = []
  const prepared: Prepared[] = []
  const firstRowOfId = new Map<string, number>()
  rows.forEach((row, index) => {
    const rowNo = index + 1
    const fail = (path: string, message: string) => errors.push(`row ${rowNo}: ${path} ${message}`)
    if (typeof row !== 'object' || row === null || Array.isArray(row)) return fail('/', 'must be an object')
    // Schema errors first, then the rules' findings on fields the schema did not already fault.
    const found = c.check.Check(row) ? [] : schemaErrors(c.check, row)
    const faulted = new Set(found.map((e) => e.path.split('/')[1]))
    found.push(...ruleErrors(c.area.name, row as Record<string, any>).filter((e) => !faulted.has(e.path.split('/')[1])))
    for (const e of found) fail(e.path, e.message)
    const id = (row as Record<string, unknown>).id
    if (typeof id === 'string') {
      const first = firstRowOfId.get(id)
      if (first !== undefined) fail('/id', `repeats the id of row ${first}`)
      else firstRowOfId.set(id, rowNo)
    }
    if (found.length) return
    const values: Record<string, unknown> = { account_id: accountId }
    for (const field of c.nullable) values[field] = null
    // Instants go as the RFC 3339 text the schema checked: Postgres reads it (offsets included).
    Object.assign(values, row)
    // Lists page newest first by id: a backdated row (created_at given) gets an id of its own time, as demo data does.
    values.id ??= typeof values.created_at === 'string' ? idAt(c.area.idKind, Date.parse(values.created_at)) : newId(c.area.idKind)
    prepared.push({ rowNo, values })
  })
  if (errors.length) throw new ImportError(`${errors.length} error${errors.length === 1 ? '' : 's'} in the ${c.area.name} rows; nothing was written`, errors)
  return c.selfRefs.length ? parentsFirst(c, prepared) : prepared
}

/**
 * Foreign keys are checked per statement, so a row referring to another row of the same file (a tub's rack, an
 * animal's dam) must not land in a later chunk than its target. An API list is newest first, so parents usually
 * come after their children there: order rows so every in-file target comes first.
 */
function parentsFirst(c: Compiled, rows: Prepared[]): Prepared[] {
  const byId = new Map(rows.map((r) => [r.values.id as string, r]))
  const state = new Map<Prepared, 'visiting' | 'done'>()
  const out: Prepared[] = []
  const errors: string[] = []
  const visit = (row: Prepared) => {
    state.set(row, 'visiting')
    for (const field of c.selfRefs) {
      const target = byId.get(row.values[field] as string)
      if (!target || state.get(target) === 'done') continue
      if (state.get(target) === 'visiting') errors.push(`row ${row.rowNo}: /${field} closes a cycle of references (through row ${target.rowNo})`)
      else visit(target)
    }
    state.set(row, 'done')
    out.push(row)
  }
  for (const row of rows) if (!state.has(row)) visit(row)
  if (errors.length) throw new ImportError(`${errors.length} error${errors.length === 1 ? '' : 's'} in the ${c.area.name} rows; nothing was written`, errors)
  return out
}

/** Turns a constraint violation into `row N: /field …` where the error's detail names the key. */
function describeDbError(error: unknown, chunk: Prepared[]): string {
  const cause = ((error as { cause?: unknown })?.cause ?? error) as Record<string, any>
  const constraint: string | undefined = cause?.constraint ?? cause?.constraint_name
  const detail: string = cause?.detail ?? ''
  const code: string | undefined = cause?.code
  const span = chunk.length === 1 ? `row ${chunk[0]!.rowNo}` : `rows ${Math.min(...chunk.map((r) => r.rowNo))}–${Math.max(...chunk.map((r) => r.rowNo))}`
  const key = /Key \((.+)\)=\((.*)\) (is not present in table "([^"]+)"|already exists)/.exec(detail)
  if (key && constraint) {
    const columns = key[1]!.split(', ')
    const keyValues = key[2]!.split(', ')
    const field = columns.filter((col) => col !== 'account_id').at(-1) ?? columns.at(-1)!
    const value = keyValues[columns.indexOf(field)]
    const matches = columns.length === keyValues.length
      ? chunk.filter((r) => columns.every((col, i) => String(r.values[col]) === keyValues[i]))
      : []
    const where = matches.length === 1 ? `row ${matches[0]!.rowNo}` : span
    return key[3] === 'already exists'
      ? `${where}: /${field} ${value} already exists (constraint ${constraint})`
      : `${where}: /${field} ${value} does not exist in this account's ${key[4]} (constraint ${constraint})`
  }
  if (code === '23514' && constraint) return `${span}: violates check constraint ${constraint}`
  const message = cause?.message ?? String(error)
  return `${span}: ${message}${constraint ? ` (constraint ${constraint})` : ''}`
}

/**
 * Validates and writes `rows` into `area` inside `tx` (the caller's transaction). Throws ImportError listing every
 * invalid row before anything is written, or naming the constraint (and row) a database check refused.
 */
export async function importRecordsIn(tx: Executor, accountId: string, areaName: string, rows: unknown[]): Promise<{ imported: number }> {
  const area = importArea(areaName)
  if (!area) throw new ImportError(`unknown area ${areaName} (one of: ${IMPORT_AREA_NAMES.join(', ')})`)
  const c = compile(area)
  const prepared = prepare(c, accountId, rows)
  for (let i = 0; i < prepared.length; i += CHUNK) {
    const chunk = prepared.slice(i, i + CHUNK)
    try {
      await tx.insert(area.table as PgTable).values(chunk.map((r) => r.values) as any)
    } catch (error) {
      throw new ImportError(`the database refused the ${area.name} rows; nothing was written`, [describeDbError(error, chunk)])
    }
  }
  // As POST /activities does for one weighing: the newest becomes the animal's latest weight.
  if (area.name === 'activities') {
    await recordWeights(tx, accountId, prepared.filter(({ values }) => values.type === 'weight').map(({ values }) => ({
      // The row's RFC 3339 text may carry any offset: compare instants, not text.
      animalId: values.animal_id as string, grams: (values.details as { grams: number }).grams, at: Date.parse(values.occurred_at as string),
    })))
  }
  return { imported: prepared.length }
}

/** Imports `rows` into one account's `area` in one transaction: all of them, or (on any error) none. */
export async function importRecords(deps: Pick<Deps, 'database'>, accountId: string, area: string, rows: unknown[]): Promise<{ imported: number }> {
  return deps.database.db.transaction((tx) => importRecordsIn(tx, accountId, area, rows))
}

/** Whether the account already holds animals (deleted ones included). */
export async function accountHasAnimals(db: Executor, accountId: string): Promise<boolean> {
  const [row] = await db.select({ id: animals.id }).from(animals).where(eq(animals.account_id, accountId)).limit(1)
  return Boolean(row)
}

// ---------------------------------------------------------------------------------------------------------------
// Files

export type ImportFormat = 'json' | 'csv'

export function formatOf(fileName: string): ImportFormat | undefined {
  const lower = fileName.toLowerCase()
  return lower.endsWith('.json') ? 'json' : lower.endsWith('.csv') ? 'csv' : undefined
}

/**
 * A file's rows. JSON: an array of items, or a list page `{ data: [...] }`. CSV: a header row of field names, then
 * one row per record (RFC 4180 quoting); an empty cell is an absent field; cells are converted by the area's schema:
 * numbers and booleans parsed, list fields split on `|`, object fields (metadata, details, line_items) read as JSON.
 * Row numbers in errors count data rows from 1 (for CSV the header is not a row).
 */
export function parseImportFile(text: string, format: ImportFormat, areaName: string): Record<string, unknown>[] {
  const area = importArea(areaName)
  if (!area) throw new ImportError(`unknown area ${areaName} (one of: ${IMPORT_AREA_NAMES.join(', ')})`)
  if (format === 'json') {
    let parsed: unknown
    try { parsed = JSON.parse(text) } catch (e) { throw new ImportError(`the file is not valid JSON: ${(e as Error).message}`) }
    const rows = Array.isArray(parsed) ? parsed : (parsed as { data?: unknown })?.data
    if (!Array.isArray(rows)) throw new ImportError('a JSON import file holds an array of records, or an object with a "data" array')
    return rows
  }
  return csvRows(text, compile(area).schema)
}

/** RFC 4180 records: fields separated by commas, optionally quoted with `"` (a doubled `""` is a quote inside). */
export function parseCsv(text: string): string[][] {
  const records: string[][] = []
  let record: string[] = []
  let field = ''
  let quoted = false
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0 // a byte-order mark is not part of the first field name
  const endRecord = () => { record.push(field); records.push(record); record = []; field = '' }
  for (; i < text.length; i++) {
    const ch = text[i]!
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') { field += '"'; i++ } else quoted = false
      } else field += ch
    } else if (ch === '"' && field === '') quoted = true
    else if (ch === ',') { record.push(field); field = '' }
    else if (ch === '\n') endRecord()
    else if (ch === '\r') { if (text[i + 1] !== '\n') endRecord() }
    else field += ch
  }
  if (quoted) throw new ImportError('the CSV file ends inside a quoted field')
  if (field !== '' || record.length) endRecord()
  // Blank lines (often a trailing one) are not records.
  return records.filter((r) => !(r.length === 1 && r[0] === ''))
}

function csvRows(text: string, schema: TObject): Record<string, unknown>[] {
  const [header, ...records] = parseCsv(text)
  if (!header) return []
  const errors: string[] = []
  const rows = records.map((cells, index) => {
    const rowNo = index + 1
    if (cells.length !== header.length) errors.push(`row ${rowNo}: / has ${cells.length} cells; the header has ${header.length}`)
    const row: Record<string, unknown> = {}
    header.forEach((name, i) => {
      const cell = cells[i]
      if (cell === undefined || cell === '') return // empty cell: the field is absent
      const field = schema.properties[name] as TSchema | undefined
      try {
        row[name] = field ? cellValue(cell, baseOf(field)) : cell // unknown columns are reported by validation
      } catch {
        errors.push(`row ${rowNo}: /${name} is not valid JSON`)
      }
    })
    return row
  })
  if (errors.length) throw new ImportError(`${errors.length} error${errors.length === 1 ? '' : 's'} in the CSV file; nothing was written`, errors)
  return rows
}

/** One CSV cell as the schema's type; a cell that does not convert stays a string, so validation names the field. */
function cellValue(cell: string, schema: TSchema): unknown {
  switch (schema.type) {
    case 'integer':
    case 'number': {
      const n = Number(cell.trim())
      return cell.trim() !== '' && Number.isFinite(n) ? n : cell
    }
    case 'boolean': {
      const lower = cell.trim().toLowerCase()
      return lower === 'true' ? true : lower === 'false' ? false : cell
    }
    case 'object':
      return JSON.parse(cell)
    case 'array': {
      const items = baseOf(schema.items as TSchema)
      if (items.type === 'object' || items.type === 'array') return JSON.parse(cell)
      return cell.split('|').map((part) => cellValue(part, items))
    }
    default:
      return cell
  }
}
