// Token format (CONTRACT §2): prefix, 30 base62 random chars, 6-char base62 CRC32 of everything before it.
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
export const TOKEN_PREFIX = { personal: 'hrs_pat_', device: 'hrs_dev_' } as const
export type TokenKind = keyof typeof TOKEN_PREFIX
const TOKEN_SHAPE = /^hrs_(pat|dev)_[0-9A-Za-z]{36}$/

function base62(n: number, width: number): string {
  let out = ''
  while (n > 0) { out = BASE62[n % 62] + out; n = Math.floor(n / 62) }
  return out.padStart(width, '0')
}

function checksum(body: string): string {
  return base62(Bun.hash.crc32(body), 6)
}

export function generateToken(kind: TokenKind): string {
  // Rejection sampling keeps every base62 char equally likely (256 is not a multiple of 62).
  let random = ''
  const bytes = new Uint8Array(64)
  while (random.length < 30) {
    crypto.getRandomValues(bytes)
    for (const b of bytes) if (b < 248 && random.length < 30) random += BASE62[b % 62]
  }
  const body = TOKEN_PREFIX[kind] + random
  return body + checksum(body)
}

/** The token's kind when its shape and checksum hold; undefined for noise or typos (no database lookup). */
export function parseToken(token: string): TokenKind | undefined {
  if (!TOKEN_SHAPE.test(token)) return undefined
  if (checksum(token.slice(0, -6)) !== token.slice(-6)) return undefined
  return token.startsWith(TOKEN_PREFIX.personal) ? 'personal' : 'device'
}

/** Tokens carry 178 random bits, so a fast unsalted hash is safe to store and index (GitHub does the same). */
export function hashToken(token: string): string {
  return new Bun.CryptoHasher('sha256').update(token).digest('hex')
}
