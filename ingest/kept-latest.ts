// Each series' newest reading, kept in the shared store as writes land, for a store that keeps none of its own
// (issue 57 item 4). QuestDB finds a room's latest values with LATEST ON, which walks partitions back until it has
// passed every series: 1.5 s at p99 for a room of 160 series under the dense site's load, where the SQL store reads
// its reading_latest table in milliseconds. The SQL store keeps that table in the write's own transaction, so it is
// not wrapped (server wiring: src/deps.ts).
//
// Exactness: an entry is a series' newest reading, or that it has none, tagged with the epoch it holds for. Entries
// are made by reads of the store, and for a new series by its registration, and moved forward by writes (SharedStore's
// entries):
// - A series about to be registered in the catalogue has no reading stored (every write registers its series first),
//   and no process can write into it before the registration is seen: its entry is made then, as having none, before
//   the catalogue's insert (SeriesCatalogue.idsOf, which takes its id first). Two processes registering one series at
//   once each make an entry under the id they took; the one whose insert counts made its entry first, the other's id
//   is never used. Series registered from readings already stored (SeriesCatalogue.backfillOnce) get none.
// - A read claims the entries it finds not known (a claim of its own, which no answer uses), then asks the store to
//   have caught up with every write committed so far (ReadingsStore.caughtUp), reads it, and settles each claim it
//   still holds at the newer of what the read proves and what writes raised it to meanwhile. Over a window no
//   reading can lie after, a row is its series' newest reading; a series with no row in a complete first page over
//   all time has none; of any other it proves nothing, and its claim goes. A claim never settled (a read that
//   failed) is never an answer, and the next read claims it again.
// - Every write, once stored and before it is acknowledged, raises the entries of its series that are held, claimed
//   ones included, keeping their tag (an entry only moves forward, whichever comes last). Past registering, a write
//   never makes an entry: a write into a series whose entry is missing (the shared store lost it) may be a late
//   reading, and not its newest. A write that fails makes its series' entries not known (claimed, never settled): it
//   may have stored some of its readings.
// - The series a filter matches are listed from the catalogue and kept in this process under the epoch and the
//   account's catalogue version (catalogueKey) read before listing; every write that registers a series sets that
//   version anew once the catalogue holds the series, before it is acknowledged. A kept list is used where the same
//   read of the shared store as the entries finds both unchanged: a series whose reading was acknowledged before
//   the ask was registered before its version was set, so a list kept under that version (or a later one) was
//   listed after it was registered, and holds it. So does a list kept under this process's count of the account's
//   registrations (SeriesCatalogue.registeredCount), for series registered here without a write that sets the
//   version (the store's own registrations as it opens, a write through another wrapping of the store).
// So a write committed before a read's check is in what the read proves, and one after it raised the claim (or
// raises the entry next); either way the entry ends at the newest of them. A reading sent again replaces the one
// stored (QuestDB's dedup upsert): an equal order replaces too. Sent again under the channel's new mapping, it moves
// to another series: so a write takes over, from the channel's other series, every time from its series' oldest
// reading in the write to its newest (an entry group per channel), and those whose entry lies there, or is claimed
// (its read may meet a reading that moved), lose it; a read proves them again. An answer comes from the entries
// only when every series the filter matches has one of the current epoch, none at or after the window's end (the
// series' newest within the window is then not known) or before the raw readings' retention horizon (it may be
// gone).
//
// A writer that raised into its in-process fallback while Redis was unreachable (src/kv/fallback.ts) starts a new
// epoch once Redis answers again (or when it next writes or reads, if later), and entries of another epoch are not
// used (they missed its writes) until a read proves them again. While this process sees the shared store
// unreachable the store answers.
import { randomUUID } from 'node:crypto'
import { epochAfterOutage, primaryUp } from '../src/kv/fallback.ts'
import type { ClaimedEntry, RaisedEntry, SettledEntry, SharedStore } from '../src/kv/interface.ts'
import { MAX_FUTURE_MS } from '../src/records/rules.ts'
import { MIN_READING_TS } from './parse.ts'
import type { SeriesCatalogue, SeriesIds, SeriesRow } from './series.ts'
import { byteOrder, NO_DEADLINE, type LatestPosition, type RawRow, type ReadingsFilter, type ReadingsStore } from './stores/interface.ts'

