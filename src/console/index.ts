// The web console at /console: a person signs in with a personal key holding `keys:write`, manages the account's
// keys (the reference's "profile page, API tab") and finishes device pairings at the pairing verification_uri
// (RFC 8628 §3.3). Server-rendered HTML with one stylesheet and one small script of its own; no CDN.
// It sits outside /api/v1, so the API pipeline passes it by and the OpenAPI document leaves it out (hide).
// Every change goes through the services the API uses (keys.ts, the sensors service), never a copy of them.
import { Value } from '@sinclair/typebox/value'
import { and, count, eq, isNull } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { animals, environments, sensorDevices } from '../../db/schema/index.ts'
import { getAccount } from '../accounts.ts'
import { createKey, findKeyById, listKeys, maskedToken, revokeKeyEverywhere, type KeyRow } from '../auth/keys.ts'
import { isScope, type Scope } from '../auth/scopes.ts'
import { isLoopbackHost } from '../config.ts'
import type { Deps } from '../deps.ts'
import { ApiError, type FieldError } from '../http/errors.ts'
import { isId } from '../ids.ts'
import { planHasAccess, rateLimitFor } from '../plans.ts'
import { DeviceCreate } from '../modules/sensors/index.ts'
import { createDevice, getDevice, listDevices, presentDevice } from '../modules/sensors/service.ts'
import { ASSET_PATH, CONSOLE_CSS, CONSOLE_JS, CONSOLE_PATH, FAVICON_SVG, Html, html, notice, page, type Frame } from './html.ts'
import { activateBody, devicesBody, deviceBody, errorBody, keysBody, lineProtocolSnippets, pairedBody, readingsChart, signInBody, unmappedChannels, type ChannelRowInput } from './pages.ts'
import { pathAndQueryOf } from '../http/request-url.ts'
import { openStream, readingEvent } from '../streams/routes.ts'
import {
  SESSION_COOKIE, SESSION_TTL_MS, SIGN_IN_COOKIE, clearCookie, cookieOf, createSession, endSession, randomToken,
  readSession, sameToken, setCookie, type Session,
} from './session.ts'

/** Who is looking: a live session whose key is still live, still holds keys:write, and whose plan reaches the API. */
interface Viewer { sessionId: string; session: Session; key: KeyRow; accountName: string }

const KEYS_SCOPE: Scope = 'keys:write'
const PAIR_SCOPE: Scope = 'sensors:write'
/**
 * Each page shows what API routes show, so it asks for their scopes (issue 55: a keys:write-only key saw every
 * device and its readings here while the API answered it 403): devices as GET /sensors/devices, readings as GET
 * /environment/readings, environment names as GET /environment/environments, animal counts as GET /animals.
 */
const DEVICES_SCOPE: Scope = 'sensors:read'
const READINGS_SCOPE: Scope = 'environment:read'
const ENVIRONMENTS_SCOPE: Scope = 'environment:read'
const ANIMALS_SCOPE: Scope = 'animals:read'
const holds = (viewer: Viewer, scope: Scope) => viewer.key.scopes.includes(scope)
const CHANNEL_ROWS = 4
const SIGN_IN_FORM_TTL_MS = 30 * 60 * 1000
/** Pages may load only what the console serves itself; inline SVG needs nothing more. */
const CSP = "default-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'"

type Form = Record<string, string | undefined>
/** The posted fields that are text: a form sends nothing else, and anything else is ignored rather than trusted. */
const formOf = (body: unknown): Form =>
  Object.fromEntries(Object.entries(body !== null && typeof body === 'object' ? body : {}).filter(([, value]) => typeof value === 'string'))
type Reply = { set: { status?: number | string; headers: Record<string, any> } }
/** What the console's handlers use of Elysia's context. */
type Ctx = Reply & { request: Request; body?: unknown; query: Record<string, string | undefined>; params: Record<string, string> }

function respond({ set }: Reply, frame: Frame, status = 200): string {
  set.status = status
  set.headers['content-type'] = 'text/html; charset=utf-8'
  set.headers['cache-control'] = 'no-store'
  set.headers['content-security-policy'] = CSP
  set.headers['referrer-policy'] = 'same-origin'
  return page(frame)
}

