// InfluxDB's write endpoints, for the collectors sites already run (Telegraf, Home Assistant, Node-RED, every InfluxDB
// client): v1 `POST /write` and v2 `POST /api/v2/write`, at the root where those clients put them, so a client needs
// only the service's URL and a device key. Each is a door into the ingest path of POST /api/v1/sensors/readings:
// the same device-key check and rate limit, the same readings (line-protocol.ts parses, write.ts maps series to
// channels), the same Ingest.accept (group commit, ingest log, alerts), answered 204 once stored.
// They answer as InfluxDB does, because that is what their clients read: a JSON error body with InfluxDB's members
// (v1 `error`; v2 `code` in InfluxDB's vocabulary and `message`), and beside them this API's problem members
// (`type`, `title`, `status`, `detail`, `request_id`; v1 also our `code`), so one body serves both readers.
import { gunzipSync } from 'node:zlib'
import { Elysia, t } from 'elysia'
import type { Authenticator, Principal } from '../../src/auth/authenticator.ts'
import type { Config } from '../../src/config.ts'
import { authenticate } from '../../src/http/checks/authenticate.ts'
import { MAX_BODY_BYTES, MAX_DISCARDED_BYTES, readBodyBlob } from '../../src/http/checks/body-limits.ts'
import { rateLimitCheck } from '../../src/http/checks/rate-limit.ts'
import { ApiError, problemBody } from '../../src/http/errors.ts'
import { op } from '../../src/http/operation.ts'
import type { Pipeline } from '../../src/http/pipeline.ts'
import type { RateLimiter } from '../../src/http/rate-limit.ts'
import { queryOf } from '../../src/http/request-url.ts'
import { requestState, type RequestState } from '../../src/http/request-state.ts'
import type { Logger } from '../../src/log.ts'
import type { Metrics } from '../../src/observability.ts'
import { isDatabaseUnavailable } from '../../db/unavailable.ts'
import type { PlatformStatusSource } from '../../src/platform.ts'
import { planHasAccess } from '../../src/plans.ts'
import { IngestUnavailable } from '../batcher.ts'
import type { DeviceInfo } from '../devices.ts'
import type { Ingest } from '../index.ts'
import { parseLineProtocol, SeriesCache, V1_PRECISIONS, V2_PRECISIONS, type LineError, type Precision } from './line-protocol.ts'
import { linesToReadings } from './write.ts'

export type InfluxApi = 'v1' | 'v2'
export const INFLUX_V1_WRITE_PATH = '/write'
export const INFLUX_V2_WRITE_PATH = '/api/v2/write'

/**
 * Readings one body may carry: ten times a JSON batch (a Telegraf flush of 1,000 metrics of a few fields each fits),
 * well under what the batcher holds (INGEST_MAX_QUEUED), so one request cannot take ingest's whole capacity.
 */
export const MAX_LINE_READINGS = 50_000
/** Bad lines an error answer names; the count of the rest follows. */
const NAMED_ERRORS = 10

export interface InfluxDeps {
  config: Config
  authenticator: Authenticator
  rateLimiter: RateLimiter
  platform: PlatformStatusSource
  ingest: Ingest
  metrics: Pick<Metrics, 'lineProtocolStringFields' | 'lineProtocolRejectedLines'>
  log: Logger
}

/** InfluxDB 2's error codes (its `errors.go`), by the status we answer. */
const V2_CODES: Record<number, string> = {
  400: 'invalid', 401: 'unauthorized', 403: 'forbidden', 413: 'request too large', 415: 'unsupported media type',
  429: 'too many requests', 500: 'internal error', 503: 'unavailable',
}

