// Readings for the readings-query scenario: one environment's series at one reading a minute, loaded straight
// into the store our server reads (not through the API: 30 days of data would take the ingest path minutes),
// our SQL store's write into Postgres, or our store's ILP writer into QuestDB's table.
import { openPostgres } from '../../db/client.ts'
import { SeriesCatalogue } from '../../ingest/series.ts'
import type { Reading } from '../../ingest/stores/interface.ts'
import { questdbStore } from '../../ingest/stores/questdb.ts'
import { loadConfig } from '../../src/config.ts'
import { sqlStore } from '../../ingest/stores/sql.ts'
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

/**
 * The series through our SQL store's own write (ingest/stores/sql.ts), 10 000 rows a statement: rollups, the
 * latest table and partitions are kept as the API would keep them, then ANALYZE (a live table has statistics).
 */
export async function storeReadings(databaseUrl: string, s: Series): Promise<number> {
  const database = await openPostgres(databaseUrl)
  const store = sqlStore(database)
  let rows = 0
  try {
    let batch: Reading[] = []
    for (const r of readingsOf(s)) {
      batch.push({ accountId: s.accountId, deviceId: s.deviceId, channel: r.channel, metric: r.metric, environmentId: s.environmentId, ts: r.ts, value: r.value })
      if (batch.length === 10_000) { await store.write(batch); rows += batch.length; batch = [] }
    }
    if (batch.length) { await store.write(batch); rows += batch.length }
    await database.query('analyze readings')
    return rows
  } finally {
    await store.close()
    await database.close()
  }
}

/**
 * The series into a QuestDB table through our QuestDB store's own write, 10 000 rows a request: each series
 * registered in the records database's catalogue, and each minute marked for the rollups, as ingest does (a table
 * written beside the store had neither: the API found no series, and on 7.4 read empty rollups).
 */
export async function sendReadings(ilp: string, pgUrl: string, table: string, s: Series, databaseUrl: string): Promise<number> {
  const records = await openPostgres(databaseUrl)
  const store = await questdbStore(loadConfig({}, { questdbIlp: ilp, questdbPgUrl: pgUrl, questdbTable: table }), new SeriesCatalogue(records), { records, log: (message, error) => console.error(message, error) })
  try {
    let rows = 0
    let batch: Reading[] = []
    for (const r of readingsOf(s)) {
      batch.push({ accountId: s.accountId, deviceId: s.deviceId, channel: r.channel, metric: r.metric, environmentId: s.environmentId, ts: r.ts, value: r.value })
      if (batch.length === 10_000) { await store.write(batch); rows += batch.length; batch = [] }
    }
    if (batch.length) await store.write(batch)
    return rows + batch.length
  } finally {
    await store.close()
    await records.close()
  }
}
