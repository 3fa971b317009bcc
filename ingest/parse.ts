// Turning what a device sent into readings: each reading is checked on its own, and a bad one is rejected by
// index without costing the rest of the batch (CONTRACT §7).
import { t } from 'elysia'
import type { ChannelMapping, DeviceInfo } from './devices.ts'
import type { Reading } from './stores/interface.ts'
import { isCalendarDateTime } from '../src/http/formats.ts'
import { MAX_FUTURE_MS } from '../src/records/rules.ts'

export const MAX_READINGS_PER_BATCH = 5000
export const MAX_PING_CHANNELS = 32
/** What a reading's value must be, as every refusal of one says it (JSON, pings, MQTT, line protocol). */
export const READING_VALUE_RULE = 'a finite number of magnitude at most 2^360'
/** The body of POST /sensors/readings and the payload of MQTT's devices/{id}/readings: one schema for both. */
export const ReadingsBatch = t.Object({
  readings: t.Array(t.Unknown({ description: `A reading \`{ channel, value, ts? }\`; each is checked on its own. \`value\` is ${READING_VALUE_RULE} (about 2.35e108, the bound Amazon CloudWatch puts on its metric values), so that every bucket's sum stays finite; beyond it the reading is rejected as \`invalid_value\`.` }), { minItems: 1, maxItems: MAX_READINGS_PER_BATCH }),
}, { additionalProperties: false, $id: '#/components/schemas/ReadingsBatch' })

const CHANNEL = /^[A-Za-z0-9_.-]{1,32}$/
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|z|[+-]\d{2}:\d{2})$/
/** A number as JSON writes it: what a ping's text value must be (`Number()` would also take `0x10`, `0b11`, ` 5`). */
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/
/**
 * The largest magnitude a reading's value may have: 2^360 (about 2.35e108), the bound Amazon CloudWatch puts on
 * PutMetricData values. Any finite double could be stored, but every bucket's sum must stay finite: two readings of
 * 1.7e308 in one minute overflowed Postgres's float8 sum and failed the whole group-commit batch, other accounts'
 * readings with it. Under this bound a sum stays finite for up to 2^663 readings.
 */
export const MAX_READING_MAGNITUDE = 2 ** 360
/** Whether a number may be a reading's value: finite and within MAX_READING_MAGNITUDE (NaN compares false). */
export const isReadingValue = (value: number) => value <= MAX_READING_MAGNITUDE && value >= -MAX_READING_MAGNITUDE
/** Epoch-millisecond timestamps before 2000 are almost certainly seconds or garbage. */
export const MIN_READING_TS = Date.UTC(2000, 0, 1)

export type RejectCode = 'invalid_reading' | 'invalid_channel' | 'invalid_value' | 'invalid_timestamp' | 'timestamp_in_future' | 'duplicate_reading'
export interface Rejection { index: number; code: RejectCode; message: string }

const MESSAGES: Record<RejectCode, string> = {
  invalid_reading: 'must be an object with channel, value and optional ts, and nothing else',
  invalid_channel: 'channel must be 1–32 characters of A–Z, a–z, 0–9, _ . -',
  invalid_value: `value must be ${READING_VALUE_RULE} (about 2.35e108)`,
  invalid_timestamp: 'ts must be an RFC 3339 date-time of a real calendar day and time, or epoch milliseconds',
  timestamp_in_future: 'ts lies more than 5 minutes in the future',
  duplicate_reading: 'another reading in this batch has the same channel and ts',
}

/** Epoch ms from `ts` (RFC 3339 text or epoch ms), `now` when absent, or a rejection code. */
function parseTimestamp(ts: unknown, now: number): number | RejectCode {
  if (ts === undefined) return now
  let ms: number
  if (typeof ts === 'number') ms = Number.isInteger(ts) ? ts : NaN
  // Date.parse moves an impossible day or time (2025-02-30 → 2025-03-02); such a timestamp is refused instead.
  else if (typeof ts === 'string' && RFC3339.test(ts)) ms = isCalendarDateTime(ts) ? Date.parse(ts) : NaN
  else if (typeof ts === 'string' && /^\d{13}$/.test(ts)) ms = Number(ts)
  else return 'invalid_timestamp'
  if (!Number.isFinite(ms) || ms < MIN_READING_TS) return 'invalid_timestamp'
  if (ms > now + MAX_FUTURE_MS) return 'timestamp_in_future'
  return ms
}

/** Maps a channel through the device's configuration; unmapped channels keep their readings with nulls. */
function reading(device: DeviceInfo, mapping: ChannelMapping | undefined, channel: string, value: number, ts: number, unmapped: Set<string>): Reading {
  if (!mapping?.metric) unmapped.add(channel)
  return { accountId: device.accountId, deviceId: device.id, channel, ts, value, metric: mapping?.metric ?? null, environmentId: mapping?.environmentId ?? null }
}