/** The one write handler both APIs share; `api` decides only the precisions it takes and its error bodies' shape. */
export function influxWriter(deps: InfluxDeps, api: InfluxApi): (request: Request) => Promise<Response> {
  const countRequest = rateLimitCheck(deps.config, deps.rateLimiter)
  // Series seen before, with their channel keys: a collector writes the same series every interval.
  const series = new SeriesCache()
  const precisions = api === 'v1' ? V1_PRECISIONS : V2_PRECISIONS

  async function admit(state: RequestState, token: string | undefined): Promise<Principal> {
    const principal = await authenticate(deps.authenticator, token)
    state.principal = principal
    await countRequest(state, principal)
    if (principal.kind !== 'device') {
      throw new ApiError('device_key_not_allowed', 'InfluxDB writes take a device key (hrs_dev_…): each device writes its own series, so pair the device (or create it in the console) and send its key as the token or password.')
    }
    if (!planHasAccess(principal.plan, principal.liveTestAllowlisted, deps.platform.current())) {
      throw new ApiError('plan_not_eligible', 'API access needs the Breeder plan or above (or the live-test allowlist while the platform is limited).')
    }
    return principal
  }

  return async (request) => {
    const state = requestState(request)
    try {
      const query = new URLSearchParams(queryOf(request.url))
      const precisionName = query.get('precision') ?? 'ns'
      const precision: Precision | undefined = precisions[precisionName]
      if (!precision) throw new ApiError('invalid_parameter', `precision must be one of ${Object.keys(precisions).join(', ')}.`, { errors: [{ path: '/query/precision', message: `must be one of ${Object.keys(precisions).join(', ')}` }] })
      const principal = await admit(state, credentialsOf(request, query))
      const text = await readLines(request)
      const device = await deviceOf(deps.ingest, principal)
      const lines = parseLineProtocol(text, precision, series)
      const { parsed, errors } = linesToReadings(text, lines, device, Date.now())
      if (parsed.readings.length > MAX_LINE_READINGS) throw new ApiError('payload_too_large', `A body may carry at most ${MAX_LINE_READINGS} readings (numeric fields); this one has ${parsed.readings.length}. Send smaller batches.`)
      if (lines.stringFields) deps.metrics.lineProtocolStringFields.inc([], lines.stringFields)
      if (errors.length) deps.metrics.lineProtocolRejectedLines.inc([], errors.length)
      await deps.ingest.accept(device, parsed).catch(unavailable)
      if (errors.length) throw partialWrite(errors, parsed.readings.length > 0)
      return new Response(null, { status: 204, headers: state.headers })
    } catch (error) {
      return errorAnswer(api, asApiError(error, state, deps.log), state, deps.config.publicUrl)
    }
  }
}

/** What the app's error handler would make of `error` (src/app.ts): ours as is, an unreachable database a 503, else a logged 500. */
function asApiError(error: unknown, state: RequestState, log: Logger): ApiError {
  if (error instanceof ApiError) return error
  if (isDatabaseUnavailable(error)) {
    log.warn('database unavailable', { request_id: state.requestId, error: String((error as Error)?.message ?? error) })
    return new ApiError('service_unavailable', 'The records database is not reachable right now; nothing was stored. Retry shortly.', { headers: { 'retry-after': '5' } })
  }
  log.error('request failed', { request_id: state.requestId, error: String((error as Error)?.stack ?? error) })
  return new ApiError('internal_error', 'Something went wrong on our side; the request id helps us find it.')
}

/**
 * The device key, where InfluxDB clients put a credential: `Authorization: Token <key>` (v2 clients, and 1.x's
 * token auth), `Authorization: Bearer <key>` (this API's own), `Authorization: Basic` with the key as password
 * (1.x clients' username and password), or the `p` query parameter (node-influx's default). The username is not
 * read: name it after the device, or anything.
 */
export function credentialsOf(request: Request, query: URLSearchParams): string | undefined {
  const authorization = request.headers.get('authorization')
  if (authorization !== null) {
    const match = /^(Token|Bearer|Basic)\s+(\S+)\s*$/i.exec(authorization)
    if (!match) throw invalidCredentials('The Authorization header must be "Token <device key>", "Bearer <device key>" or Basic with the device key as password.')
    if (match[1]!.toLowerCase() !== 'basic') return match[2]
    const decoded = Buffer.from(match[2]!, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon === -1) throw invalidCredentials('Basic credentials must be "username:password", the device key as password.')
    return decoded.slice(colon + 1) || undefined
  }
  return query.get('p') ?? undefined
}

const invalidCredentials = (detail: string) => new ApiError('invalid_token', detail, { headers: { 'www-authenticate': 'Token realm="api", Basic realm="api"' } })

async function deviceOf(ingest: Ingest, principal: Principal): Promise<DeviceInfo> {
  const device = principal.deviceId ? await ingest.devices.get(principal.deviceId) : undefined
  // A deleted device's key is revoked, so this is only a race with the deletion.
  if (!device) throw invalidCredentials('This device no longer exists.')
  return device
}

