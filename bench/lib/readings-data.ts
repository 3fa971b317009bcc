// Readings for the readings-query scenario: one environment's series at one reading a minute, loaded straight
// into the store our server reads (not through the API: 30 days of data would take the ingest path minutes),
// COPY into Postgres's sensor_readings, or our store's ILP writer into QuestDB's table.
import { once } from 'node:events'
import postgres from 'postgres'
import type { Reading } from '../../ingest/stores/interface.ts'
import { ilpReadingsWriter } from '../../ingest/stores/questdb.ts'
import { metricOf } from './setup.ts'

export const MINUTE = 60_000
export const DAY = 86_400_000

/** `channels` series (c0…, mapped to metrics as createDevices maps them) of one device in one environment. */
export interface Series { accountId: string; environmentId: string; deviceId: string; channels: number; from: number; to: number }

export const readingsIn = (s: Series) => s.channels * Math.floor((s.to - s.from) / MINUTE)

/** A day's curve per channel, rounded to 0.01 as a sensor reports it. */
const valueAt = (channel: number, minute: number) => Math.round((20 + channel * 10 + 5 * Math.sin((minute * 2 * Math.PI) / 1440)) * 100) / 100

function* readingsOf(s: Series): Generator<{ channel: string; metric: string; ts: number; value: number }> {
  const metrics = Array.from({ length: s.channels }, (_, c) => metricOf(c))
  for (let ts = s.from, minute = 0; ts < s.to; ts += MINUTE, minute++) {
    for (let c = 0; c < s.channels; c++) yield { channel: `c${c}`, metric: metrics[c]!, ts, value: valueAt(c, minute) }
  }
}

/** COPY of the series into sensor_readings, then ANALYZE (a live table has statistics; a fresh bulk load has none). */
export async function copyReadings(databaseUrl: string, s: Series): Promise<number> {
  const chunks: string[] = []
  let text = ''
  let rows = 0
  for (const r of readingsOf(s)) {
    text += `${s.accountId},${s.deviceId},${r.channel},${new Date(r.ts).toISOString()},${r.value},${r.metric},${s.environmentId}\n`
    if (++rows % 5000 === 0) { chunks.push(text); text = '' }
  }
  chunks.push(text)
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const stream = await sql`copy sensor_readings (account_id, device_id, channel, ts, value, metric, environment_id) from stdin with (format csv)`.writable()
    const finished = new Promise<void>((resolve, reject) => { stream.on('finish', resolve); stream.on('error', reject) })
    for (const chunk of chunks) if (!stream.write(chunk)) await once(stream, 'drain')
    stream.end()
    await finished
    await sql`analyze sensor_readings`
    return rows
  } finally {
    await sql.end()
  }
}

/** The series into a QuestDB table through our store's ILP writer, 10 000 rows a request. */
export async function sendReadings(ilp: string, table: string, s: Series): Promise<number> {
  const write = ilpReadingsWriter(ilp, table)
  let rows = 0
  let batch: Reading[] = []
  for (const r of readingsOf(s)) {
    batch.push({ accountId: s.accountId, deviceId: s.deviceId, channel: r.channel, metric: r.metric, environmentId: s.environmentId, ts: r.ts, value: r.value })
    if (batch.length === 10_000) { await write(batch); rows += batch.length; batch = [] }
  }
  await write(batch)
  return rows + batch.length
}
