// JSON answers of COMPRESSION.minChars or more leave gzip-encoded when the request's Accept-Encoding takes gzip
// (RFC 9110 §12.5.3), with `Vary: Accept-Encoding` whether compressed or not (the representation depends on that
// header). Why:
// - Bandwidth: a page of 50 animals, 26.5 KB of JSON, is 2.4 KB gzipped at level 1 (26 µs of CPU).
// - Bun 1.4.5 sends a response written after an await (every answer that read the database) whose status, headers
//   and body pass 16 KB with its status line and each header name, ": ", value and CRLF as separate send() calls,
//   about 44 for our page, each delivering a TCP segment (oven-sh/bun#41341 proposes to cork them; open). A scratch
//   Bun.serve awaiting one postgres.js query then answering that page's size: 361–396 µs of server CPU per request
//   as is, 107–108 µs gzipped (2026-11-27; the note of issue 33 has the bench figures).
// Left as they are: answers carrying an ETag (a strong validator names one representation, RFC 9110 §8.8.3, and
// If-Match compares strongly), answers that set cookies (the console's, mapped by Elysia), and anything that is not
// a plain JSON object or array (streams, files, problem answers made as Responses, 304s).
export const COMPRESSION = {
  /** JSON text shorter than this (UTF-16 code units) leaves as it is: below it, gzip saves little. */
  minChars: 1024,
  /** zlib's fastest level: about 10× smaller for our pages, half the CPU of the default level 6. */
  gzipLevel: 1,
} as const

/** Whether Accept-Encoding takes gzip: listed (or `x-gzip`) with q > 0, or `*` with q > 0 and gzip not refused. */
export function acceptsGzip(acceptEncoding: string | null): boolean {
  if (!acceptEncoding) return false
  let gzip: number | undefined
  let any: number | undefined
  for (const item of acceptEncoding.split(',')) {
    const [coding = '', ...params] = item.split(';')
    const name = coding.trim().toLowerCase()
    let q = 1
    for (const param of params) {
      const [key, value] = param.split('=')
      if (key?.trim().toLowerCase() === 'q') q = Number(value?.trim())
    }
    if (!Number.isFinite(q)) q = 0
    if (name === 'gzip' || name === 'x-gzip') gzip = Math.max(gzip ?? 0, q)
    else if (name === '*') any = q
  }
  return gzip !== undefined ? gzip > 0 : (any ?? 0) > 0
}

/** A Vary value with `field` added once. */
function withVary(vary: unknown, field: string): string {
  if (typeof vary !== 'string' || !vary.trim()) return field
  return vary.split(',').some((f) => f.trim().toLowerCase() === field.toLowerCase()) ? vary : `${vary}, ${field}`
}

export interface ResponseSet { status?: number | string; headers: Record<string, unknown>; cookie?: Record<string, unknown>; redirect?: string }

const isPlainJson = (value: unknown): value is object =>
  value !== null && typeof value === 'object' && (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype)

/**
 * The app's mapResponse hook: the Response for a JSON answer (gzipped where it applies, see above), or undefined to
 * leave the answer to Elysia's own mapping.
 */
export function jsonResponse(request: Request, set: ResponseSet, value: unknown): Response | undefined {
  if (!isPlainJson(value) || set.redirect || (set.status !== undefined && typeof set.status !== 'number')) return
  if (set.cookie && Object.keys(set.cookie).length) return
  return jsonTextResponse(request, set, JSON.stringify(value))
}

/** JSON text as it leaves: gzipped or not, and whether its representation depends on Accept-Encoding (Vary). */
export interface JsonBody { body: string | Uint8Array<ArrayBuffer>; gzipped: boolean; varies: boolean }

/**
 * JSON text as the body it leaves in for `request` (gzipped where it applies, see above); `hasEtag`: the answer
 * carries an ETag, so it leaves as it is.
 */
export function jsonBody(request: Request, text: string, hasEtag = false): JsonBody {
  if (text.length < COMPRESSION.minChars || hasEtag) return { body: text, gzipped: false, varies: false }
  if (!acceptsGzip(request.headers.get('accept-encoding'))) return { body: text, gzipped: false, varies: true }
  return { body: Bun.gzipSync(text, { level: COMPRESSION.gzipLevel }), gzipped: true, varies: true }
}

/**
 * JSON text already made (a readings page, ingest/query.ts) as the Response it leaves in, gzipped where it applies;
 * the status and headers gathered in `set` move into it.
 */
export function jsonTextResponse(request: Request, set: ResponseSet, text: string): Response {
  return jsonBodyResponse(set, jsonBody(request, text, set.headers.etag !== undefined))
}

/** A JSON body made for this request (jsonBody) as the Response it leaves in; the status and headers in `set` move into it. */
export function jsonBodyResponse(set: ResponseSet, { body, gzipped, varies }: JsonBody): Response {
  const headers = set.headers
  headers['content-type'] ??= 'application/json;charset=utf-8'
  const init = { status: typeof set.status === 'number' ? set.status : 200, headers: headers as Record<string, string> }
  // The status and headers now travel in the Response. Left in `set` too, Elysia would copy them into a new Response
  // around this one's body (a stream): about 20 µs more per answer (GET /animals?limit=1 on a real server, server CPU
  // 287 against 265 µs per request in four alternating rounds). An empty `set` has Elysia send this one as it is.
  set.headers = {}
  set.status = 200
  if (varies) headers.vary = withVary(headers.vary, 'Accept-Encoding')
  if (gzipped) headers['content-encoding'] = 'gzip'
  return new Response(body, init)
}