function unavailable(error: unknown): never {
  if (!(error instanceof IngestUnavailable)) throw error
  throw new ApiError('service_unavailable', `${error.message} Nothing from this request was stored; retry it.`, { headers: { 'retry-after': String(error.retryAfterSeconds) } })
}

/** The body as text: at most MAX_BODY_BYTES as sent and, once gunzipped, as text; UTF-8 or refused. */
async function readLines(request: Request): Promise<string> {
  const encoding = (request.headers.get('content-encoding') ?? 'identity').trim().toLowerCase()
  if (encoding !== 'identity' && encoding !== 'gzip') throw new ApiError('unsupported_media_type', 'Content-Encoding may be gzip or identity.', { headers: { 'accept-encoding': 'gzip, identity' } })
  const sent = await readBodyBlob(request, (announced) => tooLarge(undefined, announced))
  if (encoding === 'identity') {
    // Read as text, not through a strict TextDecoder: 0.09 and 0.22 µs less server CPU per reading, a tenth of the
    // whole (100-line bodies, both reads in one server taking turns, bench/lineproto-cpu.ts: cheaper in 8 of 14 and
    // 13 of 18 pairs; request.text() gave 0.08–0.13 less, request.bytes() and a TextDecoder nothing; decoding
    // alone is 0.4 µs per body: what costs is taking the body as bytes). text() makes U+FFFD of what is not UTF-8,
    // so a text holding one is decoded again from the bytes, strictly, to tell an invalid body from one that
    // writes U+FFFD itself.
    const text = await sent.text()
    return text.includes('\uFFFD') ? utf8(await sent.bytes()) : text
  }
  let bytes = await sent.bytes()
  if (bytes.byteLength) {
    try {
      bytes = gunzipSync(bytes, { maxOutputLength: MAX_BODY_BYTES + 1 })
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) throw tooLarge('Once gunzipped, a body may be at most')
      throw new ApiError('invalid_parameter', 'The body is not valid gzip (Content-Encoding: gzip).')
    }
    if (bytes.byteLength > MAX_BODY_BYTES) throw tooLarge('Once gunzipped, a body may be at most')
  }
  return utf8(bytes)
}

