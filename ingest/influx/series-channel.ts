// The channel a line-protocol series is stored under. A series is (measurement, tag set, field), as InfluxDB counts
// them; each is one channel of the writing device, so it is mapped to a metric and an environment like any channel.
// The key must fit the channel key rule every channel keeps (1–32 of `A–Z a–z 0–9 _ . -`: the device schema's
// pattern), and be the same for the same series whatever the tags' order or escaping:
// - `measurement.field` when there are no tags, both are made of `A–Z a–z 0–9 _ -` and it fits in 32 characters
//   (`cpu.usage_idle`, `weather.temp`): what a Telegraf input without tags, or a sensor's own client, writes;
// - otherwise a readable prefix and a hash: the measurement, the tag values in the order of their keys and the
//   field, each with every run of other characters made `_`, joined by `.` and cut to 21 characters, then `..` and
//   9 characters of the base64url SHA-256 of the exact series (measurement, tags sorted by key, field). Home
//   Assistant's `°C,domain=sensor,entity_id=living_room value=21.5` is `_C.sensor.living_room..` and its hash.
// The two forms cannot meet: only the second holds `..`. Nine base64url characters are 54 bits: a device writing
// 10,000 series has about one chance in 3·10⁸ of two sharing a key.
import { createHash } from 'node:crypto'

export const MAX_CHANNEL_CHARS = 32
const PLAIN = /^[A-Za-z0-9_-]+$/
const OTHER = /[^A-Za-z0-9_-]+/g
const PREFIX_CHARS = 21
const HASH_CHARS = 9

/** `tags` alternate keys and values, in any order. */
export function seriesChannel(measurement: string, tags: readonly string[], field: string): string {
  if (tags.length === 0 && measurement.length + field.length < MAX_CHANNEL_CHARS && PLAIN.test(measurement) && PLAIN.test(field)) return `${measurement}.${field}`
  const pairs: [string, string][] = []
  for (let i = 0; i < tags.length; i += 2) pairs.push([tags[i]!, tags[i + 1]!])
  pairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const readable = [measurement, ...pairs.map(([, value]) => value), field].map((part) => part.replace(OTHER, '_')).join('.')
  const hash = createHash('sha256').update(JSON.stringify([measurement, pairs, field])).digest('base64url').slice(0, HASH_CHARS)
  return `${readable.slice(0, PREFIX_CHARS)}..${hash}`
}
