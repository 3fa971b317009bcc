// The records baseline: what a skilled engineer would write by hand for the two hottest records operations, on
// Elysia and postgres.js with no drizzle and no request pipeline, against the same database our server uses
// (DATABASE_URL; PORT). It answers with the same bytes and keeps the same SQL semantics:
//   GET  /api/v1/animals   the keyset page (newest first, `limit + 1` rows), the same signed cursor (the cursor
//                          secret is read from the database, as our server reads it);
//   POST /api/v1/activities with Idempotency-Key: one transaction that claims the key (a key past 24 h may be
//                          used again), inserts the activity if the animal is the account's, appends the outbox
//                          event with its deliveries, for a weighing updates the animal's latest weight (with its
//                          own event) and stores the response under the key; a taken key replays its response.
// Keys are checked (hash lookup, cached in memory; scopes), every answer carries the seven CONTRACT headers, and
// every query is a postgres.js tagged template, which postgres.js prepares once per connection.
// What it leaves out, as a hand-written service might: Redis (lock, cached responses, rate limits), 409 for a key
// still in flight (a concurrent retry waits on the key's primary key instead), logs and metrics.
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { createHash } from 'node:crypto'
import { Elysia, t } from 'elysia'
import postgres from 'postgres'
import { ACTIVITY_TYPES } from '../../db/reference/activity-types.ts'
import { canonical, CursorCodec } from '../../src/http/cursor.ts'
import { newId } from '../../src/ids.ts'
import { contractHeaders } from './contract-headers.ts'

const sql = postgres(process.env.DATABASE_URL!, { max: 10, onnotice: () => {} })
const [secret] = await sql<{ value: string }[]>`select value from platform_settings where key = 'cursor_secret'`
if (!secret) throw new Error('no cursor secret in the database: start our server on it once first')
const cursors = new CursorCodec(secret.value)
const detailCheckers = new Map<string, TypeCheck<any>>(ACTIVITY_TYPES.map((type) => [type.id, TypeCompiler.Compile(type.details)]))

interface Caller { accountId: string; scopes: string[] }
const callers = new Map<string, Caller>()

class Refusal extends Error { constructor(readonly status: number, readonly code: string) { super(code) } }

async function callerOf(authorization: string | null, scope: string): Promise<Caller> {
  const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : undefined
  if (!token) throw new Refusal(401, 'authentication_required')
  let caller = callers.get(token)
  if (!caller) {
    const hash = createHash('sha256').update(token).digest('hex')
    const [row] = await sql<{ account_id: string; scopes: string[] }[]>`
      select account_id, scopes from api_keys where token_hash = ${hash} and kind = 'personal' and revoked_at is null and (expires_at is null or expires_at > now())`
    if (!row) throw new Refusal(401, 'invalid_token')
    caller = { accountId: row.account_id, scopes: row.scopes }
    callers.set(token, caller)
  }
  if (!caller.scopes.includes(scope)) throw new Refusal(403, 'insufficient_scope')
  return caller
}

const problem = (status: number, code: string, headers: Record<string, string>) =>
  new Response(JSON.stringify({ type: `https://docs.example/errors/${code}`, title: code, status, detail: code, code, request_id: headers['x-request-id'], errors: [] }),
    { status, headers: { ...headers, 'content-type': 'application/problem+json' } })

const iso = (value: Date | null) => (value === null ? null : value.toISOString())

function presentAnimal(a: Record<string, any>) {
  return {
    id: a.id, name: a.name, reference_id: a.reference_id, species_id: a.species_id, sex: a.sex, status: a.status, morph: a.morph,
    traits: a.traits, birth_date: a.birth_date, acquired_date: a.acquired_date, weight_grams: a.weight_grams, weighed_at: iso(a.weighed_at),
    environment_id: a.environment_id, dam_id: a.dam_id, sire_id: a.sire_id, tags: a.tags, notes: a.notes, metadata: a.metadata,
    created_at: iso(a.created_at), updated_at: iso(a.updated_at),
  }
}

