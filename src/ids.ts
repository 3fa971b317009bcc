// Opaque, time-sortable ids: a type prefix plus a 26-char ULID in lower-case Crockford base32 (CONTRACT §1).
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'

export const ID_PREFIXES = {
  account: 'acct', key: 'key', device: 'dev', animal: 'anm', activity: 'act', environment: 'env',
  clutch: 'clt', breeding: 'brd', condition: 'cnd', document: 'doc', contact: 'cnt', invoice: 'inv',
  webhookEndpoint: 'whe', event: 'evt', claim: 'clm', request: 'req', attempt: 'wha',
  alertRule: 'alr', alert: 'alt',
} as const
export type IdKind = keyof typeof ID_PREFIXES

let lastTime = -1
/** The 80 random bits as 16 base-32 digits (5 bits each, exactly 80 bits), most significant first. */
const digits = new Uint8Array(16)
/** The time part and the first 12 random digits as text: ids made within one millisecond share it. */
let head = ''
/** Digits from this index on are not in `head` and are encoded for every id. */
const TAIL = 12

/** Milliseconds since the epoch as the ten time digits of a ULID. */
function encodeTime(ms: number): string {
  let time = ''
  for (let i = 0, t = ms; i < 10; i++) { time = ALPHABET[t % 32] + time; t = Math.floor(t / 32) }
  return time
}

function encodeHead(now: number) {
  const time = encodeTime(now)
  let random = ''
  for (let i = 0; i < TAIL; i++) random += ALPHABET[digits[i]!]
  head = time + random
}

/**
 * A ULID body; monotonic within one millisecond so ids made together still sort in creation order. Every
 * request gets one (its request id), so an id within the same millisecond costs four characters of encoding.
 */
export function ulid(now = Date.now()): string {
  if (now <= lastTime) {
    // Same millisecond: add one to the random part (base 32, carrying) instead of drawing a new one.
    let i = 15
    while (i >= 0 && digits[i] === 31) digits[i--] = 0
    if (i >= 0) digits[i]!++
    if (i < TAIL) encodeHead(lastTime)
  } else {
    crypto.getRandomValues(digits)
    // 256 is a multiple of 32, so each masked byte is a uniform digit.
    for (let i = 0; i < 16; i++) digits[i]! &= 31
    lastTime = now
    encodeHead(now)
  }
  return head + ALPHABET[digits[12]!] + ALPHABET[digits[13]!] + ALPHABET[digits[14]!] + ALPHABET[digits[15]!]
}

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${ulid()}`
}

/**
 * An id for a record made at `time` (ms since the epoch), such as a generated record with a history: lists page by
 * id, so its id must sort by its own creation time, not by when the id was made. It leaves the monotonic state of
 * `ulid()` alone (a time in the past would otherwise be taken as "the same millisecond" as the last id); ids for
 * one instant are random among themselves.
 */
export function idAt(kind: IdKind, time: number): string {
  const random = crypto.getRandomValues(new Uint8Array(16))
  let body = encodeTime(Math.floor(time))
  for (const byte of random) body += ALPHABET[byte & 31]
  return `${ID_PREFIXES[kind]}_${body}`
}

/**
 * An id that is a bearer secret (a pairing claim's: whoever presents it is handed a device key). Its 80 random bits
 * are freshly drawn for it, never the monotonic step of `ulid()`: ids made in the same millisecond (every request's
 * X-Request-Id) would otherwise sit one step from it, and an observer of request ids could count their way to it.
 */
export function newSecretId(kind: IdKind): string {
  return idAt(kind, Date.now())
}

const shapes = new Map<string, RegExp>()
/** Whether `value` has the shape of an id of this kind; a malformed path id is a 404, never a database error. */
export function isId(kind: IdKind, value: string): boolean {
  let re = shapes.get(kind)
  if (!re) { re = new RegExp(`^${ID_PREFIXES[kind]}_[0-9a-hjkmnp-tv-z]{26}$`); shapes.set(kind, re) }
  return re.test(value)
}
