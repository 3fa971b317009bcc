// POST /sensors/readings and GET|POST /sensors/ping (CONTRACT §7). Per request: the key (cached), parse,
// validate, map channels from the cached device configuration, append to the shared batch, answer after the
// batch's write succeeded.
import { Elysia, t } from 'elysia'
import { ApiError } from '../src/http/errors.ts'
import { op } from '../src/http/operation.ts'
import type { HotAnswer, HotHandlers } from '../src/http/hot-path.ts'
import { API_PREFIX, type Pipeline } from '../src/http/pipeline.ts'
import { requestState } from '../src/http/request-state.ts'
import { principalMacro, principalOf } from '../src/http/request.ts'
import type { Principal } from '../src/auth/authenticator.ts'
import { JsonInteger } from '../src/http/schemas.ts'
import { oneOf } from '../src/records/fields.ts'
import { IngestUnavailable } from './batcher.ts'
import type { DeviceInfo } from './devices.ts'
import type { Ingest } from './index.ts'
import { MAX_PING_CHANNELS, MAX_READINGS_PER_BATCH, parseBatch, parsePing, PING_REFUSED, READING_VALUE_RULE, ReadingsBatch, type Parsed } from './parse.ts'

/** The calling device's cached configuration; a promise only when it is not cached yet. */
function deviceOf(ingest: Ingest, principal: Principal): DeviceInfo | Promise<DeviceInfo> {
  const device = principal.deviceId ? ingest.devices.get(principal.deviceId) : undefined
  return device instanceof Promise ? device.then(present) : present(device)
}

function present(device: DeviceInfo | undefined): DeviceInfo {
  // A deleted device's key is revoked, so this is only a race with the deletion.
  if (!device) throw new ApiError('invalid_token', 'This device no longer exists.', { headers: { 'www-authenticate': 'Bearer realm="api", error="invalid_token"' } })
  return device
}

/** Stores the readings (group commit) before the caller answers; a store that cannot take them is a 503. */
function accept(ingest: Ingest, device: DeviceInfo, parsed: Parsed): Promise<void> {
  return ingest.accept(device, parsed).catch(unavailable)
}

function unavailable(error: unknown): never {
  if (!(error instanceof IngestUnavailable)) throw error
  throw new ApiError('service_unavailable', `${error.message} Nothing from this request was stored; retry it.`, { headers: { 'retry-after': String(error.retryAfterSeconds) } })
}

const Accepted = t.Object({
  accepted: JsonInteger({ description: 'Readings stored (a reading already stored with the same channel and ts counts: retries are safe).' }),
  rejected: t.Array(t.Object({
    index: JsonInteger(),
    code: oneOf(['invalid_reading', 'invalid_channel', 'invalid_value', 'invalid_timestamp', 'timestamp_in_future', 'duplicate_reading']),
    message: t.String(),
  }), { description: 'Readings refused, by their index in the batch; the rest were stored.' }),
}, { $id: '#/components/schemas/ReadingsAccepted' })

const PingFields = t.Object({
  key: t.Optional(t.String({ description: 'The device key, for firmware that cannot set headers (kept out of logs).' })),
  ts: t.Optional(t.String({ description: 'RFC 3339 or epoch milliseconds; default: now.' })),
}, { additionalProperties: t.String(), description: `Every other field is a channel and its value, e.g. \`t1=27.5&h1=61\` (at most ${MAX_PING_CHANNELS}); a value is a number as JSON writes it, ${READING_VALUE_RULE}.` })
const PingBody = t.Object({
  key: t.Optional(t.String()),
  ts: t.Optional(t.Union([t.String(), t.Integer()])),
}, { additionalProperties: t.Union([t.String(), t.Number()]), $id: '#/components/schemas/PingBody' })

/** POST /sensors/readings: the batch parsed against the device's channels, stored, and the answer's body. */
function submitReadings(ingest: Ingest, principal: Principal, readings: readonly unknown[]) {
  // Chained, not awaited, down to the batch's promise: three async layers fewer took 0.56 µs of 13 from this POST and
  // 0.74 of 7.5 from the ping, per request (`bun bench/hot-path-ab.ts`, 56 pairs, B cheaper in 42 and 49).
  const known = deviceOf(ingest, principal)
  return known instanceof Promise ? known.then((device) => storeReadings(ingest, device, readings)) : storeReadings(ingest, known, readings)
}

function storeReadings(ingest: Ingest, device: DeviceInfo, readings: readonly unknown[]) {
  const parsed = parseBatch(readings, device, Date.now())
  return accept(ingest, device, parsed).then(() => ({ accepted: parsed.readings.length, rejected: parsed.rejected }))
}

/** /sensors/ping: every field but key and ts a channel; any bad field refuses the ping (422). */
function submitPing(ingest: Ingest, request: Request, fields: Record<string, unknown>, where: string): Promise<void> {
  // Not the principal macro: POST /sensors/ping may authenticate in its handler (the key in the body).
  const known = deviceOf(ingest, principalOf(request))
  return known instanceof Promise ? known.then((device) => storePing(ingest, device, fields, where)) : storePing(ingest, known, fields, where)
}