function redirect({ set }: Reply, location: string, cookie?: string): string {
  set.status = 303
  set.headers.location = location
  if (cookie) set.headers['set-cookie'] = cookie
  return ''
}

/** Only console paths: `next` must never send a person elsewhere after signing in. */
const safeNext = (next: string | undefined) => (next && /^\/console(\/[A-Za-z0-9_\-/]*)?(\?[A-Za-z0-9_\-=&%.]*)?$/.test(next) ? next : `${CONSOLE_PATH}/keys`)

const pathAndQuery = (request: Request) => pathAndQueryOf(request.url)

export function consoleModule(deps: Deps) {
  const db = deps.database.db

  async function viewerOf(request: Request): Promise<Viewer | undefined> {
    const sessionId = cookieOf(request, SESSION_COOKIE)
    const session = await readSession(deps.shared, sessionId)
    if (!session) return undefined
    const key = await findKeyById(db, session.keyId)
    const live = key && key.accountId === session.accountId && !key.revokedAt && (!key.expiresAt || key.expiresAt.getTime() > Date.now())
    if (!live || !key.scopes.includes(KEYS_SCOPE)) return undefined
    const account = await getAccount(db, session.accountId)
    // The API's plan check, as at sign-in: a plan that loses API access ends its console sessions too.
    if (!account || !planHasAccess(account.plan, account.liveTestAllowlisted, deps.platform.current())) return undefined
    return { sessionId: sessionId!, session, key, accountName: account.name }
  }

  /**
   * Where to send a person who asked for a page by another loopback name than PUBLIC_URL's default (localhost for
   * 127.0.0.1): a cookie belongs to one host name, so one signed in at one name was asked to sign in again on
   * following a pairing link at the other. Only while PUBLIC_URL is unset, which the config allows on loopback only;
   * the Host decides whether to move, never where to: the place is publicUrl.
   */
  const canonicalLocation = (request: Request): string | undefined => {
    const host = request.headers.get('host')?.toLowerCase()
    if (!deps.config.publicUrlIsLoopbackDefault || !host || (request.method !== 'GET' && request.method !== 'HEAD')) return undefined
    if (host === new URL(deps.config.publicUrl).host || !isLoopbackHost(host.replace(/:\d+$/, ''))) return undefined
    return deps.config.publicUrl + pathAndQuery(request)
  }

  /** Runs `handle` for a signed-in person; anyone else is sent to sign in and comes back here afterwards. */
  const signedIn = (handle: (c: Ctx, viewer: Viewer) => Promise<string> | string) => async (c: Ctx) => {
    const canonical = canonicalLocation(c.request)
    if (canonical) return redirect(c, canonical)
    const viewer = await viewerOf(c.request)
    if (!viewer) {
      const back = c.request.method === 'GET' ? pathAndQuery(c.request) : `${CONSOLE_PATH}/keys`
      return redirect(c, `${CONSOLE_PATH}/sign-in?next=${encodeURIComponent(back)}`, clearCookie(c.request, deps.config.publicUrl, SESSION_COOKIE))
    }
    return handle(c, viewer)
  }

  /** A form that does not carry this session's token changes nothing. */
  const withCsrf = (handle: (c: Ctx, viewer: Viewer, form: Form) => Promise<string> | string) =>
    signedIn((c, viewer) => {
      const form = formOf(c.body)
      if (!sameToken(form.csrf, viewer.session.csrf)) {
        return respond(c, { title: 'Form expired', nav: nav(viewer, 'keys'), body: errorBody('This form did not come from your current session (it may be from before you signed in again). Nothing was changed; reload the page and try again.') }, 403)
      }
      return handle(c, viewer, form)
    })

  /** The menu offers only the pages the signed-in key may see. */
  const nav = (viewer: Viewer, active: 'keys' | 'devices' | 'activate') => ({
    active, accountName: viewer.accountName, csrf: viewer.session.csrf,
    offers: { devices: holds(viewer, DEVICES_SCOPE), activate: holds(viewer, PAIR_SCOPE) },
  })

  /** A page whose data the key may not read: 403, saying which scope it lacks, and nothing of the data. */
  const lacking = (c: Reply, viewer: Viewer, scope: Scope, what: string, active: 'keys' | 'devices' | 'activate') =>
    respond(c, { title: 'Not allowed', nav: nav(viewer, active), body: errorBody(`Your key lacks the ${scope} scope, which ${what} needs (as the API's own route does).`) }, 403)

  async function keysPage(c: Reply, viewer: Viewer, extra: { created?: { key: KeyRow; token: string }; message?: Html; form?: { name?: string; scopes?: readonly string[]; expiresOn?: string } } = {}, status = 200) {
    const accountId = viewer.session.accountId
    // Counts only of what the key may read; the others are not even asked.
    const countOf = async (scope: Scope, table: typeof animals | typeof sensorDevices) => holds(viewer, scope)
      ? (await db.select({ n: count() }).from(table).where(and(eq(table.account_id, accountId), isNull(table.deleted_at))))[0]?.n ?? 0
      : undefined
    const [account, keys, animalCount, deviceCount] = await Promise.all([
      getAccount(db, accountId), listKeys(db, accountId), countOf(ANIMALS_SCOPE, animals), countOf(DEVICES_SCOPE, sensorDevices),
    ])
    const personal = keys.filter((k) => k.kind === 'personal')
    const now = Date.now()
    const facts = {
      account: account!, apiAccess: planHasAccess(account!.plan, account!.liveTestAllowlisted, deps.platform.current()),
      personalLimit: rateLimitFor(deps.config, account!.plan, 'personal'), deviceLimit: rateLimitFor(deps.config, account!.plan, 'device'),
      windowSeconds: deps.config.rateLimitWindowSeconds,
      usage: { activeKeys: personal.filter((k) => !k.revokedAt && (!k.expiresAt || k.expiresAt.getTime() > now)).length, devices: deviceCount, animals: animalCount },
    }
    return respond(c, {
      title: 'API keys', nav: nav(viewer, 'keys'),
      body: keysBody({ csrf: viewer.session.csrf, keys: personal, held: viewer.key.scopes, facts, signedInKeyId: viewer.key.id, ...extra }),
    }, status)
  }

  const environmentsOf = (accountId: string) => db.select({ id: environments.id, name: environments.name, parent_id: environments.parent_id }).from(environments)
    .where(eq(environments.account_id, accountId)).orderBy(environments.name)

  async function activatePage(c: Reply, viewer: Viewer, input: { userCode: string; name: string; channels: ChannelRowInput[]; errors?: FieldError[]; error?: string }, status = 200) {
    // Environment names only to a key that may pair and read them; otherwise the page offers no environment picker.
    const places = holds(viewer, PAIR_SCOPE) && holds(viewer, ENVIRONMENTS_SCOPE) ? await environmentsOf(viewer.session.accountId) : undefined
    const channels = [...input.channels, ...Array.from({ length: CHANNEL_ROWS }, () => ({ key: '', metric: '', environment_id: '' }))].slice(0, Math.max(CHANNEL_ROWS, input.channels.length))
    return respond(c, {
      title: 'Activate a device', nav: nav(viewer, 'activate'),
      body: activateBody({ csrf: viewer.session.csrf, ...input, channels, environments: places, canPair: holds(viewer, PAIR_SCOPE) }),
    }, status)
  }

  return new Elysia({ name: 'console' })
    .get(`${ASSET_PATH}/console.css`, ({ set }) => { set.headers['content-type'] = 'text/css; charset=utf-8'; return CONSOLE_CSS }, { detail: { hide: true } })
    .get(`${ASSET_PATH}/favicon.svg`, ({ set }) => { set.headers['content-type'] = 'image/svg+xml'; set.headers['cache-control'] = 'public, max-age=86400'; return FAVICON_SVG }, { detail: { hide: true } })
    .get(`${ASSET_PATH}/console.js`, ({ set }) => { set.headers['content-type'] = 'text/javascript; charset=utf-8'; return CONSOLE_JS }, { detail: { hide: true } })
    .get(CONSOLE_PATH, (c) => redirect(c, `${CONSOLE_PATH}/keys`), { detail: { hide: true } })

    .get(`${CONSOLE_PATH}/sign-in`, async (c) => {
      const canonical = canonicalLocation(c.request)
      if (canonical) return redirect(c, canonical)
      if (await viewerOf(c.request)) return redirect(c, safeNext(c.query.next))
      const csrf = cookieOf(c.request, SIGN_IN_COOKIE) ?? randomToken()
      c.set.headers['set-cookie'] = setCookie(c.request, deps.config.publicUrl, SIGN_IN_COOKIE, csrf, SIGN_IN_FORM_TTL_MS)
      return respond(c, { title: 'Sign in', body: signInBody({ csrf, next: safeNext(c.query.next) }) })
    }, { query: t.Object({ next: t.Optional(t.String()) }), detail: { hide: true } })

    .post(`${CONSOLE_PATH}/sign-in`, async (c) => {
      const form = formOf(c.body)
      const csrf = cookieOf(c.request, SIGN_IN_COOKIE)
      const again = (status: number, error: string) => {
        const fresh = csrf ?? randomToken()
        c.set.headers['set-cookie'] = setCookie(c.request, deps.config.publicUrl, SIGN_IN_COOKIE, fresh, SIGN_IN_FORM_TTL_MS)
        return respond(c, { title: 'Sign in', body: signInBody({ csrf: fresh, next: safeNext(form.next), error }) }, status)
      }
      if (!sameToken(form.csrf, csrf)) return again(403, 'The sign-in form expired or did not come from this console. Nothing was done; try again.')
      const principal = form.token ? await deps.authenticator.verify(form.token.trim()) : undefined
      if (!principal || principal.kind !== 'personal') return again(401, 'That key is unknown, revoked or expired (or is a device key).')
      if (!principal.scopes.includes(KEYS_SCOPE)) return again(403, `That key lacks the ${KEYS_SCOPE} scope, which the console needs.`)
      // The API's own plan check (CONTRACT §2's order: the plan before the scope would be asked of a request).
      if (!planHasAccess(principal.plan, principal.liveTestAllowlisted, deps.platform.current())) {
        return again(403, 'This account\'s plan does not include API access (the Breeder plan or above), so it cannot manage keys or devices.')
      }
      // Signing in again ends the session this browser had, rather than leaving it alive beside the new one.
      await endSession(deps.shared, cookieOf(c.request, SESSION_COOKIE))
      const { id } = await createSession(deps.shared, { accountId: principal.accountId, keyId: principal.keyId })
      return redirect(c, safeNext(form.next), setCookie(c.request, deps.config.publicUrl, SESSION_COOKIE, id, SESSION_TTL_MS))
    }, { detail: { hide: true } })

    .post(`${CONSOLE_PATH}/sign-out`, withCsrf(async (c, viewer) => {
      await endSession(deps.shared, viewer.sessionId)
      return redirect(c, `${CONSOLE_PATH}/sign-in`, clearCookie(c.request, deps.config.publicUrl, SESSION_COOKIE))
    }), { detail: { hide: true } })

    .get(`${CONSOLE_PATH}/keys`, signedIn(async (c, viewer) => {
      // The notice comes from the key's own row, never from the query's text: only a revoked key of this account shows.
      const id = c.query.revoked
      const key = id && isId('key', id) ? await findKeyById(db, id) : undefined
      const revoked = key && key.accountId === viewer.session.accountId && key.kind === 'personal' && key.revokedAt ? key : undefined
      return keysPage(c, viewer, revoked ? { message: notice('ok', html`Key <strong>${revoked.name}</strong> (<code>${maskedToken(revoked)}</code>) revoked; every server refuses it now.`) } : {})
    }), { query: t.Object({ revoked: t.Optional(t.String()) }), detail: { hide: true } })

    .post(`${CONSOLE_PATH}/keys`, withCsrf(async (c, viewer, form) => {
      const name = (form.name ?? '').trim()
      const scopes = Object.keys(form).filter((field) => field.startsWith('scope:') && form[field]).map((field) => field.slice('scope:'.length))
      const expiresOn = form.expires_on ?? ''
      const again = (status: number, message: string) => keysPage(c, viewer, { message: notice('error', message), form: { name, scopes, expiresOn } }, status)
      if (!name || name.length > 100) return again(422, 'Give the key a name (at most 100 characters).')
      if (!scopes.length) return again(422, 'Tick at least one scope.')
      const unknown = scopes.filter((s) => !isScope(s))
      if (unknown.length) return again(422, `Unknown scope: ${unknown.join(', ')}.`)
      // A key can never hand out more than it holds, whatever the form sent.
      const beyond = scopes.filter((s) => !viewer.key.scopes.includes(s))
      if (beyond.length) return again(403, `Your key does not hold ${beyond.join(', ')}, so it cannot grant it.`)
      let expiresAt: Date | null = null
      if (expiresOn) {
        expiresAt = /^\d{4}-\d{2}-\d{2}$/.test(expiresOn) ? new Date(`${expiresOn}T23:59:59.999Z`) : new Date(NaN)
        if (Number.isNaN(expiresAt.getTime()) || expiresAt.getTime() <= Date.now()) return again(422, 'The expiry date must be a date from today on.')
      }
      const created = await createKey(db, { accountId: viewer.session.accountId, kind: 'personal', name, scopes: scopes as Scope[], expiresAt })
      return keysPage(c, viewer, { created }, 201)
    }), { detail: { hide: true } })

    .post(`${CONSOLE_PATH}/keys/:id/revoke`, withCsrf(async (c, viewer) => {
      const id = c.params.id ?? ''
      const key = isId('key', id) ? await findKeyById(db, id) : undefined
      // Another account's key is as absent as one that never existed; device keys go with their device.
      if (!key || key.accountId !== viewer.session.accountId || key.kind !== 'personal') {
        return respond(c, { title: 'No such key', nav: nav(viewer, 'keys'), body: errorBody('This account has no such personal key.') }, 404)
      }
      await revokeKeyEverywhere(db, deps.authenticator, key.id)
      return redirect(c, `${CONSOLE_PATH}/keys?revoked=${encodeURIComponent(key.id)}`)
    }), { params: t.Object({ id: t.String() }), detail: { hide: true } })

    .get(`${CONSOLE_PATH}/activate`, signedIn((c, viewer) =>
      activatePage(c, viewer, { userCode: c.query.user_code ?? '', name: '', channels: [] })), { query: t.Object({ user_code: t.Optional(t.String()) }), detail: { hide: true } })

    .post(`${CONSOLE_PATH}/activate`, withCsrf(async (c, viewer, form) => {
      const userCode = (form.user_code ?? '').trim()
      const name = (form.name ?? '').trim()
      const rows: ChannelRowInput[] = []
      for (let i = 0; form[`channel.${i}.key`] !== undefined; i++) {
        rows.push({ key: (form[`channel.${i}.key`] ?? '').trim(), metric: form[`channel.${i}.metric`] ?? '', environment_id: form[`channel.${i}.environment_id`] ?? '' })
      }
      const again = (status: number, problem: { errors?: FieldError[]; error?: string }) => activatePage(c, viewer, { userCode, name, channels: rows, ...problem }, status)
      if (!viewer.key.scopes.includes(PAIR_SCOPE)) return again(403, { error: `Your key lacks the ${PAIR_SCOPE} scope, which pairing a device needs.` })
      const input = {
        claim_code: userCode, ...(name ? { name } : {}),
        channels: rows.filter((r) => r.key).map((r) => ({ key: r.key, metric: r.metric || null, environment_id: r.environment_id || null })),
      }
      // The API's own request schema checks the form, so both ways in accept the same devices.
      const schemaErrors = [...Value.Errors(DeviceCreate, input)].map((e) => ({ path: `/body${e.path}`, message: e.message }))
      if (schemaErrors.length) return again(422, { errors: schemaErrors })
      try {
        const { row } = await createDevice(deps, viewer.session.accountId, input)
        return respond(c, { title: 'Device paired', nav: nav(viewer, 'activate'), body: pairedBody(row) })
      } catch (error) {
        if (!(error instanceof ApiError) || error.status >= 500) throw error
        return again(error.status, error.extra.errors?.length ? { errors: error.extra.errors } : { error: error.detail })
      }
    }), { detail: { hide: true } })

    .get(`${CONSOLE_PATH}/devices`, signedIn(async (c, viewer) => {
      if (!holds(viewer, DEVICES_SCOPE)) return lacking(c, viewer, DEVICES_SCOPE, 'listing devices', 'devices')
      const page = await listDevices(deps, viewer.session.accountId, { limit: 200 })
      return respond(c, { title: 'Devices', nav: nav(viewer, 'devices'), body: devicesBody(page.data) })
    }), { detail: { hide: true } })

    .get(`${CONSOLE_PATH}/devices/:id`, signedIn(async (c, viewer) => {
      if (!holds(viewer, DEVICES_SCOPE)) return lacking(c, viewer, DEVICES_SCOPE, 'a device\'s page', 'devices')
      const id = c.params.id ?? ''
      // A sighting this process has not written back yet (once a second) is newer than the row's: right after a
      // device's first readings, the page said "never" for up to a second. Asked before the row is read: a
      // write-back that finishes in between then shows in the row, where asking after the read missed both.
      const pending = deps.ingest.devices.pendingLastSeen(id)
      const row = isId('device', id) ? await getDevice(db, viewer.session.accountId, id) : undefined
      if (!row) return respond(c, { title: 'No such device', nav: nav(viewer, 'devices'), body: errorBody('This account has no such device.') }, 404)
      const now = Date.now()
      const window = { from: now - 24 * 3600 * 1000, to: now }
      // Quarter-hour averages of the last day: at most 96 points per channel, however often the device reports.
      const points = holds(viewer, READINGS_SCOPE)
        ? (await deps.readings.buckets({ accountId: viewer.session.accountId, deviceId: row.id, from: window.from, to: now + 5 * 60 * 1000 }, { interval: '15m', aggregates: ['avg'], groupBy: 'series' }, 2000))
          .map((b) => ({ ts: b.ts, channel: b.channel!, metric: b.metric, value: b.avg! }))
        : []
      // Without environment:read a channel shows its environment's id, as GET /sensors/devices/{id} does, not its name.
      const places = new Map(holds(viewer, ENVIRONMENTS_SCOPE) ? (await environmentsOf(viewer.session.accountId)).map((e) => [e.id, e.name]) : [])
      const seen = pending !== undefined && (!row.last_seen_at || row.last_seen_at.getTime() < pending) ? { ...row, last_seen_at: new Date(pending) } : row
      const device = presentDevice(seen)
      // The header and the charts read the same list, so neither lags the other.
      const unmapped = unmappedChannels(device, points)
      const chart = holds(viewer, READINGS_SCOPE) ? readingsChart(points, window, unmapped) : notice('error', html`Your key lacks the <code>${READINGS_SCOPE}</code> scope, which readings need.`)
      return respond(c, { title: row.name, nav: nav(viewer, 'devices'), body: deviceBody({ ...device, unmapped_channels: unmapped }, places, chart, lineProtocolSnippets(deps.config.publicUrl), holds(viewer, READINGS_SCOPE)) })
    }), { params: t.Object({ id: t.String() }), detail: { hide: true } })

    // The device page's live readings (src/streams/): the session's cookie admits it, as EventSource sends no key; the
    // same scopes as the page's readings, the account's stream limit, and it ends when the session's key is revoked.
    .get(`${CONSOLE_PATH}/devices/:id/stream`, async ({ request, params }) => {
      const viewer = await viewerOf(request)
      if (!viewer || !holds(viewer, DEVICES_SCOPE) || !holds(viewer, READINGS_SCOPE)) return new Response('Sign in with a key holding sensors:read and environment:read.', { status: 401, headers: { 'content-type': 'text/plain; charset=utf-8' } })
      const accountId = viewer.session.accountId
      if (!isId('device', params.id) || !(await getDevice(db, accountId, params.id))) return new Response('No such device.', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } })
      const { sse, onEnd } = openStream(deps, { accountId, tokenHash: viewer.key.tokenHash, stillValid: async () => (await viewerOf(request)) !== undefined }, request)
      onEnd(deps.streams.subscribe({ accountId, filter: { deviceId: params.id }, deliver: (readings) => { for (const r of readings) if (!sse.send(readingEvent(r))) return } }))
      return sse.response
    }, { params: t.Object({ id: t.String() }), detail: { hide: true } })
}
