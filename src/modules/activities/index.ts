// /activities: list and record; POST honours Idempotency-Key (CONTRACT §5).
import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import { IdempotencyHeaders, writeOnce } from '../../http/idempotency.ts'
import { op } from '../../http/operation.ts'
import { API_PREFIX } from '../../http/pipeline.ts'
import { principalMacro } from '../../http/request.ts'
import { PageOf, pageQuery } from '../../http/schemas.ts'
import { IdOf, Instant, Notes, UpdatedSince, nullable } from '../../records/fields.ts'
import { ActivityListQuery, TypeId } from './queries.ts'
import { createActivity, listActivities, presentActivity } from './service.ts'

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

export function activitiesModule(deps: Deps) {
  return new Elysia({ name: 'activities', prefix: API_PREFIX })
    .use(principalMacro)
    .get('/activities', ({ principal, query }) => listActivities(deps, principal.accountId, query), {
      principal: true,
      query: ActivityListQuery,
      response: { 200: PageOf(Activity) },
      detail: op({ operationId: 'listActivities', summary: 'List activities', description: 'Newest occurrence first.', tags: ['Activities'], scopes: ['activities:read'] }),
    })
    .post('/activities', (context) => {
      const { accountId } = context.principal
      return writeOnce(deps, context, (within) => createActivity(deps, accountId, context.body, within), presentActivity)
    }, {
      principal: true,
      headers: IdempotencyHeaders,
      body: ActivityCreate,
      response: { 201: Activity },
      detail: op({
        operationId: 'createActivity',
        summary: 'Record an activity', description: "A weight activity also updates the animal's latest weight (when it is the newest weighing).",
        tags: ['Activities'], scopes: ['activities:write'], errors: [409, 422], idempotent: true,
      }),
    })
}