const EPOCH_KEY = 'readings-latest:epoch'
const EPOCH_MS = 30 * 86_400_000
/** How long a read uses the epoch it read or made where the shared store held none (requests asking at once share it). */
const EPOCH_REUSE_MS = 1_000
/** An entry lasts this long after its last raise: a series silent longer is read from the store, and seeded again. */
const ENTRY_MS = 7 * 86_400_000
/** A filter matching more series than this is answered by the store: one round trip of the shared store stays small. */
const MAX_SERIES = 10_000
/** The order of "no reading at all": every reading's time is after MIN_READING_TS (2000). */
const NONE = 0
/**
 * An account's entries are seeded by one read of all its series at most this often (per window): a series the seeding
 * cannot prove (its newest before the raw readings' horizon) leaves its rooms to be read one by one, not the account
 * again at every ask.
 */
const ACCOUNT_SEED_SPACING_MS = 60_000
const entryKey = (seriesId: number) => `readings-latest:${seriesId}`
/**
 * An account's catalogue version: set anew by every write that registers a series of it, once the catalogue holds
 * the series and before the write is acknowledged. A list of series kept under the version (and epoch) the shared
 * store still holds is the catalogue's list now (see latest()).
 */
const catalogueKey = (accountId: string) => `readings-latest:catalogue:${accountId}`
/** Series kept in lists at most, all filters together (each list holds up to MAX_SERIES); past it the lists start over. */
const MAX_LISTED_SERIES = 1_000_000
/** The group of a channel's entries, one per series it was stored under. */
const channelGroup = (channelId: number) => `readings-latest:channel:${channelId}`
const seriesOf = (r: { device_id: string; channel: string; metric: string | null; environment_id: string | null }) => JSON.stringify([r.device_id, r.channel, r.metric, r.environment_id])
const channelOf = (r: { device_id: string; channel: string }) => `${r.device_id}\u0000${r.channel}`

export interface KeptLatestOptions {
  /** Where the raw readings' retention ends now (ingest/planner.ts retentionHorizons): older readings may be gone. */
  rawHorizon: () => number
  /** Called once per answer, with where it came from. */
  onAnswer?: (source: 'kept' | 'store') => void
}

