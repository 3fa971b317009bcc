// Console sessions. A session lives in the shared store (Redis when configured, the in-process twin otherwise),
// not in a table: every server process sees it (WORKERS > 1 already requires Redis), the store's TTL expires it
// with no sweeping job, and losing one (a Redis restart) only means signing in again. The cookie carries a random
// id; the store keeps it under the id's hash, so a copy of the store holds no usable cookie.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { SharedStore } from '../kv/interface.ts'

/** Sessions end this long after sign-in, whatever happens in between. */
export const SESSION_TTL_MS = 8 * 3600 * 1000
export const SESSION_COOKIE = 'hrs_console'
/** Before sign-in there is no session to tie a CSRF token to, so the sign-in form is a double submit against this cookie. */
export const SIGN_IN_COOKIE = 'hrs_console_signin'
const COOKIE_PATH = '/console'

export interface Session {
  accountId: string
  /** The key the person signed in with: the session lasts only while it is live and holds keys:write. */
  keyId: string
  /** Every form carries it; a request without it (or with another session's) changes nothing. */
  csrf: string
  /** Epoch ms; checked here as well as by the store's TTL, so an expired session is refused on every backend. */
  expiresAt: number
}

const storeKey = (id: string) => `console-session:${createHash('sha256').update(id).digest('base64url')}`
export const randomToken = () => randomBytes(32).toString('base64url')

export async function createSession(shared: SharedStore, input: { accountId: string; keyId: string }): Promise<{ id: string; session: Session }> {
  const id = randomToken()
  const session: Session = { ...input, csrf: randomToken(), expiresAt: Date.now() + SESSION_TTL_MS }
  await shared.set(storeKey(id), JSON.stringify(session), SESSION_TTL_MS)
  return { id, session }
}

export async function readSession(shared: SharedStore, id: string | undefined): Promise<Session | undefined> {
  if (!id) return undefined
  const stored = await shared.get(storeKey(id))
  if (!stored) return undefined
  const session = JSON.parse(stored) as Session
  return session.expiresAt > Date.now() ? session : undefined
}

export async function endSession(shared: SharedStore, id: string | undefined): Promise<void> {
  if (!id) return
  const stored = await shared.get(storeKey(id))
  // release() deletes the entry only while it still holds what we read: exactly this session.
  if (stored) await shared.release(storeKey(id), stored)
}

export function sameToken(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** A cookie's value; one that is not valid percent-encoding (`%E0%A4%A`) is as absent as no cookie at all. */
export function cookieOf(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue
    try {
      return decodeURIComponent(part.slice(eq + 1).trim())
    } catch {
      return undefined
    }
  }
  return undefined
}

/**
 * Secure whenever the service's public URL is https (PUBLIC_URL: how people reach it, whatever a proxy forwards)
 * or the browser reached us over TLS, directly or through a proxy that says so.
 */
function servedOverTls(request: Request, publicUrl: string): boolean {
  return publicUrl.startsWith('https:') || request.url.startsWith('https:') || request.headers.get('x-forwarded-proto') === 'https'
}

export function setCookie(request: Request, publicUrl: string, name: string, value: string, maxAgeMs: number): string {
  const attributes = [`${name}=${encodeURIComponent(value)}`, `Path=${COOKIE_PATH}`, `Max-Age=${Math.floor(maxAgeMs / 1000)}`, 'HttpOnly', 'SameSite=Strict']
  if (servedOverTls(request, publicUrl)) attributes.push('Secure')
  return attributes.join('; ')
}

export const clearCookie = (request: Request, publicUrl: string, name: string) => setCookie(request, publicUrl, name, '', 0)