function utf8(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes)
  } catch {
    throw new ApiError('invalid_parameter', 'The body is not valid UTF-8; line protocol is UTF-8 text.')
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

const tooLarge = (what = 'Request bodies may be at most', announced?: number) => new ApiError('payload_too_large', `${what} ${MAX_BODY_BYTES} bytes; send smaller batches.`,
  announced !== undefined && announced > MAX_DISCARDED_BYTES ? { headers: { connection: 'close' } } : {})

/** Refused lines, as InfluxDB 1.x words them (`partial write: unable to parse '…': … dropped=N`) plus line numbers. */
function partialWrite(errors: readonly LineError[], stored: boolean): ApiError {
  const named = errors.slice(0, NAMED_ERRORS).map((e) => `unable to parse '${e.text}' (line ${e.line}): ${e.reason}`)
  if (errors.length > NAMED_ERRORS) named.push(`and ${errors.length - NAMED_ERRORS} more`)
  const detail = `${stored ? 'partial write: ' : ''}${named.join('; ')} dropped=${errors.length}`
  return new ApiError('invalid_parameter', detail, { errors: errors.slice(0, 100).map((e) => ({ path: `/body/line/${e.line}`, message: e.reason })) })
}

/** Any refusal in InfluxDB's shape for `api`, with the problem members beside (see the file's head). */
function errorAnswer(api: InfluxApi, apiError: ApiError, state: RequestState, publicUrl: string): Response {
  state.errorStatus = apiError.status
  const problem = problemBody(apiError.code, apiError.detail, state.requestId, publicUrl, apiError.extra.errors, apiError.extra.fields)
  const body = api === 'v1'
    ? { error: apiError.detail, ...problem }
    : { ...problem, code: V2_CODES[apiError.status] ?? 'invalid', message: apiError.detail, problem_code: apiError.code }
  return new Response(JSON.stringify(body), { status: apiError.status, headers: { ...state.headers, ...apiError.extra.headers, 'content-type': 'application/json; charset=utf-8' } })
}

// ——— Routes ———

/**
 * The app's steps for a request outside /api/v1 on Bun's own router (as src/http/hot-path.ts does for the JSON
 * ingest routes): the pipeline's checks for any path (request id, Host), the handler, the access log line.
 */
export interface InfluxRouteDeps {
  pipeline: Pipeline
  record(method: string, route: string, status: number, state: RequestState): void
}

/** Both write endpoints on Bun.serve's routes: `{ '/write': { POST }, '/api/v2/write': { POST } }`. */
export function influxBunRoutes(deps: InfluxDeps, app: InfluxRouteDeps) {
  const routes: Record<string, Record<string, (request: Request) => Promise<Response>>> = {}
  for (const [path, api] of [[INFLUX_V1_WRITE_PATH, 'v1'], [INFLUX_V2_WRITE_PATH, 'v2']] as const) {
    const write = influxWriter(deps, api)
    routes[path] = {
      POST: async (request) => {
        const state = requestState(request)
        let response: Response
        try {
          await app.pipeline.run(request)
          response = await write(request)
        } catch (error) {
          response = errorAnswer(api, asApiError(error, state, deps.log), state, deps.config.publicUrl)
        }
        app.record('POST', path, response.status, state)
        return response
      },
    }
  }
  return routes
}

const V1Error = t.Object({
  error: t.String({ description: 'What InfluxDB 1.x clients read: the reason, e.g. `partial write: unable to parse \'cpu v=1 abc\' (line 2): invalid timestamp "abc" dropped=1`.' }),
}, { additionalProperties: true, description: 'InfluxDB 1.x\'s error body, with this API\'s problem members beside `error` (`type`, `title`, `status`, `detail`, `code`, `request_id`, `errors` naming each refused line as `/body/line/N`). Sent as `application/json`, as InfluxDB does.' })
const V2Error = t.Object({
  code: t.String({ description: 'InfluxDB 2\'s code: `invalid`, `unauthorized`, `forbidden`, `request too large`, `unsupported media type`, `too many requests`, `unavailable`, `internal error`.' }),
  message: t.String(),
}, { additionalProperties: true, description: 'InfluxDB 2\'s error body, with this API\'s problem members beside `code` and `message` (`type`, `title`, `status`, `detail`, `request_id`, `errors`; our own code as `problem_code`, since `code` is InfluxDB\'s). Sent as `application/json`, as InfluxDB does.' })

function errorResponses(schema: typeof V1Error | typeof V2Error) {
  const with_ = (description: string) => ({ ...schema, description })
  return {
    400: with_('Lines that break the grammar, or whose timestamp lies before 2000 or more than 5 minutes ahead; a bad `precision`; a body that is not UTF-8 or not gzip. Every other line of the body was stored (InfluxDB 1.x\'s partial write): the answer names up to 10 refused lines with their line numbers, and `dropped=N`. A client retrying it changes nothing: readings are unique on device, channel and ts.'),
    401: with_('No device key, or a malformed, unknown, revoked or expired one.'),
    403: with_('A personal token (these endpoints take a device key), or an account whose plan has no API access.'),
    413: with_(`The body is over ${MAX_BODY_BYTES} bytes as sent or once gunzipped, or carries over ${MAX_LINE_READINGS} readings.`),
    415: with_('A Content-Encoding other than gzip or identity.'),
    429: with_('Over the device key\'s rate limit (the same count as POST /api/v1/sensors/readings); Retry-After says when to retry.'),
    503: with_('The readings store (or ingest log) cannot take the readings now; nothing was stored; Retry-After says when to retry.'),
  }
}

const ABOUT = `Line protocol, one point per line: \`measurement[,tag=value…] field=value[,field=value…] [timestamp]\` (InfluxDB's grammar: escapes, \`i\` and \`u\` integers, \`t/f/true/false\` booleans, quoted strings, comments, blank lines, CRLF), at most ${MAX_BODY_BYTES} bytes as sent and once gunzipped (\`Content-Encoding: gzip\` is taken) and ${MAX_LINE_READINGS} readings; any Content-Type.

**Device key**: as \`Authorization: Token <key>\`, \`Authorization: Bearer <key>\`, HTTP Basic with the key as password (the username is not read), or the \`p\` query parameter. The device's account and rate limit apply as on POST /api/v1/sensors/readings.

**Series and channels**: each numeric or boolean field of a series (measurement, tag set, field) is a reading on one channel of the device. The channel is \`measurement.field\` when the series has no tags and both names are \`A–Z a–z 0–9 _ -\` within 32 characters; otherwise a readable prefix (measurement, tag values in key order, field; other characters as \`_\`, cut to 21) then \`..\` and 9 characters of the SHA-256 of the exact series, e.g. \`_C.sensor.living_room..0ShN8t4BZ\` for Home Assistant's \`°C,domain=sensor,entity_id=living_room value=21.5\`. A new series is an unmapped channel (listed in the device's \`unmapped_channels\`, its readings kept), mapped to a metric and environment like any channel. Booleans are 1 and 0; integers are kept as floats. String fields are not readings and not errors (Home Assistant sends attributes as strings beside \`value\`): they are skipped and counted in /metrics (\`hrs_line_protocol_string_fields_total\`).

**Timestamps**: in \`precision\` units (default nanoseconds), kept to the millisecond; a line without one takes the receive time. A series written twice at one millisecond in a body keeps the later value.

**Answers**: 204 once every reading is durable (as POST /api/v1/sensors/readings' 202: in the store, or in the ingest log). Bad lines do not cost the good ones: the good lines are stored, and the answer is 400 naming the bad ones (InfluxDB 1.x's partial write), which InfluxDB clients report and do not retry. Errors are InfluxDB's JSON bodies, which their clients read, with this API's problem members beside.`

/**
 * The two endpoints as Elysia routes, answered by the same handlers as on Bun's router (`influxBunRoutes`): for the
 * OpenAPI document and app.handle(). The app registers them before its own parse hook, which reads JSON bodies.
 */
export function influxRoutes(handlers: ReturnType<typeof influxBunRoutes>) {
  const v1 = handlers[INFLUX_V1_WRITE_PATH]!.POST!
  const v2 = handlers[INFLUX_V2_WRITE_PATH]!.POST!
  // The pipeline checks keys on /api/v1 only: on these paths the handler checks the device key itself, in the places
  // InfluxDB clients send it (the security listed here instead of op()'s).
  const security: Record<string, string[]>[] = [{ influxToken: [] }, { influxBasic: [] }, { influxPasswordQuery: [] }, { deviceKey: [] }]
  return new Elysia({ name: 'influx-write' })
    .post(INFLUX_V1_WRITE_PATH, ({ request }) => v1(request), {
      parse: 'none',
      query: t.Object({
        db: t.Optional(t.String({ description: 'Accepted and not read: the device key decides the account and device.' })),
        rp: t.Optional(t.String({ description: 'Accepted and not read: retention follows the account.' })),
        precision: t.Optional(t.String({ description: `The timestamps' unit: ${Object.keys(V1_PRECISIONS).map((p) => `\`${p}\``).join(', ')} (default \`ns\`).` })),
        u: t.Optional(t.String({ description: 'Username: not read.' })),
        p: t.Optional(t.String({ description: 'The device key, for clients that send credentials in the query (kept out of logs).' })),
        consistency: t.Optional(t.String({ description: 'Accepted and not read.' })),
      }, { additionalProperties: true }),
      response: { 204: t.Void({ description: 'Every line stored.' }), ...errorResponses(V1Error) },
      detail: { ...op({ operationId: 'influxV1Write', summary: 'Write line protocol (InfluxDB 1.x API)', description: ABOUT, tags: ['Sensors'], auth: ['device'], accepts: ['text/plain'] }), security },
    })
    .post(INFLUX_V2_WRITE_PATH, ({ request }) => v2(request), {
      parse: 'none',
      query: t.Object({
        org: t.Optional(t.String({ description: 'Accepted and not read: the device key decides the account.' })),
        orgID: t.Optional(t.String({ description: 'Accepted and not read.' })),
        bucket: t.Optional(t.String({ description: 'Accepted and not read: the device key decides the device.' })),
        precision: t.Optional(t.String({ description: `The timestamps' unit: ${Object.keys(V2_PRECISIONS).map((p) => `\`${p}\``).join(', ')} (default \`ns\`).` })),
      }, { additionalProperties: true }),
      response: { 204: t.Void({ description: 'Every line stored.' }), ...errorResponses(V2Error) },
      detail: { ...op({ operationId: 'influxV2Write', summary: 'Write line protocol (InfluxDB 2.x API)', description: ABOUT, tags: ['Sensors'], auth: ['device'], accepts: ['text/plain'] }), security },
    })
}