/** `store` with each series' newest reading kept in `shared` as it is written, and latest() answered from it where it can be. */
export function keepingLatest(store: ReadingsStore, shared: SharedStore, catalogue: Pick<SeriesCatalogue, 'idsOf' | 'list' | 'registeredCount'>, options: KeptLatestOptions): ReadingsStore {
  const up = () => primaryUp(shared)
  const outage = epochAfterOutage(shared, EPOCH_KEY, EPOCH_MS)
  let epoch: { value: Promise<string>; readAt: number } | undefined

  /** One read at a time: requests asking at once in this process (a dashboard's rooms after a start) share it. */
  const currentEpoch = (): Promise<string> => {
    const now = Date.now()
    if (epoch && now - epoch.readAt < EPOCH_REUSE_MS) return epoch.value
    const value = (async () => {
      const held = await shared.get(EPOCH_KEY)
      if (held) return held
      // Two processes starting one at once each set their own; the entries of the one overwritten are not used.
      const made = randomUUID()
      await shared.set(EPOCH_KEY, made, EPOCH_MS)
      return made
    })()
    epoch = { value, readAt: now }
    value.catch(() => { if (epoch?.value === value) epoch = undefined })
    return value
  }
  /** Once the shared store answers again after this process raised into its fallback, every entry kept before goes. */
  const afterOutage = async () => {
    if (await outage.renew()) epoch = undefined
  }

  const answerFromKept = (series: readonly SeriesRow[], held: readonly (string | null)[], current: string, filter: ReadingsFilter): RawRow[] | undefined => {
    const horizon = options.rawHorizon()
    const newest = new Map<string, RawRow>()
    for (let i = 0; i < series.length; i++) {
      const entry = held[i]
      if (!entry) return undefined
      // Claimed (a read is finding it out) or of another epoch: not known.
      const [order, tag, value] = entry.split(' ')
      if (tag !== current) return undefined
      const ts = Number(order)
      if (ts === NONE) continue
      if (ts >= filter.to || ts < horizon) return undefined
      if (ts < filter.from) continue
      const s = series[i]!
      const key = channelOf(s)
      const other = newest.get(key)
      // A channel whose mapping changed has several series: its newest reading is the newest of theirs. Two at one
      // time are one reading sent again under a new mapping, and which of them the store holds is for it to say.
      if (other?.ts === ts) return undefined
      if (!other || other.ts < ts) newest.set(key, { ts, device_id: s.device_id, channel: s.channel, metric: s.metric, environment_id: s.environment_id, value: Number(value) })
    }
    return [...newest.values()].sort((a, b) => byteOrder(a.device_id, b.device_id) || byteOrder(a.channel, b.channel))
  }

  /**
   * What a read over `filter` proves of each series, as settled entries: a row's series has it as its newest reading;
   * a series with no row in a complete first page over all time has none; any other is not known (no order).
   */
  const proven = (series: readonly SeriesRow[], rows: readonly RawRow[], filter: ReadingsFilter, complete: boolean): SettledEntry[] => {
    const found = new Map(rows.map((row) => [seriesOf(row), row]))
    const answered = new Set(rows.map(channelOf))
    const none = complete && filter.from <= MIN_READING_TS
    return series.map((s): SettledEntry => {
      const row = found.get(seriesOf(s))
      if (row) return [entryKey(s.id), row.ts, String(row.value)]
      // A channel answered by another of its series (its mapping changed) says nothing of this one's newest.
      return none && !answered.has(channelOf(s)) ? [entryKey(s.id), NONE, 'none'] : [entryKey(s.id), undefined, '']
    })
  }

  /**
   * Reads the store (`read`, over `filter`) and makes its answer the entries of `series` where it proves them: those
   * not known are claimed first, the read comes after every write committed by then, and the claims are settled
   * with what it proves (see the top).
   */
  const readAndSeed = async (series: readonly SeriesRow[], filter: ReadingsFilter, limit: number, after: LatestPosition | undefined, current: string, read: () => Promise<RawRow[]>) => {
    const claim = `?${randomUUID()}`
    await shared.claimEntries(series.map((s) => [entryKey(s.id), channelGroup(s.channel_id)]), claim, current, ENTRY_MS)
    const seeding = up() && await store.caughtUp()
    const rows = await read()
    // A claim left unsettled (a read that failed, a store behind) is never an answer, and the next read claims it again.
    if (seeding && up()) await shared.settleEntries(proven(series, rows, filter, !after && rows.length < limit), claim, current, ENTRY_MS)
    return rows
  }

  /**
   * Seeds the entries of every series of the filter's account over its window, once for all the requests that ask
   * meanwhile: a dashboard's rooms are asked for within seconds of one another after a start, and each room read
   * alone took about as long as the whole account does (QuestDB's LATEST ON walks back until it has passed every
   * series, and at a dense site all of them report every few seconds). Bounded as a room's is, at MAX_SERIES.
   */
  const accountSeeds = new Map<string, { done: Promise<unknown>; at: number }>()
  /**
   * The series of filters asked lately, kept with the epoch and catalogue version (catalogueKey) they were listed
   * under: a room's latest values are then one round trip of the shared store, where listing its series from the
   * records database at every ask was a second wait in a busy process (the dense site: a room's latest p99 119 ms).
   */
  const lists = new Map<string, { epoch: string; version: string; registered: number; series: readonly SeriesRow[]; keys: string[] }>()
  let listedSeries = 0
  const seedAccount = (filter: ReadingsFilter, current: string, signal: AbortSignal): Promise<unknown> => {
    const key = `${filter.accountId} ${filter.from} ${filter.to}`
    const last = accountSeeds.get(key)
    if (last && Date.now() - last.at < ACCOUNT_SEED_SPACING_MS) return last.done
    if (accountSeeds.size > 10_000) accountSeeds.clear()
    const account: ReadingsFilter = { accountId: filter.accountId, from: filter.from, to: filter.to }
    const done = (async () => {
      const series = await catalogue.list(account)
      if (series.length > MAX_SERIES) return
      const limit = series.length + 1
      await readAndSeed(series, account, limit, undefined, current, () => store.latest(account, limit, undefined, signal))
    })().catch(() => {})
    accountSeeds.set(key, { done, at: Date.now() })
    return done
  }

  /**
   * The entries of series about to be registered (SeriesCatalogue.idsOf), made before any process can write into them:
   * none of them has a reading, and every write into one raises its entry from there. Without them a site's latest
   * values waited for a read of the store after every start (issue 57: 1.0 s at p99 where the dense site's first
   * dashboards asked at once). Where the shared store fails, they are left unmade: a read proves them later.
   */
  const entriesOfNew = async (series: readonly SeriesRow[]) => {
    if (!up()) return
    try {
      await afterOutage()
      const current = await currentEpoch()
      const claim = `?${randomUUID()}`
      await shared.claimEntries(series.map((s) => [entryKey(s.id), channelGroup(s.channel_id)]), claim, current, ENTRY_MS)
      await shared.settleEntries(series.map((s): SettledEntry => [entryKey(s.id), NONE, 'none']), claim, current, ENTRY_MS)
    } catch {
      // Not made: the next read of these series claims and proves them.
    }
  }

  /** The entries of the series of a write made not known (claimed, and never settled): a read proves them again. */
  const unknown = async (ids: SeriesIds) => {
    const claimed = new Map<string, ClaimedEntry>()
    for (let i = 0; i < ids.series.length; i++) claimed.set(entryKey(ids.series[i]!), [entryKey(ids.series[i]!), channelGroup(ids.channels[i]!)])
    try {
      // Kept for no tag: a claim of its own, whatever the entry held.
      await shared.claimEntries([...claimed.values()], `?${randomUUID()}`, `?${randomUUID()}`, ENTRY_MS)
      outage.wrote()
    } catch {
      // The entries stay as they were: a reading the failed write stored anyway is missed by the latest answers until
      // its series is written again or read (a retry of the write, as every client does, raises them).
    }
  }

  return Object.assign(Object.create(store) as ReadingsStore, {
    async write(readings: Parameters<ReadingsStore['write']>[0]) {
      if (!readings.length) return store.write(readings)
      // Series new to the catalogue are registered here, their entries made first (entriesOfNew); the store's write
      // then finds them in the catalogue's cache.
      let registering = false
      const ids = await catalogue.idsOf(readings, (series) => {
        registering = true
        return entriesOfNew(series)
      })
      if (registering) {
        // After the catalogue's insert, before the write is acknowledged: every list of these accounts' series kept by
        // any process is listed again. As raises, into the fallback while Redis is unreachable, and then the epoch
        // after the outage voids every list kept meanwhile.
        await shared.setMany([...new Set(readings.map((r) => catalogueKey(r.accountId)))], randomUUID(), EPOCH_MS)
        outage.wrote()
      }
      try {
        await store.write(readings)
      } catch (error) {
        // A write that failed may still have stored some of its readings: its series' entries are no longer known.
        await unknown(ids)
        throw error
      }
      await afterOutage()
      // Of two readings of a channel at one time, the later is kept, as QuestDB's dedup upsert keeps it (the store
      // these entries are kept for: src/deps.ts). The SQL store keeps the first; over it, a reading sent again at the
      // same time with another value or mapping would leave entries the store does not hold.
      const written = new Map<number, { newest: number; oldest: number }>()
      for (let i = 0; i < readings.length; i++) {
        const ts = readings[i]!.ts
        const series = written.get(ids.series[i]!)
        if (!series) written.set(ids.series[i]!, { newest: i, oldest: ts })
        else {
          if (readings[series.newest]!.ts <= ts) series.newest = i
          if (ts < series.oldest) series.oldest = ts
        }
      }
      // In the order of each series' newest reading in the batch: of two series taking over one time, the later's
      // entry is raised last, and removes the earlier's.
      const entries: RaisedEntry[] = []
      for (let i = 0; i < readings.length; i++) {
        const series = written.get(ids.series[i]!)!
        if (series.newest === i) entries.push([entryKey(ids.series[i]!), readings[i]!.ts, String(readings[i]!.value), channelGroup(ids.channels[i]!), series.oldest])
      }
      await shared.raiseEntries(entries, ENTRY_MS)
      outage.wrote()
    },

    async latest(filter: ReadingsFilter, limit: number, after?: LatestPosition, signal: AbortSignal = NO_DEADLINE): Promise<RawRow[]> {
      const fromStore = () => {
        options.onAnswer?.('store')
        return store.latest(filter, limit, after, signal)
      }
      if (!up() || filter.from >= filter.to) return fromStore()
      await afterOutage()
      const began = Date.now()
      const listKey = JSON.stringify([filter.accountId, filter.environmentId, filter.deviceId, filter.channel, filter.metric])
      const versionKey = catalogueKey(filter.accountId)
      // The filter's series kept from an earlier ask, with the entries, in one round trip: where the epoch and the
      // account's catalogue version are still the ones they were listed under, so is the list.
      const listedBefore = lists.get(listKey)
      let found: { series: readonly SeriesRow[]; keys: string[]; held: string | null; entries: (string | null)[] } | undefined
      if (listedBefore) {
        const [held, version, ...entries] = await shared.getMany([EPOCH_KEY, versionKey, ...listedBefore.keys])
        if (held === listedBefore.epoch && version === listedBefore.version && catalogue.registeredCount(filter.accountId) === listedBefore.registered) found = { ...listedBefore, held, entries }
      }
      if (!found) {
        // The version first, then the list: a list is at least as new as the version it is kept under.
        const registered = catalogue.registeredCount(filter.accountId)
        const [epochHeld, versionHeld] = await shared.getMany([EPOCH_KEY, versionKey])
        const version = versionHeld ?? randomUUID()
        if (!versionHeld) await shared.set(versionKey, version, EPOCH_MS)
        const series = await catalogue.list(filter)
        if (series.length > MAX_SERIES) return fromStore()
        const keys = series.map((s) => entryKey(s.id))
        if (epochHeld) {
          listedSeries += series.length - (lists.get(listKey)?.series.length ?? 0)
          if (listedSeries > MAX_LISTED_SERIES) {
            lists.clear()
            listedSeries = series.length
          }
          lists.set(listKey, { epoch: epochHeld, version, registered, series, keys })
        }
        const [held = null, ...entries] = await shared.getMany([EPOCH_KEY, ...keys])
        found = { series, keys, held, entries }
      }
      const { series, keys } = found
      /** The answer the entries give now, if they prove one. */
      const fromEntries = async () => {
        const [held, ...entries] = await shared.getMany([EPOCH_KEY, ...keys])
        return held ? answerFromKept(series, entries, held, filter) : undefined
      }
      const page = (kept: RawRow[]) => {
        const start = after ? kept.findIndex((r) => (byteOrder(r.device_id, after[0]) || byteOrder(r.channel, after[1])) > 0) : 0
        return start < 0 ? [] : kept.slice(start, start + limit)
      }
      const held = found.held
      const kept = held ? answerFromKept(series, found.entries, held, filter) : undefined
      if (kept) {
        options.onAnswer?.('kept')
        return page(kept)
      }
      // Only a read over a window no reading lies after proves entries; the entries it may prove are claimed first
      // (those not known), and it must read after every write committed by then.
      if (filter.to <= began + MAX_FUTURE_MS) return fromStore()
      // The epoch just read (a writer may hold one a second old), else a new one.
      const current = held ?? await currentEpoch()
      // A first page over all time of part of an account (a room, a device): the whole account's entries are seeded
      // by one read (seedAccount), and this answer comes from them where they now prove it. Over all time, a read
      // proves every series an entry, a reading or none, so the account's other rooms are then answered from them.
      const narrowed = filter.deviceId !== undefined || filter.channel !== undefined || filter.metric !== undefined || filter.environmentId !== undefined
      if (!after && narrowed && filter.from <= MIN_READING_TS) {
        await seedAccount(filter, current, signal)
        const seeded = await fromEntries()
        if (seeded) {
          // Not from entries as they stood when asked: counted as the store's answer, which it was, for the account.
          options.onAnswer?.('store')
          return page(seeded)
        }
      }
      return readAndSeed(series, filter, limit, after, current, fromStore)
    },
  })
}
