// Our own InfluxDB line protocol (ILP) writer for the ingest hot path: a whole batch becomes one body and
// one POST to QuestDB's /write, which QuestDB commits as one transaction before it answers 2xx.
//
// Why not the official client (@questdb/nodejs-client) here: it appends a row one character at a time
// (writeEscaped loops over every string and calls write(ch) per character); measured at 15–32 µs of CPU per row
// of our shape under Bun and Node alike, against about 1 µs for the same rows as text, and 34.7 µs of server CPU
// per reading through the API (bench/results/2026-11-22T04-39-10-8d62b2d.md). A row of ours repeats the same
// table and tags for every reading of a device's channel, so that part (the series prefix) is escaped and encoded
// once and cached as bytes; a row then costs its value and its timestamp.
//
// The client still owns the configuration: QUESTDB_ILP is parsed by its SenderOptions, so addr, username/password,
// token, tls_verify, tls_ca and protocol_version mean what its documentation says (and tls_roots is refused with
// its own message). What this writer does not do is refused at start rather than ignored.
//
// Protocol versions: 1 is text, which every QuestDB from 7.x to 9.x reads over HTTP. 2 (QuestDB 9.x) lets a double
// field be sent as its 8 bytes (`value==` then type byte 16 then the IEEE 754 double, little-endian: LineTcpParser's
// parseBinaryFormat), which spares us the number-to-text conversion and QuestDB its text-to-double parse; the
// timestamp stays text in both (the server reads no binary designated timestamp). With protocol_version=auto (the
// default) the writer asks GET /settings once at start, as the client does, and sends 2 where
// `config["line.proto.support.versions"]` lists it; a server without that list (7.4 answers `{}`, older ones 404)
// gets 1. The client's own auto-detection is not used: it does not survive 7.4's `{}`.
import { readFileSync } from 'node:fs'
import { SenderOptions } from '@questdb/nodejs-client'

/** ILP versions the writer speaks: 1, text; 2, doubles as 8 binary bytes. */
export type IlpVersion = 1 | 2

/** Where and how the writer sends: everything taken from QUESTDB_ILP. */
export interface IlpTarget {
  /** The /write URL, timestamps in milliseconds. */
  url: string
  /** GET here lists the ILP versions the server reads (QuestDB 9.x). */
  settingsUrl: string
  /** QuestDB's SQL over HTTP, on the same server and credentials: how the store reads (questdb.ts). */
  execUrl: string
  /** As QUESTDB_ILP says: 'auto' asks the server (ilpVersion). */
  protocolVersion: 'auto' | IlpVersion
  headers: Record<string, string>
  tls?: { rejectUnauthorized: boolean; ca?: string }
  /** One request slower than this fails (the client's request_timeout, 10 s unless set). */
  requestTimeoutMs: number
}

/** Options the writer honours with the client's meaning; any other option in QUESTDB_ILP is refused. */
const HONOURED = new Set(['protocol', 'protocol_version', 'addr', 'host', 'port', 'username', 'password', 'token', 'tls_verify', 'tls_ca', 'request_timeout', 'auto_flush'])
const WHY_NOT: Record<string, string> = {
  auto_flush_rows: 'batches are sized by INGEST_BATCH_SIZE and INGEST_FLUSH_MS',
  auto_flush_interval: 'batches are sized by INGEST_BATCH_SIZE and INGEST_FLUSH_MS',
  retry_timeout: 'a failed batch is answered 503 and retried by the device; DEDUP UPSERT KEYS make the retry safe',
  request_min_throughput: 'request_timeout bounds a request',
  init_buf_size: 'a batch is encoded into one buffer of its own size',
  max_buf_size: 'a batch is bounded by INGEST_BATCH_SIZE',
  max_name_len: 'the table and column names are fixed',
  stdlib_http: 'the writer sends with fetch, not with either of the client\'s transports',
  token_x: 'token_x/token_y authenticate ILP over TCP, which is refused',
  token_y: 'token_x/token_y authenticate ILP over TCP, which is refused',
}
const DEFAULT_REQUEST_TIMEOUT_MS = 10_000

