// Step 6 (CONTRACT §9): 413 and 415, from the headers before a byte of the body is read; then the body itself is
// read within the same cap (a chunked body has no Content-Length to check up front).
import { ApiError } from '../errors.ts'
import type { ApiRoute } from '../route-table.ts'

export const MAX_BODY_BYTES = 1024 * 1024
/**
 * Bun reads and discards the body we did not read after answering, so a client still sending sees our 413 (closing
 * on it would reset the connection under a client writing at full speed). Beyond this many announced bytes the 413
 * closes the connection instead: reading gigabytes to be polite is a cost a hostile client should not choose.
 */
export const MAX_DISCARDED_BYTES = 64 * 1024 * 1024
/**
 * Bun's own cap (Bun.serve's maxRequestBodySize), above any body: Bun answers a larger Content-Length itself with
 * an empty 413, so the cap is left to the checks here, which answer problem+json.
 */
export const RUNTIME_BODY_LIMIT = Number.MAX_SAFE_INTEGER

const tooLarge = (announced?: number) => new ApiError('payload_too_large', `Request bodies may be at most ${MAX_BODY_BYTES} bytes.`,
  announced !== undefined && announced > MAX_DISCARDED_BYTES ? { headers: { connection: 'close' } } : {})

export function checkBodyHeaders(request: Request, method: string, route: ApiRoute): void {
  if (method !== 'POST' && method !== 'PUT' && method !== 'PATCH' && method !== 'DELETE') return
  const length = request.headers.get('content-length')
  if (length !== null && Number(length) > MAX_BODY_BYTES) throw tooLarge(Number(length))
  const hasBody = (length !== null && length !== '0') || request.headers.has('transfer-encoding')
  if (!hasBody) return
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (!route.policy.accepts.includes(type)) {
    throw new ApiError('unsupported_media_type', `Send the body as ${route.policy.accepts.join(' or ')}.`, { headers: { accept: route.policy.accepts.join(', ') } })
  }
}

/**
 * Reads a body within the size cap, on every path (the console's forms too, which the API pipeline does not see).
 * With a Content-Length within the cap the runtime reads it in one go; only a chunked body is streamed and counted,
 * which costs far more per request.
 */
export async function readBody(request: Request): Promise<string> {
  // Content-Length first: reading `request.body` makes Bun build the body's ReadableStream, which cost a POST of
  // ten readings 2–3 µs of server CPU even when text() then reads it (a scratch Bun.serve, eight alternating rounds:
  // slower in all eight, median 2.3 µs; 2026-11-28). A request without Content-Length has no body or a chunked one.
  const length = request.headers.get('content-length')
  if (length !== null) {
    if (Number(length) > MAX_BODY_BYTES) throw tooLarge(Number(length))
    return request.text()
  }
  if (!request.body) return ''
  return (await readChunks(request.body, tooLarge)).toString('utf8')
}

/**
 * The same cap for a body read as a Blob, to be read as text or as bytes (one that may be compressed: line
 * protocol's gzip), refused with `refuse`, which may word the 413 for its own clients. A Blob because a body read
 * as one and then as text cost line protocol 0.09–0.22 µs less server CPU per reading than arrayBuffer() and a
 * TextDecoder (ingest/influx/routes.ts).
 */
export async function readBodyBlob(request: Request, refuse: (announced?: number) => Error = tooLarge): Promise<Blob> {
  const length = request.headers.get('content-length')
  if (length !== null) {
    if (Number(length) > MAX_BODY_BYTES) throw refuse(Number(length))
    return request.blob()
  }
  if (!request.body) return new Blob([])
  return new Blob([await readChunks(request.body, refuse)])
}

/** A body without Content-Length (chunked), counted as it arrives and refused once past the cap. */
async function readChunks(body: ReadableStream<Uint8Array>, refuse: () => Error): Promise<Buffer> {
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > MAX_BODY_BYTES) {
      reader.cancel().catch(() => {})
      throw refuse()
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}
