// /webhooks/endpoints: where an account's change events are delivered (CONTRACT §8).
import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import { ApiError } from '../../http/errors.ts'
import { op } from '../../http/operation.ts'
import { API_PREFIX } from '../../http/pipeline.ts'
import { principalMacro } from '../../http/request.ts'
import { PageOf, pageQuery, JsonInteger } from '../../http/schemas.ts'
import { isId } from '../../ids.ts'
import { IdOf, Instant, UpdatedSince, nullable, oneOf } from '../../records/fields.ts'
import { EVENT_TYPES } from '../../webhooks/outbox.ts'
import { createEndpoint, deleteEndpoint, deliveryReport, getEndpoint, listEndpoints, presentEndpoint, sendTestEvent, updateEndpoint } from './service.ts'

const Url = t.String({ minLength: 1, maxLength: 2000, description: 'An https URL whose host resolves only to public unicast addresses: no private, loopback, link-local, IPv4-embedding IPv6 (::/96, ::ffff:0:0/96, 64:ff9b::/96, 6to4, Teredo) or other IANA special-purpose address. Checked when saved and again before every delivery, which then connects to the address just checked (Host and TLS server name stay on the name).' })
const Events = t.Array(t.String({ maxLength: 50 }), {
  minItems: 1, maxItems: 20,
  description: `Event types to receive, or "*" for all: ${EVENT_TYPES.filter((e) => e !== 'webhook_endpoint.test').join(', ')}.`,
})
const Description = t.String({ maxLength: 500 })
const Status = oneOf(['enabled', 'disabled'], 'disabled: nothing is delivered; the reason says why when the service disabled it.')

const Endpoint = t.Object({
  id: IdOf('webhookEndpoint'),
  url: Url,
  description: nullable(Description),
  enabled_events: t.Array(t.String()),
  status: Status,
  disabled_reason: nullable(t.String()),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/WebhookEndpoint' })

const Secret = t.String({ pattern: '^whsec_', description: 'The signing secret (Standard Webhooks), shown only here.', examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] })
const CreatedEndpoint = t.Composite([Endpoint, t.Object({ secret: Secret })], { $id: '#/components/schemas/CreatedWebhookEndpoint' })
const UpdatedEndpoint = t.Composite([Endpoint, t.Object({ secret: t.Optional(t.String({ pattern: '^whsec_', examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], description: 'The new signing secret, present only after `rotate_secret` (shown this once).' })) })], { $id: '#/components/schemas/UpdatedWebhookEndpoint' })
const EndpointDetail = t.Composite([Endpoint, t.Object({
  deliveries: t.Object({ pending: JsonInteger(), succeeded: JsonInteger(), failed: JsonInteger() }, { description: 'Deliveries to this endpoint by state.' }),
  recent_attempts: t.Array(t.Object({
    event_id: IdOf('event'), event_type: t.String(), attempted_at: Instant,
    status_code: nullable(t.Integer(), 'null when no answer came (timeout, refused connection, refused URL).'),
    duration_ms: JsonInteger(), error: nullable(t.String()),
  }), { description: 'The latest 10 attempts, newest first.' }),
})], { $id: '#/components/schemas/WebhookEndpointDetail' })

const EndpointCreate = t.Object({
  url: Url,
  enabled_events: Events,
  description: t.Optional(nullable(Description)),
}, { additionalProperties: false, $id: '#/components/schemas/WebhookEndpointCreate' })
const EndpointPatch = t.Object({
  url: t.Optional(Url),
  enabled_events: t.Optional(Events),
  description: t.Optional(nullable(Description)),
  status: t.Optional(Status),
  rotate_secret: t.Optional(t.Boolean({ description: 'true: issue a new secret; the old one keeps signing too for 24 hours.' })),
}, { additionalProperties: false, $id: '#/components/schemas/WebhookEndpointPatch' })

