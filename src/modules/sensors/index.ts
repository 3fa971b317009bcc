// /sensors/devices and headless pairing. The ingest endpoints (/sensors/readings, /sensors/ping) live in ingest/.
import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import { ApiError } from '../../http/errors.ts'
import { Preconditions } from '../../http/etag.ts'
import { versioned } from '../../http/declared-response.ts'
import { op } from '../../http/operation.ts'
import { API_PREFIX } from '../../http/pipeline.ts'
import { principalMacro } from '../../http/request.ts'
import { PageOf, pageQuery, JsonInteger } from '../../http/schemas.ts'
import { isId } from '../../ids.ts'
import { IdOf, Instant, UpdatedSince, nullable, oneOf } from '../../records/fields.ts'
import { CLAIM_POLLS_PER_MINUTE, CLAIM_TTL_SECONDS, POLL_INTERVAL_SECONDS, VERIFICATION_PATH, pollClaim, startClaim } from './pairing.ts'
import { createDevice, deleteDevice, getDevice, listDevices, presentDevice, updateDevice } from './service.ts'

const ChannelKey = t.String({ minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9_.-]+$', description: 'The name the device reports the channel under, e.g. `t1`.', examples: ['t1'] })
const Channel = t.Object({
  key: ChannelKey,
  metric: nullable(t.String({ maxLength: 50, description: 'A `/environment/metrics` id; null leaves the channel unmapped.' })),
  unit: nullable(t.String({ maxLength: 20, description: "Defaults to the metric's unit." })),
  environment_id: nullable(IdOf('environment', 'Where the channel measures.')),
}, { $id: '#/components/schemas/DeviceChannel' })
const ChannelInput = t.Object({
  key: ChannelKey,
  metric: t.Optional(nullable(t.String({ maxLength: 50 }))),
  unit: t.Optional(nullable(t.String({ maxLength: 20 }))),
  environment_id: t.Optional(nullable(t.String({ maxLength: 40 }))),
}, { additionalProperties: false })
const Channels = t.Array(ChannelInput, { maxItems: 32 })
const Name = t.String({ minLength: 1, maxLength: 100 })
const Model = t.String({ maxLength: 100 })
const HardwareId = t.String({ maxLength: 100, description: 'Serial number or MAC address.' })

export const Device = t.Object({
  id: IdOf('device'),
  name: Name,
  model: nullable(Model),
  hardware_id: nullable(HardwareId),
  channels: t.Array(Channel),
  unmapped_channels: t.Array(t.String(), { description: 'Channels that sent readings without a metric mapped; those readings are kept with metric and environment null.' }),
  last_seen_at: nullable(Instant),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/Device' })

const CreatedDevice = t.Composite([Device, t.Object({
  key: nullable(t.String({ description: 'The device key, shown this once. Null when pairing with `claim_code`: the key then goes to the device through its poll.' })),
})], { $id: '#/components/schemas/CreatedDevice' })

export const DeviceCreate = t.Object({
  name: t.Optional(Name),
  model: t.Optional(nullable(Model)),
  hardware_id: t.Optional(nullable(HardwareId)),
  channels: t.Optional(Channels),
  claim_code: t.Optional(t.String({ minLength: 1, maxLength: 20, description: 'The user code a headless device shows (e.g. `BCDF-GHJK`); completes its pairing.' })),
}, { additionalProperties: false, $id: '#/components/schemas/DeviceCreate' })

const DevicePatch = t.Object({
  name: t.Optional(Name),
  model: t.Optional(nullable(Model)),
  hardware_id: t.Optional(nullable(HardwareId)),
  channels: t.Optional(nullable(Channels, 'Replaces the whole list; null clears it.')),
}, { additionalProperties: false, $id: '#/components/schemas/DevicePatch', description: 'A JSON merge patch (RFC 7396).' })

const ClaimStart = t.Object({
  model: t.Optional(Model),
  hardware_id: t.Optional(HardwareId),
}, { additionalProperties: false })

const ClaimStarted = t.Object({
  claim_id: IdOf('claim', 'A secret, the device\'s alone: whoever presents it to GET /sensors/claim/status is handed the device key once the owner approves. Its 80 random bits are drawn for it alone (never derived from another id), and the service keeps only its hash. Keep it out of logs and displays; show the owner `user_code` instead.'),
  user_code: t.String({ pattern: '^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$', examples: ['BCDF-GHJK'], description: 'Show this to the owner; consonants only, no ambiguous characters.' }),
  verification_uri: t.String({ format: 'uri', description: 'The web console page where the owner enters the code and approves the device (or sends the code as `claim_code` of POST /sensors/devices), absolute as RFC 8628 asks.' }),
  verification_uri_complete: t.String({ format: 'uri', description: 'verification_uri with the code filled in (RFC 8628 §3.3.1), e.g. for a QR code; the owner still confirms before the device is paired.' }),
  expires_in: JsonInteger({ description: 'Seconds until the claim expires.' }),
  interval: JsonInteger({ description: 'Seconds to wait between polls; polling sooner answers slow_down.' }),
}, { $id: '#/components/schemas/ClaimStarted' })

const ClaimState = t.Object({
  status: oneOf(['pending', 'slow_down', 'claimed', 'expired']),
  device_id: t.Optional(IdOf('device')),
  device_key: t.Optional(t.String({ description: 'On the first poll after the claim only: minted for that poll, stored only as a hash, never shown again.' })),
}, { $id: '#/components/schemas/ClaimStatus' })

const IdParam = t.Object({ id: t.String({ description: 'A device id (`dev_…`).' }) })

const deviceId = (id: string) => {
  if (!isId('device', id)) throw new ApiError('not_found', 'No such device.')
  return id
}
/** Unauthenticated pairing calls are limited per client address, so nobody can flood the claim table. */
const CLAIM_STARTS_PER_MINUTE = 10

export function sensorsModule(deps: Deps) {
  return new Elysia({ name: 'sensors', prefix: API_PREFIX })
    .use(principalMacro)
    .get('/sensors/devices', ({ principal, query }) => listDevices(deps, principal.accountId, query), {
      principal: true,
      query: t.Object({ ...pageQuery(), environment_id: t.Optional(t.String({ maxLength: 40, description: 'Devices with a channel in this environment.' })), updated_since: UpdatedSince }),
      response: { 200: PageOf(Device) },
      detail: op({ operationId: 'listDevices', summary: 'List sensor devices', tags: ['Sensors'], scopes: ['sensors:read'] }),
    })
    .post('/sensors/devices', async ({ principal, body, set }) => {
      const { row, key } = await createDevice(deps, principal.accountId, body)
      set.status = 201
      return versioned(row, (device) => ({ ...presentDevice(device), key }))
    }, {
      principal: true,
      body: DeviceCreate,
      response: { 201: CreatedDevice },
      detail: op({
        operationId: 'createDevice',
        summary: 'Register a sensor device', description: 'Returns the device and its key (shown once). With `claim_code`, completes a headless pairing instead. Wrong codes are limited to 10 per 15 minutes per account (429).',
        tags: ['Sensors'], scopes: ['sensors:write'], errors: [422], etag: true,
      }),
    })
    .get('/sensors/devices/:id', async ({ principal, params }) => {
      const id = deviceId(params.id)
      if (principal.kind === 'device' && principal.deviceId !== id) throw new ApiError('device_key_not_allowed', 'A device key may read only its own device.')
      const row = await getDevice(deps.database.db, principal.accountId, id)
      if (!row) throw new ApiError('not_found', 'No such device.')
      return versioned(row, presentDevice)
    }, {
      principal: true,
      params: IdParam,
      response: { 200: Device },
      detail: op({ operationId: 'getDevice', summary: 'Get a device and its channel configuration', description: 'A device key may read its own device.', tags: ['Sensors'], auth: ['personal', 'device'], scopes: ['sensors:read'], errors: [404], etag: true }),
    })
    .patch('/sensors/devices/:id', async ({ principal, params, body, headers }) =>
      versioned(await updateDevice(deps, principal.accountId, deviceId(params.id), body, headers['if-match'] ?? null), presentDevice), {
      principal: true,
      params: IdParam,
      headers: Preconditions,
      body: DevicePatch,
      response: { 200: Device },
      detail: op({ operationId: 'updateDevice', summary: 'Update a device', tags: ['Sensors'], scopes: ['sensors:write'], errors: [404, 412, 422], accepts: ['application/merge-patch+json', 'application/json'], etag: true }),
    })
    .delete('/sensors/devices/:id', async ({ principal, params, headers, set }) => {
      await deleteDevice(deps, principal.accountId, deviceId(params.id), headers['if-match'] ?? null)
      set.status = 204
    }, {
      principal: true,
      params: IdParam,
      headers: Preconditions,
      response: { 204: t.Void({ description: 'Deleted; the device key stops working at once.' }) },
      detail: op({ operationId: 'deleteDevice', summary: 'Delete a device', description: 'Revokes its key in every server process. Its readings are kept.', tags: ['Sensors'], scopes: ['sensors:write'], errors: [404, 412], etag: true }),
    })
    .post('/sensors/claim/start', async ({ request, body, server, set }) => {
      const address = server?.requestIP(request)?.address ?? 'unknown'
      const { count, resetMs } = await deps.rateLimiter.exact(`claim-start:${address}`, 60_000)
      if (count > CLAIM_STARTS_PER_MINUTE) {
        throw new ApiError('rate_limited', 'Too many pairing claims from this address; try again shortly.', { headers: { 'retry-after': String(Math.ceil(resetMs / 1000)) } })
      }
      const claim = await startClaim(deps, body ?? {})
      set.status = 201
      // On PUBLIC_URL, never on the request's Host: a device shows this link to its owner (a phishing vector otherwise).
      const verification = `${deps.config.publicUrl}${VERIFICATION_PATH}`
      return { claim_id: claim.id, user_code: claim.user_code, verification_uri: verification, verification_uri_complete: `${verification}?user_code=${encodeURIComponent(claim.user_code)}`, expires_in: CLAIM_TTL_SECONDS, interval: POLL_INTERVAL_SECONDS }
    }, {
      body: t.Optional(ClaimStart),
      response: { 201: ClaimStarted },
      detail: op({ operationId: 'startDeviceClaim', summary: 'Start pairing a headless device', description: 'No key needed. Limited to 10 claims per minute per client address. `verification_uri` is on the service\'s configured public URL (`PUBLIC_URL`), never on the request\'s Host or X-Forwarded-* headers, so a caller cannot make a device send its owner elsewhere.', tags: ['Sensors'], auth: 'public', errors: [422, 429] }),
    })
    .get('/sensors/claim/status', async ({ request, query, server }) => {
      // Counted before the id is looked at, so unknown and malformed ids cost a guesser the same as real ones.
      const address = server?.requestIP(request)?.address ?? 'unknown'
      const { count, resetMs } = await deps.rateLimiter.exact(`claim-status:${address}`, 60_000)
      if (count > CLAIM_POLLS_PER_MINUTE) {
        throw new ApiError('rate_limited', 'Too many pairing polls from this address; try again shortly.', { headers: { 'retry-after': String(Math.ceil(resetMs / 1000)) } })
      }
      if (!isId('claim', query.claim_id)) throw new ApiError('not_found', 'No such claim.')
      return pollClaim(deps, query.claim_id)
    }, {
      query: t.Object({ claim_id: t.String({ maxLength: 40, description: 'The claim id POST /sensors/claim/start returned: a secret (see ClaimStarted.claim_id).' }) }),
      response: { 200: ClaimState },
      detail: op({ operationId: 'getDeviceClaim', summary: 'Poll for a pairing result', description: `No key needed: the claim id is the secret. Poll every ${POLL_INTERVAL_SECONDS} s; polling sooner answers \`slow_down\` (RFC 8628 §3.5). The first poll after the owner claims the device mints its key and carries it; later polls carry only \`device_id\`. A claim whose device was deleted before its key was handed over answers \`expired\`. Limited to ${CLAIM_POLLS_PER_MINUTE} polls per minute per client address, unknown claim ids included (429 with Retry-After).`, tags: ['Sensors'], auth: 'public', errors: [404, 429] }),
    })
}
