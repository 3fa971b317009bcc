// Standard Webhooks signing: HMAC-SHA256 over "{id}.{timestamp}.{body}" with the secret's key bytes, sent as
// "v1,<base64>"; several space-separated signatures while a rotated secret is still in its grace period.
import { createHmac, randomBytes } from 'node:crypto'

const PREFIX = 'whsec_'

export function newSecret(): string {
  return PREFIX + randomBytes(24).toString('base64')
}

export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

/** The three headers of a delivery, signed over the exact bytes of `body`. */
export function signedHeaders(secrets: readonly string[], id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => signature(s, id, timestamp, body)).join(' '),
  }
}
