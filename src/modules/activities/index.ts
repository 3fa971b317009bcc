// /activities: list and record; POST honours Idempotency-Key (CONTRACT §5).
import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import { fingerprintOf, runIdempotent, type Outcome } from '../../http/idempotency.ts'
import { op } from '../../http/operation.ts'
import { API_PREFIX, requestState } from '../../http/pipeline.ts'
import { principalOf } from '../../http/request.ts'
import { PageOf, pageQuery } from '../../http/schemas.ts'
import { IdOf, Instant, Notes, UpdatedSince, nullable } from '../../records/fields.ts'
import type { Executor } from '../../webhooks/outbox.ts'
import { listActivities, presentActivity, recordActivity } from './service.ts'

const TypeId = t.String({ minLength: 1, maxLength: 50, description: 'An `/activity-types` id.', examples: ['feeding'] })
const Details = t.Record(t.String(), t.Unknown(), {
  description: "Shaped by the activity's type: `GET /activity-types` gives each type's `details_schema` (weight: `{ grams }`; feeding: `{ prey, size, count, accepted }`…).",
  examples: [{ grams: 1520 }],
})

export const Activity = t.Object({
  id: IdOf('activity'),
  animal_id: IdOf('animal'),
  type: TypeId,
  occurred_at: Instant,
  details: Details,
  notes: nullable(Notes),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/Activity' })

const ActivityCreate = t.Object({
  animal_id: t.String({ minLength: 1, maxLength: 40, description: 'The animal (`anm_…`).' }),
  type: TypeId,
  occurred_at: t.Optional(t.Union([Instant], { description: 'When it happened (default: now); at most 5 minutes in the future.' })),
  details: t.Optional(Details),
  notes: t.Optional(nullable(Notes)),
}, { additionalProperties: false, $id: '#/components/schemas/ActivityCreate' })

const IdempotencyHeaders = t.Object({
  'idempotency-key': t.Optional(t.String({
    minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$',
    description: 'Makes a retry safe: within 24 h the same key returns the first response (with `Idempotent-Replayed: true`) instead of writing again; the same key with a different body is 422, and while the first request is still running 409.',
  })),
})

export function activitiesModule(deps: Deps) {
  return new Elysia({ name: 'activities', prefix: API_PREFIX })
    .get('/activities', ({ request, query }) => listActivities(deps, principalOf(request).accountId, query), {
      query: t.Object({
        ...pageQuery(),
        animal_id: t.Optional(t.String({ maxLength: 40 })),
        type: t.Optional(TypeId),
        from: t.Optional(t.String({ format: 'date-time', description: 'Occurred at or after this instant.' })),
        to: t.Optional(t.String({ format: 'date-time', description: 'Occurred before this instant.' })),
        updated_since: UpdatedSince,
      }),
      response: { 200: PageOf(Activity) },
      detail: op({ summary: 'List activities', description: 'Newest occurrence first.', tags: ['Activities'], scopes: ['activities:read'] }),
    })
    .post('/activities', async ({ request, body, headers }) => {
      const { accountId } = principalOf(request)
      const state = requestState(request)
      const perform = async (tx: Executor): Promise<Outcome> => ({ status: 201, body: JSON.stringify(presentActivity(await recordActivity(tx, accountId, body))) })
      const key = headers['idempotency-key']
      const result = key === undefined
        ? { ...(await deps.database.db.transaction(perform)), replayed: false }
        : await runIdempotent(deps, { accountId, key, fingerprint: fingerprintOf('POST', `${API_PREFIX}/activities`, body), requestId: state.requestId, url: request.url }, perform)
      return new Response(result.body, {
        status: result.status,
        headers: {
          ...state.headers,
          'content-type': result.status >= 400 ? 'application/problem+json' : 'application/json',
          ...(result.replayed ? { 'idempotent-replayed': 'true' } : {}),
        },
      })
    }, {
      headers: IdempotencyHeaders,
      body: ActivityCreate,
      response: { 201: Activity },
      detail: op({
        summary: 'Record an activity', description: "A weight activity also updates the animal's latest weight (when it is the newest weighing).",
        tags: ['Activities'], scopes: ['activities:write'], errors: [409, 422], idempotent: true,
      }),
    })
}