const IdParam = t.Object({ id: t.String({ description: 'A webhook endpoint id (`whe_…`).' }) })
const endpointId = (id: string) => {
  if (!isId('webhookEndpoint', id)) throw new ApiError('not_found', 'No such webhook endpoint.')
  return id
}

export function webhooksModule(deps: Deps) {
  return new Elysia({ name: 'webhooks', prefix: API_PREFIX })
    .use(principalMacro)
    .get('/webhooks/endpoints', ({ principal, query }) => listEndpoints(deps, principal.accountId, query), {
      principal: true,
      query: t.Object({ ...pageQuery(), updated_since: UpdatedSince }),
      response: { 200: PageOf(Endpoint) },
      detail: op({ operationId: 'listWebhookEndpoints', summary: 'List webhook endpoints', tags: ['Webhooks'], scopes: ['webhooks:read'] }),
    })
    .post('/webhooks/endpoints', async ({ principal, body, set }) => {
      const row = await createEndpoint(deps, principal.accountId, body)
      set.status = 201
      return { ...presentEndpoint(row), secret: row.secret }
    }, {
      principal: true,
      body: EndpointCreate,
      response: { 201: CreatedEndpoint },
      detail: op({ operationId: 'createWebhookEndpoint', summary: 'Create a webhook endpoint', description: 'Returns the signing secret, this once.', tags: ['Webhooks'], scopes: ['webhooks:write'], errors: [422] }),
    })
    .get('/webhooks/endpoints/:id', async ({ principal, params }) => {
      const row = await getEndpoint(deps, principal.accountId, endpointId(params.id))
      return { ...presentEndpoint(row), ...(await deliveryReport(deps, row.id)) }
    }, {
      principal: true,
      params: IdParam,
      response: { 200: EndpointDetail },
      detail: op({ operationId: 'getWebhookEndpoint', summary: 'Get a webhook endpoint', description: 'With delivery counts and the latest attempts.', tags: ['Webhooks'], scopes: ['webhooks:read'], errors: [404] }),
    })
    .patch('/webhooks/endpoints/:id', async ({ principal, request, params, body }) => {
      const { row, rotated } = await updateEndpoint(deps, principal.accountId, endpointId(params.id), body)
      // Like GET, no secret unless this request rotated it.
      return rotated ? { ...presentEndpoint(row), secret: row.secret } : presentEndpoint(row)
    }, {
      principal: true,
      params: IdParam,
      body: EndpointPatch,
      response: { 200: UpdatedEndpoint },
      detail: op({ operationId: 'updateWebhookEndpoint', summary: 'Update a webhook endpoint', description: 'Setting status to enabled re-enables an endpoint the service disabled.', tags: ['Webhooks'], scopes: ['webhooks:write'], errors: [404, 422], accepts: ['application/merge-patch+json', 'application/json'] }),
    })
    .delete('/webhooks/endpoints/:id', async ({ principal, params, set }) => {
      await deleteEndpoint(deps, principal.accountId, endpointId(params.id))
      set.status = 204
    }, {
      principal: true,
      params: IdParam,
      response: { 204: t.Void({ description: 'Deleted, with its pending deliveries.' }) },
      detail: op({ operationId: 'deleteWebhookEndpoint', summary: 'Delete a webhook endpoint', tags: ['Webhooks'], scopes: ['webhooks:write'], errors: [404] }),
    })
    .post('/webhooks/endpoints/:id/test', async ({ principal, params, set }) => {
      const eventId = await sendTestEvent(deps, principal.accountId, endpointId(params.id))
      set.status = 202
      return { event_id: eventId }
    }, {
      principal: true,
      params: IdParam,
      response: { 202: t.Object({ event_id: IdOf('event') }) },
      detail: op({ operationId: 'testWebhookEndpoint', summary: 'Send a test event to a webhook endpoint', description: 'Queues a `webhook_endpoint.test` event for this endpoint alone (an addition to the v1 reference).', tags: ['Webhooks'], scopes: ['webhooks:write'], errors: [404] }),
    })
}
