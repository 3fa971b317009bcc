// One ingest-log message: the readings of one device from one group commit. Its subject names the account and the
// device (`<prefix>.<account id>.<device id>`), so a stream can later be split by account by configuration alone;
// the body repeats them, so a message decodes without its subject.
import type { Reading } from '../stores/interface.ts'

interface Body {
  /** Account and device. */
  a: string
  d: string
  /** [channel, ts (epoch ms), value, metric, environment id] per reading. */
  r: [string, number, number, string | null, string | null][]
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export interface LogMessage { subject: string; data: Uint8Array; readings: number }

/** One message per (account, device) of `readings`, in the order they first appear. */
export function encodeBatch(readings: readonly Reading[], subjectPrefix: string): LogMessage[] {
  const byDevice = new Map<string, Body>()
  for (const reading of readings) {
    let body = byDevice.get(reading.deviceId)
    if (!body) { body = { a: reading.accountId, d: reading.deviceId, r: [] }; byDevice.set(reading.deviceId, body) }
    body.r.push([reading.channel, reading.ts, reading.value, reading.metric, reading.environmentId])
  }
  return [...byDevice.values()].map((body) => ({
    subject: `${subjectPrefix}.${body.a}.${body.d}`,
    data: encoder.encode(JSON.stringify(body)),
    readings: body.r.length,
  }))
}

/** The readings of a message; throws on a body this code did not write (the writer sets it aside). */
export function decodeMessage(data: Uint8Array): Reading[] {
  const body = JSON.parse(decoder.decode(data)) as Body
  if (typeof body?.a !== 'string' || typeof body.d !== 'string' || !Array.isArray(body.r)) throw new Error('not an ingest-log message')
  return body.r.map(([channel, ts, value, metric, environmentId]) => ({ accountId: body.a, deviceId: body.d, channel, ts, value, metric, environmentId }))
}
