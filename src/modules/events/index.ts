// GET /events and /events/{id}; an endpoint's attempts, recovery after an outage, and resending one event.
import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import { op } from '../../http/operation.ts'
import { API_PREFIX } from '../../http/pipeline.ts'
import { principalMacro } from '../../http/request.ts'
import { JsonInteger, PageOf, pageQuery } from '../../http/schemas.ts'
import { IdOf, Instant, nullable } from '../../records/fields.ts'
import { EVENT_TYPES } from '../../webhooks/outbox.ts'
import { EventListQuery } from './queries.ts'
import { EVENT_RETENTION_DAYS, getEvent, listAttempts, listEvents, recoverEndpoint, resendEvent } from './service.ts'

const Event = t.Object({
  id: IdOf('event'),
  type: t.String({ description: `One of: ${EVENT_TYPES.join(', ')}.`, examples: ['animal.created'] }),
  created_at: Instant,
  data: t.Object({
    object: t.Record(t.String(), t.Unknown(), { description: 'The record as the API showed it when the event happened.' }),
    previous_attributes: t.Optional(t.Record(t.String(), t.Unknown(), { description: 'On updates: the changed fields\' old values.' })),
  }),
}, { $id: '#/components/schemas/Event', description: 'The event exactly as webhook deliveries carry it (the signed body).' })

const Attempt = t.Object({
  id: IdOf('attempt'), event_id: IdOf('event'), event_type: t.String(), attempted_at: Instant,
  status_code: nullable(JsonInteger(), 'null when no answer came (timeout, refused connection, refused URL).'),
  duration_ms: JsonInteger(), error: nullable(t.String()),
}, { $id: '#/components/schemas/WebhookAttempt' })

const EndpointParam = t.Object({ id: t.String({ description: 'A webhook endpoint id (`whe_…`).' }) })
const retention = `Events are kept ${EVENT_RETENTION_DAYS} days.`

export function eventsModule(deps: Deps) {
  return new Elysia({ name: 'events', prefix: API_PREFIX })
    .use(principalMacro)
    .get('/events', ({ principal, query }) => listEvents(deps, principal.accountId, query), {
      principal: true,
      query: EventListQuery,
      response: { 200: PageOf(Event) },
      detail: op({ operationId: 'listEvents', summary: 'List events', description: `The account's change events, newest first, whether or not a webhook endpoint received them. ${retention}`, tags: ['Webhooks'], scopes: ['webhooks:read'] }),
    })
    .get('/events/:id', ({ principal, params }) => getEvent(deps, principal.accountId, params.id), {
      principal: true,
      params: t.Object({ id: t.String({ description: 'An event id (`evt_…`), as in a delivery\'s `webhook-id` header.' }) }),
      response: { 200: Event },
      detail: op({ operationId: 'getEvent', summary: 'Get an event', description: retention, tags: ['Webhooks'], scopes: ['webhooks:read'], errors: [404] }),
    })
    .get('/webhooks/endpoints/:id/attempts', ({ principal, params, query }) => listAttempts(deps, principal.accountId, params.id, query), {
      principal: true,
      params: EndpointParam,
      query: t.Object(pageQuery()),
      response: { 200: PageOf(Attempt) },
      detail: op({ operationId: 'listWebhookAttempts', summary: 'List delivery attempts to a webhook endpoint', description: 'Every attempt, newest first: what the receiver answered, how long it took, or why no answer came.', tags: ['Webhooks'], scopes: ['webhooks:read'], errors: [404] }),
    })
    .post('/webhooks/endpoints/:id/recover', async ({ principal, params, body, set }) => {
      const result = await recoverEndpoint(deps, principal.accountId, params.id, body.since)
      set.status = 202
      return result
    }, {
      principal: true,
      params: EndpointParam,
      body: t.Object({ since: t.String({ format: 'date-time', description: 'Recover deliveries of events created at or after this instant.', examples: ['2026-11-21T10:00:00.000Z'] }) }, { additionalProperties: false }),
      response: { 202: t.Object({ recovered: JsonInteger({ description: 'Failed deliveries queued again.' }) }) },
      detail: op({ operationId: 'recoverWebhookEndpoint', summary: 'Deliver again what failed during a receiver\'s outage', description: 'Every delivery to this endpoint that failed (ran out of retries, or the receiver answered 410) for an event created at or after `since` is due again now, with a fresh schedule of retries. Deliveries still on their retry schedule are not failed yet and are not counted: right after an outage this answers `{"recovered": 0}`, and those deliveries arrive at their next retry (5 s, 5 min, 30 min, 2 h … over about three days by default) without any call. A delivery that runs out of retries disables its endpoint; a disabled endpoint answers 409 here until it is enabled again (`PATCH /webhooks/endpoints/{id}` with `{"status": "enabled"}`), after which recover queues what failed.', tags: ['Webhooks'], scopes: ['webhooks:write'], errors: [404, 409, 422] }),
    })
    .post('/webhooks/endpoints/:id/resend', async ({ principal, params, body, set }) => {
      const result = await resendEvent(deps, principal.accountId, params.id, body.event_id)
      set.status = 202
      return result
    }, {
      principal: true,
      params: EndpointParam,
      body: t.Object({ event_id: t.String({ maxLength: 40, description: 'The event to send again (`evt_…`).', examples: ['evt_01jd8x3m5v6w7y8z9a0b1c2d3e'] }) }, { additionalProperties: false }),
      response: { 202: t.Object({ event_id: IdOf('event') }) },
      detail: op({ operationId: 'resendWebhookEvent', summary: 'Send one event to a webhook endpoint again', description: 'Queued now, whether the endpoint received it before, failed, or was not subscribed to its type. The endpoint must be enabled (409 otherwise).', tags: ['Webhooks'], scopes: ['webhooks:write'], errors: [404, 409, 422] }),
    })
}