function presentActivity(a: Record<string, any>) {
  return {
    id: a.id, animal_id: a.animal_id, type: a.type, occurred_at: iso(a.occurred_at), details: a.details, notes: a.notes,
    created_at: iso(a.created_at), updated_at: iso(a.updated_at),
  }
}

/** The animal columns in the API's order, dates as text; `table` qualifies them in a join. */
const animalColumns = (table = '') => sql.unsafe(['id', 'name', 'reference_id', 'species_id', 'sex', 'status', 'morph', 'traits', 'birth_date::text',
  'acquired_date::text', 'weight_grams', 'weighed_at', 'environment_id', 'dam_id', 'sire_id', 'tags', 'notes', 'metadata', 'created_at', 'updated_at',
].map((column) => `${table}${column}`).join(', '))
const ANIMAL_COLUMNS = animalColumns()
const UPDATED_ANIMAL_COLUMNS = animalColumns('a.')

/** The outbox row and its deliveries to the account's endpoints that want the event, in one statement. */
async function appendEvent(tx: postgres.TransactionSql, accountId: string, type: string, object: unknown, previous?: unknown) {
  const id = newId('event')
  const createdAt = new Date()
  const payload = JSON.stringify({ id, type, created_at: createdAt.toISOString(), data: previous ? { object, previous_attributes: previous } : { object } })
  await tx`with event as (insert into outbox_events (id, account_id, type, payload, created_at) values (${id}, ${accountId}, ${type}, ${payload}, ${createdAt}) returning id, account_id, type)
    insert into webhook_deliveries (account_id, endpoint_id, event_id, event_type)
    select w.account_id, w.id, event.id, event.type from webhook_endpoints w, event
    where w.account_id = event.account_id and w.status = 'enabled' and (event.type = any(w.enabled_events) or '*' = any(w.enabled_events))`
}

interface ActivityBody { animal_id: string; type: string; occurred_at?: string; details?: Record<string, unknown>; notes?: string | null }

async function recordActivity(tx: postgres.TransactionSql, accountId: string, body: ActivityBody): Promise<{ status: number; body: string }> {
  const details = body.details ?? {}
  const occurredAt = body.occurred_at ? new Date(body.occurred_at) : new Date()
  const checker = detailCheckers.get(body.type)
  if (!checker || !checker.Check(details) || occurredAt.getTime() > Date.now() + 300_000) return { status: 422, body: '{"code":"validation_failed"}' }
  const [row] = await tx`insert into activities (id, account_id, animal_id, type, occurred_at, details, notes)
    select ${newId('activity')}, ${accountId}, ${body.animal_id}, ${body.type}, ${occurredAt}, ${tx.json(details as postgres.JSONValue)}, ${body.notes ?? null}
    where exists (select 1 from animals where account_id = ${accountId} and id = ${body.animal_id} and deleted_at is null)
    returning id, animal_id, type, occurred_at, details, notes, created_at, updated_at`
  if (!row) return { status: 422, body: '{"code":"validation_failed"}' }
  const activity = presentActivity(row)
  await appendEvent(tx, accountId, 'activity.created', activity)
  if (body.type === 'weight') {
    const [animal] = await tx`with old as (
        select id, weight_grams, weighed_at from animals where account_id = ${accountId} and id = ${body.animal_id} and deleted_at is null
          and (weighed_at is null or weighed_at <= ${occurredAt}) for no key update)
      update animals a set weight_grams = ${(details as { grams: number }).grams}, weighed_at = ${occurredAt}, version = a.version + 1, updated_at = now()
      from old where a.id = old.id
      returning ${UPDATED_ANIMAL_COLUMNS}, old.weight_grams as old_weight_grams, old.weighed_at as old_weighed_at`
    if (animal) await appendEvent(tx, accountId, 'animal.updated', presentAnimal(animal), { weight_grams: animal.old_weight_grams, weighed_at: iso(animal.old_weighed_at) })
  }
  return { status: 201, body: JSON.stringify(activity) }
}

