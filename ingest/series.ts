// The series catalogue (table reading_series, in the records database whichever store holds the readings): each
// (account, device, channel, metric, environment) readings were stored under, with a small integer id. A series is
// registered before its first reading is written, so the catalogue never lacks a series the store holds: the
// count of series a filter matches is an upper bound of the series a query can meet (ingest/planner.ts).
import type { Database } from '../db/client.ts'
import type { Reading, ReadingsFilter } from './stores/interface.ts'

/** The filter's series part: which series a query may meet, whatever its window. */
export type SeriesFilter = Pick<ReadingsFilter, 'accountId' | 'deviceId' | 'channel' | 'metric' | 'environmentId'>

export interface SeriesRow { id: number; channel_id: number; device_id: string; channel: string; metric: string | null; environment_id: string | null }

interface Known { accountId: string; metric: string | null; environmentId: string | null; id: number; channelId: number }

/** Per reading, in order: its series' id and its channel's (reading_channels.id: what readings are unique on). */
export interface SeriesIds { series: number[]; channels: number[] }

/**
 * Called with series about to be registered (ids taken, channels known) before any process can see them, so before
 * any reading of theirs is stored: what it records of them holds from their first reading on (ingest/kept-latest.ts
 * makes their latest entries, as having none).
 */
export type BeforeRegistering = (series: readonly SeriesRow[]) => Promise<void>

/** Series cached per device and channel, past which a cache starts over (bounds memory, as the ILP prefixes do). */
const MAX_DEVICES = 100_000

export class SeriesCatalogue {
  /** device → channel → the series last seen there (a channel's mapping rarely changes, so one entry is enough). */
  private readonly known = new Map<string, Map<string, Known>>()

  /** Per account, how many registrations of its series this catalogue made (registeredCount). */
  private readonly registrations = new Map<string, number>()

  constructor(private readonly database: Pick<Database, 'query'>) {}

  /**
   * How many times this catalogue (this process) registered series of the account: changed once a registration is in
   * the catalogue, before its readings are written, so a list of the account's series made after reading it holds
   * every series registered here before then (kept-latest.ts keeps lists by it).
   */
  registeredCount(accountId: string): number {
    return this.registrations.get(accountId) ?? 0
  }

  /**
   * The series and channel ids of each reading, in order; series not seen before are registered at once, those not
   * registered yet after `beforeRegistering` ran for them.
   */
  async idsOf(readings: readonly Reading[], beforeRegistering?: BeforeRegistering): Promise<SeriesIds> {
    // Plain arrays, as the SQL store binds them (int4[]): no copy per batch.
    const ids: SeriesIds = { series: new Array<number>(readings.length), channels: new Array<number>(readings.length) }
    let missing: Reading[] | undefined
    for (let i = 0; i < readings.length; i++) {
      const hit = this.cached(readings[i]!)
      if (hit === undefined) (missing ??= []).push(readings[i]!)
      else { ids.series[i] = hit.id; ids.channels[i] = hit.channelId }
    }
    if (!missing) return ids
    // The cache keeps one series per channel: a batch whose channel changed mapping within it takes its ids from
    // the registration itself.
    const registered = await this.register(missing, beforeRegistering)
    for (let i = 0; i < readings.length; i++) {
      if (ids.series[i]) continue
      const known = registered.get(seriesKey(readings[i]!))!
      ids.series[i] = known.id; ids.channels[i] = known.channelId
    }
    return ids
  }

  /** How many series the filter matches: an upper bound of the series any query with it meets. */
  async count(filter: SeriesFilter): Promise<number> {
    const params: unknown[] = []
    const rows = await this.database.query<{ n: number }>(`select count(*)::int as n from reading_series where ${seriesWhere(filter, params)}`, params)
    return Number(rows[0]?.n ?? 0)
  }

  /** The metrics of the series the filter matches, without null, in byte order. */
  async metrics(filter: SeriesFilter): Promise<string[]> {
    const params: unknown[] = []
    const rows = await this.database.query<{ metric: string }>(`select distinct metric collate "C" as metric from reading_series where ${seriesWhere(filter, params)} and metric is not null order by 1`, params)
    return rows.map((r) => r.metric)
  }

  /** The series the filter matches. */
  async list(filter: SeriesFilter): Promise<SeriesRow[]> {
    const params: unknown[] = []
    return this.database.query<SeriesRow>(`select id, channel_id, device_id, channel, metric, environment_id from reading_series where ${seriesWhere(filter, params)}`, params)
  }

  /**
   * Registers the series of readings stored before the catalogue existed (a QuestDB table written by an earlier
   * version), once per `marker`: `load` lists them, one reading-shaped row per series. They hold readings already, so
   * nothing runs before registering them.
   */
  async backfillOnce(marker: string, load: () => Promise<Reading[]>): Promise<void> {
    const done = await this.database.query(`select 1 from platform_settings where key = $1`, [marker])
    if (done.length) return
    const series = await load()
    for (let i = 0; i < series.length; i += 5_000) await this.idsOf(series.slice(i, i + 5_000))
    await this.database.query(`insert into platform_settings (key, value) values ($1, $2) on conflict do nothing`, [marker, new Date().toISOString()])
  }

  private cached(r: Reading): Known | undefined {
    const hit = this.known.get(r.deviceId)?.get(r.channel)
    return hit && hit.metric === r.metric && hit.environmentId === r.environmentId && hit.accountId === r.accountId ? hit : undefined
  }

