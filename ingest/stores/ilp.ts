// Our own InfluxDB line protocol (ILP) writer for the ingest hot path: a whole batch becomes one text body and
// one POST to QuestDB's /write, which QuestDB commits as one transaction before it answers 2xx.
//
// Why not the official client (@questdb/nodejs-client) here: it appends a row one character at a time
// (writeEscaped loops over every string and calls write(ch) per character); measured at 15–32 µs of CPU per row
// of our shape under Bun and Node alike, against about 1 µs for the same rows as text, and 34.7 µs of server CPU
// per reading through the API (bench/results/2026-11-22T04-39-10-8d62b2d.md). A row of ours repeats the same
// table and tags for every reading of a device's channel, so that part (the series prefix) is escaped once and
// cached; a row then costs two number-to-text conversions: the value and the timestamp. With this writer the
// same path measures 1.9 µs of server CPU per reading and 4.5× the official client's rows/s
// (bench/results/2026-11-22T23-16-16-e3cbe8a.md, on a machine shared with other work).
//
// The client still owns the configuration: QUESTDB_ILP is parsed by its SenderOptions, so addr, username/password,
// token, tls_verify and tls_ca mean what its documentation says (and tls_roots is refused with its own message).
// What this writer does not do is refused at start rather than ignored.
//
// Text ILP (protocol version 1) is what every QuestDB from 7.x to 9.x reads over HTTP; doubles sent as text are
// parsed exactly. So the writer never asks /settings (QuestDB 7.4 answers `{}` there, which the client's protocol
// auto-detection does not survive).
import { readFileSync } from 'node:fs'
import { SenderOptions } from '@questdb/nodejs-client'

/** Where and how the writer sends: everything taken from QUESTDB_ILP. */
export interface IlpTarget {
  /** The /write URL, timestamps in milliseconds. */
  url: string
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
  if (options.protocol_version !== 'auto' && options.protocol_version !== '1') {
    throw new Error(`QUESTDB_ILP: protocol_version=${options.protocol_version} is not supported: the writer sends text ILP (protocol_version=1), which every QuestDB from 7.4 to 9.x reads; remove it or set 1`)
  }
  const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' }
  if (options.token) headers.authorization = `Bearer ${options.token}`
  else if (options.username && options.password) headers.authorization = `Basic ${Buffer.from(`${options.username}:${options.password}`).toString('base64')}`
  else if (options.username || options.password) throw new Error('QUESTDB_ILP: username and password go together (HTTP basic authentication)')
  const secure = options.protocol === 'https'
  // A bare IPv6 address needs brackets in a URL; the client's addr splits host and port at the first colon.
  const host = options.host!.includes(':') ? `[${options.host}]` : options.host!
  return {
    url: `${options.protocol}://${host}:${options.port}/write?precision=ms`,
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

/**
 * A row's text after its prefix: the value as a double (ILP reads a number without a suffix as a double; JS
 * prints the shortest text that reads back to the same double) and the timestamp in epoch milliseconds.
 */
export const rowText = (value: number, ts: number) => `${value} ${ts}\n`

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
export async function postIlp(target: IlpTarget, body: string, describeLine?: (line: number) => string | undefined): Promise<void> {
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

const send = (target: IlpTarget, body: string) => fetch(target.url, {
  method: 'POST', body, headers: target.headers, signal: AbortSignal.timeout(target.requestTimeoutMs), ...(target.tls ? { tls: target.tls } : {}),
})
const isTimeout = (error: unknown) => (error as Error).name === 'TimeoutError'