/** Reads QUESTDB_ILP through the client's own parser; throws a message naming the option when the writer cannot honour it. */
export function ilpTarget(configuration: string): IlpTarget {
  let options: SenderOptions
  try {
    options = new SenderOptions(configuration)
  } catch (error) {
    throw new Error(`QUESTDB_ILP: ${(error as Error).message}`)
  }
  if (options.protocol !== 'http' && options.protocol !== 'https') {
    throw new Error('QUESTDB_ILP must use the http or https transport (ILP over TCP can lose data without telling)')
  }
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || HONOURED.has(key)) continue
    throw new Error(`QUESTDB_ILP: option '${key}' is not supported by our writer${WHY_NOT[key] ? ` (${WHY_NOT[key]})` : ''}; remove it`)
  }
  if (options.auto_flush === true) throw new Error("QUESTDB_ILP: 'auto_flush=on' is not supported: each batch (INGEST_BATCH_SIZE, INGEST_FLUSH_MS) is one request; remove it")
  if (options.protocol_version !== 'auto' && options.protocol_version !== '1' && options.protocol_version !== '2') {
    throw new Error(`QUESTDB_ILP: protocol_version=${options.protocol_version} is not supported: the writer sends ILP version 1 (text) or 2 (binary doubles); remove it (auto) or set 1 or 2`)
  }
  const headers: Record<string, string> = {}
  if (options.token) headers.authorization = `Bearer ${options.token}`
  else if (options.username && options.password) headers.authorization = `Basic ${Buffer.from(`${options.username}:${options.password}`).toString('base64')}`
  else if (options.username || options.password) throw new Error('QUESTDB_ILP: username and password go together (HTTP basic authentication)')
  const secure = options.protocol === 'https'
  // A bare IPv6 address needs brackets in a URL; the client's addr splits host and port at the first colon.
  const host = options.host!.includes(':') ? `[${options.host}]` : options.host!
  const origin = `${options.protocol}://${host}:${options.port}`
  return {
    url: `${origin}/write?precision=ms`,
    settingsUrl: `${origin}/settings`,
    execUrl: `${origin}/exec`,
    protocolVersion: options.protocol_version === 'auto' ? 'auto' : options.protocol_version === '2' ? 2 : 1,
    headers,
    tls: secure ? { rejectUnauthorized: options.tls_verify !== false, ca: options.tls_ca ? readFileSync(options.tls_ca, 'utf8') : undefined } : undefined,
    requestTimeoutMs: typeof options.request_timeout === 'number' ? options.request_timeout : DEFAULT_REQUEST_TIMEOUT_MS,
  }
}

const SPECIAL = /[ ,=\n\r\\]/g
/** A table name, tag key or tag value as ILP text: space, comma, equals, CR, LF and backslash escaped with a backslash (as the client does). */
export const escapeIlp = (text: string) => text.replace(SPECIAL, '\\$&')

/**
 * One ILP line's fixed part: `table,tag=value,… value=`. Tags with a null (or empty) value are left out, which
 * QuestDB stores as null.
 */
export function seriesPrefix(table: string, tags: readonly (readonly [string, string | null])[], field: string): string {
  let prefix = escapeIlp(table)
  for (const [key, value] of tags) if (value) prefix += `,${escapeIlp(key)}=${escapeIlp(value)}`
  return `${prefix} ${escapeIlp(field)}=`
}

const SPACE = 0x20
const NEWLINE = 0x0a
const EQUALS = 0x3d
/** LineTcpParser.ENTITY_TYPE_DOUBLE: the type byte of a binary double after `==`. */
const BINARY_DOUBLE = 16
/** Room for a row's value and timestamp: a double's text is at most 25 bytes, an epoch-ms timestamp 20, then 2 separators. */
const ROW_TAIL_MAX = 48

