import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import { ApiError, ERROR_HELP, ERROR_PAGES_PATH, ERRORS, type ErrorCode } from '../../http/errors.ts'
import { op } from '../../http/operation.ts'
import { API_PREFIX } from '../../http/pipeline.ts'
import { API_VERSION, RELEASE_DATE } from '../../platform.ts'
import type { BackendHealth } from './backend-health.ts'

/** Redis only accelerates (kv/fallback.ts): the service serves without it, so only the database decides readiness. */
const isRequired = (backend: string) => backend !== 'redis'

const StatusBody = t.Object({
  status: t.Union([t.Literal('operational'), t.Literal('limited'), t.Literal('degraded')], {
    description: '`limited`: access is restricted to Breeder+ plans and the live-test allowlist; `degraded`: a backing store is down.',
  }),
  version: t.String({ examples: [API_VERSION] }),
  release_date: t.String({ format: 'date' }),
})

const ERROR_CODES = Object.keys(ERRORS) as [ErrorCode, ...ErrorCode[]]

const ErrorType = t.Object({
  code: t.String({ examples: ['validation_failed'] }),
  status: t.Integer({ description: 'The HTTP status problems of this type carry.' }),
  title: t.String(),
  description: t.String({ description: 'What the error means and what to do about it (Markdown).' }),
}, { $id: '#/components/schemas/ErrorType' })

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The page a person reaches by following a problem's `type` in a browser. */
function errorPage(code: ErrorCode): string {
  const { status, title } = ERRORS[code]
  const help = escapeHtml(ERROR_HELP[code]).replace(/`([^`]+)`/g, '<code>$1</code>')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${status} ${escapeHtml(title)} · API errors</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5">
<h1>${escapeHtml(title)}</h1>
<p>HTTP ${status} · code <code>${code}</code></p>
<p>${help}</p>
<p>Every error is an RFC 9457 <code>application/problem+json</code> body with this page as its <code>type</code>.
See the <a href="/api/v1/docs">API reference</a>.</p>
</body></html>`
}

const Checks = t.Record(t.String(), t.Union([t.Literal('ok'), t.Literal('down')]))

export function platformModule(deps: Deps, health: BackendHealth) {
  return new Elysia({ name: 'platform' })
    .get(`${ERROR_PAGES_PATH}/:code`, ({ params, request, set }) => {
      const code = params.code as ErrorCode
      set.headers.vary = 'accept'
      // A browser following a problem's `type` gets a page; a client gets the same as JSON.
      if (/\btext\/html\b/.test(request.headers.get('accept') ?? '')) {
        return new Response(errorPage(code), { headers: { 'content-type': 'text/html; charset=utf-8', vary: 'accept' } }) as never
      }
      return { code, status: ERRORS[code].status, title: ERRORS[code].title, description: ERROR_HELP[code] }
    }, {
      params: t.Object({ code: t.UnionEnum(ERROR_CODES, { description: 'An error `code`.' }) }),
      response: { 200: ErrorType },
      detail: op({
        operationId: 'getErrorType',
        summary: 'What an error code means',
        description: 'Every problem\'s `type` is this URL for its `code`, absolute on the service\'s configured public URL (`PUBLIC_URL`); request headers (Host, X-Forwarded-*) never choose it. Public. Answers HTML to a browser (`Accept: text/html`), this JSON otherwise.',
        tags: ['Platform'], auth: 'public', errors: [404],
      }),
    })
    .get(`${API_PREFIX}/status`, async () => {
      const checks = await health.current()
      const degraded = Object.values(checks).includes('down')
      return { status: degraded ? 'degraded' as const : deps.platform.current(), version: API_VERSION, release_date: RELEASE_DATE }
    }, {
      response: { 200: StatusBody },
      detail: op({ operationId: 'getStatus', summary: 'API status', tags: ['Platform'], auth: 'public', description: 'Public. Reports `limited` while access is restricted.' }),
    })
    .get('/healthz', () => ({ status: 'ok' as const }), {
      response: { 200: t.Object({ status: t.Literal('ok') }) },
      detail: op({ operationId: 'checkLiveness', summary: 'Liveness: the process answers', tags: ['Platform'], auth: 'public' }),
    })
    .get('/readyz', async ({ set }) => {
      const checks = await health.current()
      const down = Object.keys(checks).filter((backend) => checks[backend] === 'down')
      if (down.some(isRequired)) {
        throw new ApiError('service_unavailable', `Not reachable: ${down.join(', ')}.`, { headers: { 'retry-after': '5' }, fields: { checks } })
      }
      set.status = 200
      return { status: down.length ? 'degraded' as const : 'ready' as const, checks }
    }, {
      response: { 200: t.Object({ status: t.Union([t.Literal('ready'), t.Literal('degraded')]), checks: Checks }) },
      detail: op({
        operationId: 'checkReadiness',
        summary: 'Readiness: the backends requests need answer',
        description: '`checks` names each configured backend and whether it answered its last probe within 2 s (probes run in the background, at most every half second, so this answers at once even while a backend hangs). 503 when the database (or the embedded store) is down. Redis only accelerates: while it is down the answer is 200 `degraded` and the service runs on in-process stand-ins, with these differences: rate limits count per process; Idempotency-Key locks are per process (the database still refuses a second write for the same key, so a retry never writes twice); a key revocation or device change reaches other processes within `KEY_CACHE_TTL_MS` (default 60 s) instead of at once. The service returns to Redis by itself within a second of it answering again.',
        tags: ['Platform'], auth: 'public', errors: [503],
      }),
    })
}
