// Opaque, time-sortable ids: a type prefix plus a 26-char ULID in lower-case Crockford base32 (CONTRACT §1).
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'

export const ID_PREFIXES = {
  account: 'acct', key: 'key', device: 'dev', animal: 'anm', activity: 'act', environment: 'env',
  clutch: 'clt', breeding: 'brd', condition: 'cnd', document: 'doc', contact: 'cnt', invoice: 'inv',
  webhookEndpoint: 'whe', event: 'evt', claim: 'clm', request: 'req', attempt: 'wha',
} as const
export type IdKind = keyof typeof ID_PREFIXES

let lastTime = 0
let lastTimeText = ''
const lastRandom = new Uint8Array(10)

/** A ULID body; monotonic within one millisecond so ids made together still sort in creation order. */
export function ulid(now = Date.now()): string {
  if (now <= lastTime) {
    // Same millisecond: increment the random part instead of drawing a new one.
    for (let i = 9; i >= 0; i--) {
      if (lastRandom[i]! < 255) { lastRandom[i]!++; break }
      lastRandom[i] = 0
    }
  } else {
    crypto.getRandomValues(lastRandom)
    lastTime = now
    // The time part changes once a millisecond; every id made within it (a request id each) reuses the text.
    lastTimeText = ''
    for (let i = 0, t = now; i < 10; i++) { lastTimeText = ALPHABET[t % 32] + lastTimeText; t = Math.floor(t / 32) }
  }
  let out = lastTimeText
  // 80 random bits → 16 base32 chars, 5 bits at a time.
  let bits = 0, value = 0
  for (const byte of lastRandom) {
    value = (value << 8) | byte; bits += 8
    while (bits >= 5) { out += ALPHABET[(value >>> (bits - 5)) & 31]; bits -= 5 }
  }
  return out
}

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${ulid()}`
}

const shapes = new Map<string, RegExp>()
/** Whether `value` has the shape of an id of this kind; a malformed path id is a 404, never a database error. */
export function isId(kind: IdKind, value: string): boolean {
  let re = shapes.get(kind)
  if (!re) { re = new RegExp(`^${ID_PREFIXES[kind]}_[0-9a-hjkmnp-tv-z]{26}$`); shapes.set(kind, re) }
  return re.test(value)
}