/** Each channel's timestamps among `readings`: what parseBatch checks duplicates against once order is lost. */
function timesByChannel(readings: readonly Reading[]): Map<string, Set<number>> {
  const times = new Map<string, Set<number>>()
  for (const { channel, ts } of readings) {
    let set = times.get(channel)
    if (!set) times.set(channel, (set = new Set()))
    set.add(ts)
  }
  return times
}

export interface Parsed { readings: Reading[]; rejected: Rejection[]; unmapped: Set<string> }

export function parseBatch(items: readonly unknown[], device: DeviceInfo, now: number): Parsed {
  const readings: Reading[] = []
  const rejected: Rejection[] = []
  const unmapped = new Set<string>()
  // Duplicates: a device sends each channel's readings in time order, so each channel's latest timestamp is enough
  // until one arrives out of order; from then on the batch keeps every channel's timestamps in sets (built once).
  const latest = new Map<string, number>()
  let seen: Map<string, Set<number>> | undefined
  const reject = (index: number, code: RejectCode) => rejected.push({ index, code, message: MESSAGES[code] })
  for (let index = 0; index < items.length; index++) {
    const item = items[index] as Record<string, unknown> | null
    if (item === null || typeof item !== 'object' || Array.isArray(item)) { reject(index, 'invalid_reading'); continue }
    let extra = false
    for (const key in item) if (key !== 'channel' && key !== 'value' && key !== 'ts') { extra = true; break }
    if (extra) { reject(index, 'invalid_reading'); continue }
    const { channel, value } = item
    if (typeof channel !== 'string') { reject(index, 'invalid_channel'); continue }
    // A configured channel's key has the same shape (the device schema's pattern): only unknown ones are tested.
    const mapping = device.channels.get(channel)
    if (!mapping && !CHANNEL.test(channel)) { reject(index, 'invalid_channel'); continue }
    if (typeof value !== 'number' || !isReadingValue(value)) { reject(index, 'invalid_value'); continue }
    const ts = parseTimestamp(item.ts, now)
    if (typeof ts === 'string') { reject(index, ts); continue }
    if (!seen) {
      const last = latest.get(channel)
      if (last === undefined || ts > last) latest.set(channel, ts)
      else seen = timesByChannel(readings)
    }
    if (seen) {
      let times = seen.get(channel)
      if (!times) seen.set(channel, (times = new Set()))
      else if (times.has(ts)) { reject(index, 'duplicate_reading'); continue }
      times.add(ts)
    }
    readings.push(reading(device, mapping, channel, value, ts, unmapped))
  }
  return { readings, rejected, unmapped }
}

export interface PingProblem { path: string; message: string }

/** What a ping with any bad field is refused with (HTTP 422, MQTT's errors topic), its problems beside it. */
export const PING_REFUSED = 'The ping carries no valid readings.'

/**
 * `/sensors/ping` fields: every field but `key` and `ts` is a channel whose value is a number in text
 * (constrained firmware builds a URL, not JSON). Any bad field refuses the whole ping: it answers 204 only.
 */
export function parsePing(fields: Record<string, unknown>, device: DeviceInfo, now: number, where: string): { parsed?: Parsed; problems: PingProblem[] } {
  const ts = parseTimestamp(fields.ts === undefined ? undefined : typeof fields.ts === 'string' && /^\d+$/.test(fields.ts) ? Number(fields.ts) : fields.ts, now)
  const readings: Reading[] = []
  const unmapped = new Set<string>()
  let channels = 0
  let channelProblems: PingProblem[] | undefined
  // One pass over the fields, on every ping: the problems about the whole ping are listed first, below.
  for (const channel in fields) {
    if (channel === 'key' || channel === 'ts') continue
    channels++
    const raw = fields[channel]
    const value = typeof raw === 'number' ? raw : typeof raw === 'string' && JSON_NUMBER.test(raw) ? Number(raw) : NaN
    // A configured channel's key has the same shape (the device schema's pattern): only unknown ones are tested.
    const mapping = device.channels.get(channel)
    if (!mapping && !CHANNEL.test(channel)) (channelProblems ??= []).push({ path: `${where}/${channel}`, message: MESSAGES.invalid_channel })
    else if (!isReadingValue(value)) (channelProblems ??= []).push({ path: `${where}/${channel}`, message: MESSAGES.invalid_value })
    else if (typeof ts === 'number') readings.push(reading(device, mapping, channel, value, ts, unmapped))
  }
  const problems: PingProblem[] = []
  if (typeof ts === 'string') problems.push({ path: `${where}/ts`, message: MESSAGES[ts] })
  if (channels === 0) problems.push({ path: where, message: 'send at least one channel, e.g. t1=27.5' })
  if (channels > MAX_PING_CHANNELS) problems.push({ path: where, message: `at most ${MAX_PING_CHANNELS} channels per ping` })
  if (channelProblems) problems.push(...channelProblems)
  return problems.length ? { problems } : { parsed: { readings, rejected: [], unmapped }, problems }
}
