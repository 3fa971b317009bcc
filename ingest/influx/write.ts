// Line-protocol points to a device's readings: each numeric field of a point is a reading on the channel of its
// series (series-channel.ts), mapped through the device's configuration exactly as a JSON reading is (parse.ts).
import type { Reading } from '../stores/interface.ts'
import type { ChannelMapping, DeviceInfo } from '../devices.ts'
import { isReadingValue, MIN_READING_TS, READING_VALUE_RULE, type Parsed } from '../parse.ts'
import { MAX_FUTURE_MS } from '../../src/records/rules.ts'
import { lineText, type LineError, type NumericField, type ParsedLines } from './line-protocol.ts'
import { seriesChannel } from './series-channel.ts'

export interface LineReadings {
  parsed: Parsed
  /** Lines refused: those that broke the grammar, and those whose timestamp the store does not take. */
  errors: LineError[]
}

/**
 * The readings of `lines` for `device`; a point without a timestamp takes `now`. A series written twice at one
 * millisecond in a body keeps the later value, as InfluxDB keeps the later point (across requests, the first stored
 * stays: readings are unique on device, channel and ts, and a retry must add nothing).
 */
export function linesToReadings(body: string, lines: ParsedLines, device: DeviceInfo, now: number): LineReadings {
  const readings: Reading[] = []
  const unmapped = new Set<string>()
  const errors = lines.errors.slice()
  // Each channel of the body once: its mapping, found on its first reading, and its latest timestamp (as parseBatch:
  // the latest suffices while readings arrive in order; past the first that does not, every (channel, ts) is
  // indexed to find the reading a later one replaces). One lookup per reading where a mapping lookup, the unmapped
  // set and a map of latest timestamps took four: the mapping of the bench's bodies went from 0.08 to 0.05 µs per
  // reading (bench/lineproto-parse.ts, lp less lp-parse).
  const channels = new Map<string, { mapping: ChannelMapping | undefined; latest: number }>()
  let index: Map<string, number> | undefined
  for (const point of lines.points) {
    const ts = point.ts ?? now
    if (ts < MIN_READING_TS || ts > now + MAX_FUTURE_MS) {
      errors.push({ line: point.line, text: lineText(body, point.start, point.end), reason: ts < MIN_READING_TS ? 'timestamp before 2000-01-01 (check the precision)' : 'timestamp more than 5 minutes in the future (check the precision)' })
      continue
    }
    const beyond = fieldBeyondReadings(point.fields)
    if (beyond) {
      errors.push({ line: point.line, text: lineText(body, point.start, point.end), reason: `value of field key "${beyond.key}" is beyond what a reading holds (${READING_VALUE_RULE})` })
      continue
    }
    const { series } = point
    for (const field of point.fields) {
      // Kept with the series (the parser's SeriesCache): a collector's next write costs a lookup, not a hash.
      let channel = series.channels.get(field.key)
      if (channel === undefined) series.channels.set(field.key, (channel = seriesChannel(series.measurement, series.tags, field.key)))
      let seen = channels.get(channel)
      if (seen === undefined) {
        const mapping = device.channels.get(channel)
        if (!mapping?.metric) unmapped.add(channel)
        channels.set(channel, (seen = { mapping, latest: -Infinity }))
      }
      const { mapping } = seen
      const reading: Reading = { accountId: device.accountId, deviceId: device.id, channel, ts, value: field.value, metric: mapping?.metric ?? null, environmentId: mapping?.environmentId ?? null }
      if (!index) {
        if (ts > seen.latest) { seen.latest = ts; readings.push(reading); continue }
        index = new Map(readings.map((r, i) => [`${r.channel}\n${r.ts}`, i]))
      }
      const key = `${channel}\n${ts}`
      const earlier = index.get(key)
      if (earlier === undefined) { index.set(key, readings.length); readings.push(reading) } else readings[earlier] = reading
    }
  }
  errors.sort((a, b) => a.line - b.line)
  return { parsed: { readings, rejected: [], unmapped }, errors }
}

/** A field whose value InfluxDB would take but a reading may not hold (parse.ts: bucket sums must stay finite). */
function fieldBeyondReadings(fields: readonly NumericField[]): NumericField | undefined {
  for (let i = 0; i < fields.length; i++) if (!isReadingValue(fields[i]!.value)) return fields[i]
  return undefined
}