/**
 * One batch's body as bytes, written row by row into one buffer that grows as needed and is reused: take() hands
 * out a view of it, valid until the next row(), so a writer gives each batch in flight a body of its own and reuses
 * it once the batch is answered. Copying each batch out instead (a fresh 400 KB buffer per batch of 1,900 rows)
 * cost 169 µs of CPU per batch, as much as a third of fetch's own cost of POSTing it (500 µs), in a scratch loop
 * on this 2-core box.
 * A row is its series prefix (the cached bytes of `table,tags… value=`), the value, a space, the timestamp in
 * epoch milliseconds and a newline. The value in version 1 is the shortest text that reads back to the same double
 * (as JS prints it, except -0, which JS prints as "0"); in version 2 it is `=`, the type byte and the 8 bytes.
 */
export class IlpBody {
  private bytes = new Uint8Array(1 << 16)
  private view = new DataView(this.bytes.buffer)
  private length = 0
  // Readings of one request often share a timestamp: its digits are kept for the next row.
  private lastTs = Number.NaN
  private lastTsText = ''

  constructor(readonly version: IlpVersion) {}

  row(prefix: Uint8Array, value: number, ts: number): void {
    let at = this.length
    if (at + prefix.length + ROW_TAIL_MAX > this.bytes.length) this.grow(at + prefix.length + ROW_TAIL_MAX)
    const bytes = this.bytes
    bytes.set(prefix, at)
    at += prefix.length
    if (this.version === 2) {
      bytes[at] = EQUALS
      bytes[at + 1] = BINARY_DOUBLE
      this.view.setFloat64(at + 2, value, true)
      at += 10
    } else {
      at = writeAscii(bytes, at, value === 0 && 1 / value < 0 ? '-0' : String(value))
    }
    bytes[at++] = SPACE
    if (ts !== this.lastTs) { this.lastTs = ts; this.lastTsText = String(ts) }
    at = writeAscii(bytes, at, this.lastTsText)
    bytes[at++] = NEWLINE
    this.length = at
  }

  /** The body so far, as a view of the buffer (valid until the next row()); the buffer starts over empty. */
  take(): Uint8Array {
    const body = this.bytes.subarray(0, this.length)
    this.length = 0
    return body
  }

  private grow(needed: number): void {
    const bytes = new Uint8Array(Math.max(needed, this.bytes.length * 2))
    bytes.set(this.bytes.subarray(0, this.length))
    this.bytes = bytes
    this.view = new DataView(bytes.buffer)
  }
}

/** ASCII text (a number's) into `bytes` at `at`; returns where it ends. */
function writeAscii(bytes: Uint8Array, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) bytes[at++] = text.charCodeAt(i)
  return at
}

/**
 * Which version to send in: the forced one, or with 'auto' the highest of 1 and 2 that GET /settings lists. A
 * forced 2 that the server does not list is refused here, at start, rather than batch by batch.
 */
export async function ilpVersion(target: IlpTarget): Promise<IlpVersion> {
  if (target.protocolVersion === 1) return 1
  const offered = await offeredVersions(target)
  if (offered.includes(2)) return 2
  if (target.protocolVersion === 2) {
    throw new Error(`QUESTDB_ILP: protocol_version=2, but the QuestDB at ${target.settingsUrl.replace(/\/settings$/, '')} does not offer ILP version 2 (its /settings lists ${offered.length ? `versions ${offered.join(', ')}` : 'no line protocol versions; QuestDB 7.x reads text ILP only'}); set protocol_version=1 or remove it (auto)`)
  }
  return 1
}