  private remember(deviceId: string, channel: string, known: Known) {
    let channels = this.known.get(deviceId)
    if (!channels) {
      if (this.known.size >= MAX_DEVICES) this.known.clear()
      this.known.set(deviceId, (channels = new Map()))
    }
    channels.set(channel, known)
  }

  private async register(readings: readonly Reading[], beforeRegistering?: BeforeRegistering): Promise<Map<string, Known>> {
    const unique = new Map<string, Reading>()
    for (const r of readings) unique.set(seriesKey(r), r)
    const list = [...unique.values()]
    // The channel first: a series names its channel. Inserted where absent in key order: writers registering the same
    // new series at once (the first batches of a fleet, several in flight) then wait for one another instead of
    // deadlocking, which the series insert did in join order (23 of its deadlocks failed the store writes of one
    // bench run).
    await this.database.query(`insert into reading_channels (device_id, channel)
      select distinct d, c from unnest($1::text[], $2::text[]) as i(d, c) order by 1, 2 on conflict do nothing`, [list.map((r) => r.deviceId), list.map((r) => r.channel)])
    const rows = await this.registered(list)
    const found = new Set(rows.map(keyOfRow))
    const absent = [...unique].filter(([key]) => !found.has(key)).map(([, r]) => r)
    if (absent.length) {
      // Their ids are taken first, and `beforeRegistering` runs before the insert makes them visible: no process can
      // write into a series until it has.
      const planned = (await this.database.query<SeriesRow & { account_id: string }>(`select nextval(pg_get_serial_sequence('reading_series', 'id'))::int as id, ch.id as channel_id,
          i.a as account_id, i.d as device_id, i.c as channel, i.m as metric, i.e as environment_id
        from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) as i(a, d, c, m, e)
          join reading_channels ch on ch.device_id = i.d and ch.channel = i.c`, columnsOf(absent))).map((p) => ({ ...p, id: Number(p.id), channel_id: Number(p.channel_id) }))
      await beforeRegistering?.(planned)
      await this.database.query(`insert into reading_series (id, account_id, device_id, channel, metric, environment_id, channel_id) overriding system value
        select * from unnest($1::int4[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int4[]) order by 2, 3, 4, 5, 6
        on conflict do nothing`, [planned.map((p) => p.id), planned.map((p) => p.account_id), planned.map((p) => p.device_id), planned.map((p) => p.channel), planned.map((p) => p.metric), planned.map((p) => p.environment_id), planned.map((p) => p.channel_id)])
      for (const accountId of new Set(absent.map((r) => r.accountId))) this.registrations.set(accountId, this.registeredCount(accountId) + 1)
      // Read back: a series another process registered at the same moment is not returned by an insert (it was not
      // visible to that statement), and its id is the one that counts.
      rows.push(...await this.registered(absent))
    }
    const ids = new Map<string, Known>()
    for (const row of rows) {
      ids.set(keyOfRow(row),
        { accountId: row.account_id, metric: row.metric ?? null, environmentId: row.environment_id ?? null, id: Number(row.id), channelId: Number(row.channel_id) })
    }
    for (const [key, r] of unique) {
      const known = ids.get(key)
      if (known === undefined) throw new Error(`series of device ${r.deviceId} channel ${r.channel} was not registered`)
      // Remembered under the reading's own strings: the hot path compares them by identity first.
      this.remember(r.deviceId, r.channel, { ...known, accountId: r.accountId, metric: r.metric, environmentId: r.environmentId })
    }
    return ids
  }

  /** The registered series among `series`. */
  private registered(series: readonly Reading[]) {
    return this.database.query<SeriesRow & { account_id: string }>(`select s.id, s.channel_id, s.account_id, s.device_id, s.channel, s.metric, s.environment_id
      from reading_series s join unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) as i(a, d, c, m, e)
        on s.account_id = i.a and s.device_id = i.d and s.channel = i.c and s.metric is not distinct from i.m and s.environment_id is not distinct from i.e`, columnsOf(series))
  }
}

type SeriesFields = Pick<Reading, 'accountId' | 'deviceId' | 'channel' | 'metric' | 'environmentId'>
const columnsOf = (series: readonly SeriesFields[]) => [series.map((r) => r.accountId), series.map((r) => r.deviceId), series.map((r) => r.channel), series.map((r) => r.metric), series.map((r) => r.environmentId)]
const seriesKey = (r: SeriesFields) => JSON.stringify([r.accountId, r.deviceId, r.channel, r.metric, r.environmentId])
const keyOfRow = (row: SeriesRow & { account_id: string }) => seriesKey({ accountId: row.account_id, deviceId: row.device_id, channel: row.channel, metric: row.metric ?? null, environmentId: row.environment_id ?? null })

/** The WHERE clause for a series filter, appending its parameters to `params` (numbered in order). */
export function seriesWhere(filter: SeriesFilter, params: unknown[], alias = ''): string {
  const clauses = [`${alias}account_id = $${params.push(filter.accountId)}`]
  if (filter.environmentId !== undefined) clauses.push(`${alias}environment_id = $${params.push(filter.environmentId)}`)
  if (filter.deviceId !== undefined) clauses.push(`${alias}device_id = $${params.push(filter.deviceId)}`)
  if (filter.channel !== undefined) clauses.push(`${alias}channel = $${params.push(filter.channel)}`)
  if (filter.metric !== undefined) clauses.push(`${alias}metric = $${params.push(filter.metric)}`)
  return clauses.join(' and ')
}