function storePing(ingest: Ingest, device: DeviceInfo, fields: Record<string, unknown>, where: string) {
  const { parsed, problems } = parsePing(fields, device, Date.now(), where)
  if (!parsed) throw new ApiError('validation_failed', PING_REFUSED, { errors: problems })
  return accept(ingest, device, parsed)
}

/** POST /sensors/ping: the body's fields over the query's; a key in the body is admitted here (Pipeline.admitDeferred). */
async function submitPingForm(ingest: Ingest, pipeline: Pipeline, request: Request, query: Record<string, unknown>, body: object | null | undefined) {
  const fields = { ...query, ...(body ?? {}) } as Record<string, unknown>
  await pipeline.admitDeferred(request, typeof fields.key === 'string' ? fields.key : undefined)
  return submitPing(ingest, request, fields, body ? '/body' : '/query')
}

export function ingestRoutes({ ingest }: { ingest: Ingest }, pipeline: Pipeline) {
  return new Elysia({ name: 'ingest', prefix: API_PREFIX })
    .use(principalMacro)
    .post('/sensors/readings', async ({ principal, body, set }) => {
      const answer = await submitReadings(ingest, principal, body.readings)
      set.status = 202
      return answer
    }, {
      principal: true,
      body: ReadingsBatch,
      response: { 202: Accepted },
      detail: op({
        operationId: 'submitReadings',
        summary: 'Submit sensor readings',
        description: `A batch of at most ${MAX_READINGS_PER_BATCH} readings, each \`{ "channel": "t1", "value": 27.5, "ts": "2026-11-21T10:00:00.000Z" }\` (\`ts\` optional: RFC 3339 or epoch milliseconds, default the receive time, at most 5 minutes ahead). Answered 202 once the readings are durable: in the readings store, or, where the service runs with its ingest log (\`INGEST_LOG\`, NATS JetStream), in the log, from which a writer stores them; they are then visible to \`GET /environment/readings\` once the writer has stored them (typically within a second; \`hrs_ingest_log_lag_seconds\` in /metrics). A log acknowledgement survives what the log's stream survives: with one replica, a restart of the NATS server (its disk is synced every 2 minutes unless it runs with \`sync_interval: always\`); with three replicas in a cluster, the loss of a node. A retried batch adds nothing (readings are unique on device, channel and ts). Readings on channels the device has no mapping for are kept with metric and environment null, and the device lists those channels as \`unmapped_channels\`.`,
        tags: ['Sensors'], auth: ['device'], errors: [422, 503],
      }),
    })
    .get('/sensors/ping', async ({ request, query, set }) => {
      await submitPing(ingest, request, query, '/query')
      // A status and no body, rather than a Response: Elysia would copy a returned Response to add our headers.
      set.status = 204
    }, {
      query: PingFields,
      response: { 204: t.Void({ description: 'Stored.' }) },
      detail: op({ operationId: 'submitPing', summary: 'Submit readings from constrained firmware', description: 'Channels and values in the query string: `?key=<device key>&t1=27.5&h1=61`.', tags: ['Sensors'], auth: ['device'], errors: [422, 503], keyParam: 'key' }),
    })
    .post('/sensors/ping', async ({ request, query, body, set }) => {
      await submitPingForm(ingest, pipeline, request, query, body)
      // The response headers were taken before the deferred check counted the key: add its RateLimit headers.
      Object.assign(set.headers, requestState(request).headers)
      set.status = 204
    }, {
      query: PingFields,
      body: t.Optional(PingBody),
      response: { 204: t.Void({ description: 'Stored.' }) },
      detail: op({
        operationId: 'submitPingForm',
        summary: 'Submit readings from constrained firmware', description: 'The same fields as the GET, as a form or JSON body (or in the query string). The device key may be the body\'s `key` field; OpenAPI has no security scheme for that, hence the empty requirement among the alternatives (a request with no key anywhere is a 401).',
        tags: ['Sensors'], auth: ['device'], errors: [422, 503], keyParam: 'key', keyInBody: true, accepts: ['application/x-www-form-urlencoded', 'application/json'],
      }),
    })
}

const NO_CONTENT: HotAnswer = { status: 204 }
const noContent = () => NO_CONTENT
const accepted = (body: unknown): HotAnswer => ({ status: 202, body })

/**
 * The same three routes on Bun.serve's own router (src/http/hot-path.ts): the handlers above, with the routes'
 * declarations (schemas, op()) read from ingestRoutes.
 */
export function ingestHotHandlers({ ingest }: { ingest: Ingest }, pipeline: Pipeline): HotHandlers {
  return {
    [`${API_PREFIX}/sensors/readings`]: {
      POST: ({ request, body }) => submitReadings(ingest, principalOf(request), body.readings).then(accepted),
    },
    [`${API_PREFIX}/sensors/ping`]: {
      GET: ({ request, query }) => submitPing(ingest, request, query, '/query').then(noContent),
      POST: async ({ request, query, body }) => { await submitPingForm(ingest, pipeline, request, query, body); return NO_CONTENT },
    },
  }
}