/** The ILP versions /settings lists; none from a server that has no such list (7.4's `{}`, or a 404 before /settings). */
async function offeredVersions(target: IlpTarget): Promise<number[]> {
  let response: Response
  try {
    response = await fetch(target.settingsUrl, {
      headers: target.headers, signal: AbortSignal.timeout(target.requestTimeoutMs), ...(target.tls ? { tls: target.tls } : {}),
    })
  } catch (error) {
    throw new Error(`QuestDB ${target.settingsUrl} (asked which ILP versions it reads) failed: ${isTimeout(error) ? `no answer within ${target.requestTimeoutMs} ms` : (error as Error).message}`)
  }
  if (response.status === 404) return []
  const text = await response.text()
  if (!response.ok) throw new Error(`QuestDB ${target.settingsUrl} (asked which ILP versions it reads) answered HTTP ${response.status}: ${text.trim().slice(0, 300)}`)
  let settings: { config?: Record<string, unknown> }
  try {
    settings = JSON.parse(text)
  } catch {
    throw new Error(`QuestDB ${target.settingsUrl} (asked which ILP versions it reads) answered something other than JSON: ${text.trim().slice(0, 300)}`)
  }
  const versions = settings?.config?.['line.proto.support.versions']
  return Array.isArray(versions) ? versions.map(Number) : []
}

/** QuestDB refused a batch (or the request failed); the message is the log line. */
export class IlpWriteError extends Error {
  constructor(message: string, readonly status?: number, readonly line?: number) { super(message) }
}

/**
 * QuestDB's error answer, `{"code","message","line","errorId"}`, as one readable sentence; `describeLine` names
 * what the offending line carried (lines are numbered from 1, one per row).
 */
export function describeIlpError(status: number, body: string, describeLine?: (line: number) => string | undefined): IlpWriteError {
  let parsed: { code?: unknown; message?: unknown; line?: unknown; errorId?: unknown } | undefined
  try {
    const json: unknown = JSON.parse(body)
    if (json && typeof json === 'object') parsed = json as typeof parsed
  } catch { /* not JSON: a proxy's page, or an older server's text */ }
  if (!parsed || typeof parsed.message !== 'string') {
    const text = body.trim().replace(/\s+/g, ' ').slice(0, 300)
    return new IlpWriteError(`QuestDB /write answered HTTP ${status}${text ? `: ${text}` : ' with no body'}`, status)
  }
  const line = typeof parsed.line === 'number' ? parsed.line : undefined
  const row = line !== undefined ? describeLine?.(line) : undefined
  const details = [
    typeof parsed.code === 'string' ? `code ${parsed.code}` : undefined,
    line !== undefined ? `line ${line}${row ? ` (${row})` : ''}` : undefined,
    typeof parsed.errorId === 'string' ? `error id ${parsed.errorId}` : undefined,
  ].filter(Boolean).join(', ')
  return new IlpWriteError(`QuestDB refused the batch (HTTP ${status}${details ? `, ${details}` : ''}): ${parsed.message.trim().replace(/\s+/g, ' ')}`, status, line)
}

/**
 * POSTs one encoded batch; resolves only once QuestDB answered 2xx (it has committed the batch by then). A request
 * that got no answer at all (a pooled keep-alive connection QuestDB had just closed, a reset) is sent once more
 * at once: the table's DEDUP UPSERT KEYS make a batch that did land the first time land the same way again.
 */
export async function postIlp(target: IlpTarget, body: Uint8Array, describeLine?: (line: number) => string | undefined): Promise<void> {
  let response: Response
  try {
    response = await send(target, body).catch((error) => (isTimeout(error) ? Promise.reject(error) : send(target, body)))
  } catch (error) {
    const why = isTimeout(error) ? `no answer within ${target.requestTimeoutMs} ms` : (error as Error).message
    throw new IlpWriteError(`QuestDB /write failed: ${why}`)
  }
  if (response.ok) {
    // Read to the end so the connection goes back to the pool (a 204 has nothing to read).
    if (response.status !== 204) await response.arrayBuffer()
    return
  }
  throw describeIlpError(response.status, await response.text().catch(() => ''), describeLine)
}

const send = (target: IlpTarget, body: Uint8Array) => fetch(target.url, {
  method: 'POST', body, headers: target.headers, signal: AbortSignal.timeout(target.requestTimeoutMs), ...(target.tls ? { tls: target.tls } : {}),
})
const isTimeout = (error: unknown) => (error as Error).name === 'TimeoutError'