const port = Number(process.env.PORT ?? 0)
const app = new Elysia({ normalize: false })
  .get('/api/v1/animals', async ({ request, query }) => {
    const headers = contractHeaders()
    try {
      const { accountId } = await callerOf(request.headers.get('authorization'), 'animals:read')
      const limit = query.limit ?? 50
      const scope = { list: 'animals', accountId, filters: {} }
      const after = query.cursor ? String(cursors.decode(scope, query.cursor)[0]) : undefined
      const rows = after
        ? await sql`select ${ANIMAL_COLUMNS} from animals where account_id = ${accountId} and deleted_at is null and id < ${after} order by id desc limit ${limit + 1}`
        : await sql`select ${ANIMAL_COLUMNS} from animals where account_id = ${accountId} and deleted_at is null order by id desc limit ${limit + 1}`
      const hasMore = rows.length > limit
      const page = hasMore ? rows.slice(0, limit) : rows
      return new Response(JSON.stringify({
        data: page.map(presentAnimal), has_more: hasMore, next_cursor: hasMore ? cursors.encode(scope, [page[page.length - 1]!.id]) : null,
      }), { headers: { ...headers, 'content-type': 'application/json' } })
    } catch (error) {
      if (error instanceof Refusal) return problem(error.status, error.code, headers)
      throw error
    }
  }, { query: t.Object({ limit: t.Optional(t.Numeric({ minimum: 1, maximum: 200 })), cursor: t.Optional(t.String({ maxLength: 2048 })) }) })
  .post('/api/v1/activities', async ({ request, body }) => {
    const headers = contractHeaders()
    try {
      const { accountId } = await callerOf(request.headers.get('authorization'), 'activities:write')
      const key = request.headers.get('idempotency-key')
      if (key === null) return new Response(JSON.stringify(await sql.begin((tx) => recordActivity(tx, accountId, body))), { status: 201, headers: { ...headers, 'content-type': 'application/json' } })
      const fingerprint = createHash('sha256').update(`POST /api/v1/activities\n${canonical(body)}`).digest('base64url')
      const outcome = await sql.begin(async (tx) => {
        const [claimed] = await tx`insert into idempotency_keys (account_id, key, fingerprint, status, body) values (${accountId}, ${key}, ${fingerprint}, 0, '')
          on conflict (account_id, key) do update set fingerprint = excluded.fingerprint, status = 0, body = '', created_at = now()
            where idempotency_keys.created_at < now() - interval '24 hours'
          returning 1`
        if (!claimed) {
          const [stored] = await tx<{ fingerprint: string; status: number; body: string }[]>`select fingerprint, status, body from idempotency_keys where account_id = ${accountId} and key = ${key}`
          if (stored!.fingerprint !== fingerprint) throw new Refusal(422, 'idempotency_key_mismatch')
          return { status: stored!.status, body: stored!.body, replayed: true }
        }
        const result = await recordActivity(tx, accountId, body)
        await tx`update idempotency_keys set status = ${result.status}, body = ${result.body} where account_id = ${accountId} and key = ${key}`
        return { ...result, replayed: false }
      })
      return new Response(outcome.body, {
        status: outcome.status,
        headers: { ...headers, 'content-type': outcome.status >= 400 ? 'application/problem+json' : 'application/json', ...(outcome.replayed ? { 'idempotent-replayed': 'true' } : {}) },
      })
    } catch (error) {
      if (error instanceof Refusal) return problem(error.status, error.code, headers)
      throw error
    }
  }, {
    body: t.Object({
      animal_id: t.String({ minLength: 1, maxLength: 40 }),
      type: t.String({ minLength: 1, maxLength: 50 }),
      occurred_at: t.Optional(t.String({ format: 'date-time' })),
      details: t.Optional(t.Record(t.String(), t.Unknown())),
      notes: t.Optional(t.Union([t.String({ maxLength: 10_000 }), t.Null()])),
    }, { additionalProperties: false }),
  })
  .listen({ hostname: '127.0.0.1', port })

console.log(`listening on http://127.0.0.1:${app.server!.port}`)
process.on('SIGTERM', async () => { await app.stop(true); await sql.end({ timeout: 2 }); process.exit(0) })
