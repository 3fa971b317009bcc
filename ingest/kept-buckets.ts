// Closed buckets kept (issue 57): a dashboard asks the same question every few seconds, and all that changed since
// it last asked is its newest bucket or two. A bucket the store has answered is kept, whole (every group of it), under
// the question that decides its rows (the account, the filters, the interval, aggregates and grouping, not the
// window or page), and the next ask reads from the store only the buckets that are not kept: the results cache the
// query frontends serving Grafana keep (Thanos, Cortex and Mimir split a query by interval and keep each part).
//
// Exactness: a kept bucket is used only while no write has touched its time since it was read, so an answer built
// from kept buckets is the answer of a read of its own. Every write, once stored, marks the minutes, five minutes,
// hours and days it touched, per account, in the shared store (Redis across processes; WRITE_MARK_MS), with a token
// of its own (markingWrites), before it is acknowledged (a process of a version before five-minute marks writes
// none of those: upgrading, stop those first, as for the rollups). A bucket is kept with the marks its time had
// before its read began, and used only while they are unchanged: a write marked later makes it read again. A write
// marked before is one the read must hold: the marks are read first, then the store is asked to have caught up with
// every write acknowledged so far (ReadingsStore.caughtUp: QuestDB applies its WAL a moment after acknowledging),
// and only then is the store read; where it has not caught up in time, nothing that read gives is kept (what was
// kept is still used). Nor is a bucket whose answer may still change in its last digits as rollups catch up with it
// (ReadingsStore.settling: QuestDB reads a minute its rollup marks name from the raw readings, whose sums round apart
// from the rollups').
//
// Only whole buckets are kept: a window's first and last bucket are partial when `from` or `to` fall inside them,
// and are read from the store each time. While the shared store is unreachable each process marks its writes in its
// own memory (src/kv/fallback.ts), so another process's kept buckets miss them: a process that marked into its
// fallback starts a new epoch once the shared store answers again (at its next write), and every bucket kept under
// the old one is read again; while this process sees the store unreachable nothing is kept or served. A bucket is
// kept for KEPT_MS at most, under the marks' own lifetime: a mark that expired reads as none, as before any write.
import { randomUUID } from 'node:crypto'
import { epochAfterOutage, primaryUp } from '../src/kv/fallback.ts'
import type { SharedStore } from '../src/kv/interface.ts'
import { bucketNumber, bucketStart, INTERVALS } from './planner.ts'
import { compareKeys, groupKey, type AggregationSpec, type BucketPosition, type BucketRow, type IntervalName, type ReadingsFilter, type ReadingsStore } from './stores/interface.ts'

const MINUTE_MS = 60_000
const FIVE_MINUTES_MS = 5 * MINUTE_MS
const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000
/**
 * How long a kept bucket may be used after its read began (see above). It was 2 minutes, when the staleness of a
 * process writing into its fallback was bounded by it alone: every room's walk then read all its buckets again every
 * 2 minutes.
 */
const KEPT_MS = 30 * 60_000
/** How long a write's marks last: longer than a bucket is kept, so a write after a bucket was read is always seen. */
const WRITE_MARK_MS = 3_600_000
/**
 * A token the shared store keeps while it keeps the marks: should it lose them (a Redis restarted empty, flushed),
 * the token read then differs from every kept bucket's, and nothing kept before is used.
 */
const EPOCH_KEY = 'readings-written:epoch'
const EPOCH_MS = 30 * DAY_MS
/** A read whose buckets span more marks than this is not kept: one round trip of the shared store stays small. */
const MAX_MARKS = 5_000

/** The grains a write marks, coarsest first: every interval's buckets are whole numbers of one of them. */
const MARK_GRAINS = [DAY_MS, HOUR_MS, FIVE_MINUTES_MS, MINUTE_MS] as const
/**
 * The grain of the marks a bucket of `interval` is checked against: the coarsest that divides it (minutes for 1m,
 * five minutes for 5m, 15m and 30m, hours for 1h to 12h, days for 1d and up). A dashboard's day in 5-minute buckets
 * reads 288 marks a page, where at minute grain it read 1,440 (issue 57: at the dense site the shared store's calls
 * took about 5 % of the server's CPU samples, most of them the walks' marks).
 */
const markGrain = (interval: IntervalName) => MARK_GRAINS.find((grain) => INTERVALS[interval] % grain === 0) ?? MINUTE_MS
const markKey = (accountId: string, grain: number, start: number) => `readings-written:${accountId}:${grain}:${start}`

/**
 * The store as writers use it: each write, once stored, marks what it touched (see above). Awaited before the write
 * resolves, so a reading acknowledged is one whose marks are set.
 */
export function markingWrites(store: ReadingsStore, shared: SharedStore): ReadingsStore {
  // Every bucket kept anywhere under the old epoch may lack what was marked only here.
  const outage = epochAfterOutage(shared, EPOCH_KEY, EPOCH_MS)
  return Object.assign(Object.create(store) as ReadingsStore, {
    async write(readings: Parameters<ReadingsStore['write']>[0]) {
      await store.write(readings)
      if (!readings.length) return
      await outage.renew()
      const keys = new Set<string>()
      let lastAccount: string | undefined
      let lastMinute = NaN
      // A batch is mostly one minute of one account: its keys are made once per change of either.
      for (const reading of readings) {
        const minute = Math.floor(reading.ts / MINUTE_MS) * MINUTE_MS
        if (minute === lastMinute && reading.accountId === lastAccount) continue
        lastMinute = minute
        lastAccount = reading.accountId
        for (const grain of MARK_GRAINS) keys.add(markKey(reading.accountId, grain, Math.floor(minute / grain) * grain))
      }
      await shared.setMany([...keys], randomUUID(), WRITE_MARK_MS)
      outage.wrote()
    },
  })
}

interface Kept { rows: BucketRow[]; marks: string; until: number }
/** A bucket being read from the store by some request: its rows once kept, undefined if that read keeps none of it. */
interface Pending { marks: string; rows: Promise<BucketRow[] | undefined> }
/** The buckets one read announced (by number), each with how to hand its waiters what the read kept. */
type Announced = Map<number, { entry: Pending; resolve: (rows: BucketRow[] | undefined) => void }>

/**
 * What the buckets a read covers looked like before it began: the marks of each, and whether what the store gives
 * after them may be kept (asked of the store only when a bucket is read from it: a page all kept asks nothing more).
 */
interface Snapshot { marks: (n: number) => string; keepable: () => Promise<((n: number) => boolean) | undefined> }

/** Identity strings are kept once each (interned) past this many distinct ones the table starts afresh. */
const MAX_INTERNED = 100_000

export class KeptBuckets {
  private readonly kept = new Map<string, Kept>()
  /**
   * Buckets a store read in flight will keep, under the marks they had before it began. A request that finds the
   * marks of such a bucket unchanged waits for that read instead of reading the bucket again: its rows are exact for
   * that request as kept ones are (see the top of the file). A dashboard is many people asking for the same room, and
   * its first ask, with nothing kept, takes seconds under load: at the dense site (issue 57), every ask of a room
   * while its first walk was in flight read the whole day again.
   */
  private readonly pending = new Map<string, Pending>()
  private rows = 0
  /** The rows kept now (each bucket counts one more, for its entry). */
  get size(): number { return this.rows }
  /** Every row kept now: a JSON page made only of these may be made of the same objects next time (rendered-pages.ts). */
  private readonly keptRows = new WeakSet<BucketRow>()
  /** Whether every row of `rows` is kept now (the rows of a page, the one past it included). */
  holdsAll(rows: readonly BucketRow[]): boolean {
    for (const row of rows) if (!this.keptRows.has(row)) return false
    return true
  }
  /**
   * One copy of each identity string (device, channel, metric, environment) of kept rows: a store's answer carries its
   * own copy in every row, and a kept row took 147 bytes that way, 76 sharing them (a million rows, Bun 1.3).
   */
  private readonly interned = new Map<string, string>()

  /** `maxRows`: the most rows kept at once (READINGS_KEPT_ROWS; 0 keeps none), the least recently used dropped first. */
  constructor(private readonly shared: SharedStore, private readonly maxRows: number, private readonly onRead: (rows: number, kept: number) => void = () => {}) {}

  /** `store` with its bucket reads answered from what is kept where it can be. */
  over(store: ReadingsStore): ReadingsStore {
    return Object.assign(Object.create(store) as ReadingsStore, {
      buckets: (filter: ReadingsFilter, spec: AggregationSpec, limit: number, after?: BucketPosition, skip = 0, signal?: AbortSignal) => this.buckets(store, filter, spec, limit, after, skip, signal),
    })
  }

  private async buckets(store: ReadingsStore, filter: ReadingsFilter, spec: AggregationSpec, limit: number, after: BucketPosition | undefined, skip: number, signal: AbortSignal | undefined): Promise<BucketRow[]> {
    const { interval } = spec
    const direct = () => store.buckets(filter, spec, limit, after, skip, signal)
    if (this.maxRows === 0 || skip > 0 || limit <= 0 || filter.from >= filter.to || !primaryUp(this.shared)) return direct()
    // The whole buckets of the window from `after`'s on (those before it are not asked for).
    let first = bucketNumber(interval, filter.from)
    if (bucketStart(interval, first) < filter.from) first++
    if (after) first = Math.max(first, bucketNumber(interval, after[0]))
    let last = bucketNumber(interval, filter.to - 1)
    if (bucketStart(interval, last + 1) > filter.to) last--
    const wholeFrom = bucketStart(interval, first)
    const wholeTo = bucketStart(interval, last + 1)
    if (first > last) return direct()
    const snapshot = await this.snapshot(store, filter.accountId, interval, wholeFrom, wholeTo)
    if (!snapshot) return direct()

    const question = `${filter.accountId}\u0000${filter.environmentId ?? ''}\u0000${filter.deviceId ?? ''}\u0000${filter.channel ?? ''}\u0000${filter.metric ?? '\u0001'}\u0000${interval}\u0000${spec.groupBy}\u0000${spec.aggregates.join(',')}`
    const keyOf = (n: number) => `${question}\u0000${n}`
    const now = Date.now()
    /** Whether what is kept of bucket `n` may answer now: within KEPT_MS, its marks unchanged. */
    const fresh = (entry: Kept | undefined, n: number) => entry !== undefined && entry.until > now && entry.marks === snapshot.marks(n)
    const usable = (n: number): Kept | undefined => {
      const entry = this.kept.get(keyOf(n))
      if (!entry) return undefined
      if (!fresh(entry, n)) {
        this.drop(keyOf(n), entry)
        return undefined
      }
      // Used: moved to the end of the order of use.
      this.kept.delete(keyOf(n))
      this.kept.set(keyOf(n), entry)
      return entry
    }
    /** The rows a read in flight is getting for bucket `n`, where its marks are those `n` has now. */
    const joinable = (n: number): Pending | undefined => {
      const entry = this.pending.get(keyOf(n))
      return entry && entry.marks === snapshot.marks(n) ? entry : undefined
    }
    const afterKey = after && ([after[1], after[2]] as const)
    /** Whether bucket `b` lies whole in the window (from `after`'s on): only those are kept. */
    const whole = (b: number) => b >= first && b <= last
    let keepable: ((n: number) => boolean) | undefined | null
    const out: BucketRow[] = []
    let fromStore = 0
    let fromKept = 0
    // From the window's first bucket (partial where `from` lies inside it), or `after`'s, to its last (partial alike).
    const final = bucketNumber(interval, filter.to - 1)
    let n = after ? Math.max(bucketNumber(interval, filter.from), bucketNumber(interval, after[0])) : bucketNumber(interval, filter.from)
    while (n <= final && out.length < limit) {
      let entry: { rows: BucketRow[] } | undefined = whole(n) ? usable(n) : undefined
      if (!entry && whole(n)) {
        const inFlight = joinable(n)
        const rows = inFlight && (await untilAborted(inFlight.rows, signal))
        if (rows) entry = { rows }
      }
      if (entry) {
        // `after`'s bucket: only its groups after `after`.
        let rows = entry.rows
        if (afterKey && bucketStart(interval, n) === after![0]) rows = rows.filter((row) => compareKeys(groupKey(row, spec.groupBy), [afterKey[0], afterKey[1]]) > 0)
        const taken = rows.slice(0, limit - out.length)
        fromKept += taken.length
        out.push(...taken)
        n++
        continue
      }
      // A run of buckets not kept (or kept but stale, or the window's partial first and last), read in one call: a
      // first ask reads the window as one read would, not its edges and middle one after another.
      let m = n
      while (m < final && !(whole(m + 1) && (fresh(this.kept.get(keyOf(m + 1)), m + 1) || joinable(m + 1)))) m++
      const runFrom = Math.max(filter.from, bucketStart(interval, n))
      const runTo = Math.min(filter.to, bucketStart(interval, m + 1))
      // `after` is in this run where its bucket is: a window starting inside its first bucket labels that bucket
      // before `from`, and comparing it with the run's start left the run to begin again at the bucket's first row.
      const runAfter = after && after[0] >= bucketStart(interval, n) ? after : undefined
      const wanted = limit - out.length
      const keepFrom = Math.max(n, first)
      const keepTo = Math.min(m, last)
      // Announced before anything is awaited, so a request arriving meanwhile waits for this read (`pending`).
      const announced = this.announce(keepFrom, keepTo, runAfter && bucketNumber(interval, runAfter[0]), snapshot, keyOf)
      let rows: BucketRow[]
      try {
        // Asked, once per request, before the store is read (see the top of the file); not for a partial bucket alone.
        if (keepable === undefined && keepFrom <= keepTo) keepable = (await snapshot.keepable()) ?? null
        // Buckets this read will not keep (the store not caught up, or rollups still settling them) are not waited
        // for: a waiter would read them itself after this read, at twice the time (QuestDB 9.3.2's newest buckets).
        const willKeep = keepable
        this.settle(announced, keyOf, (b) => !willKeep || !willKeep(b))
        rows = await store.buckets({ ...filter, from: runFrom, to: runTo }, spec, wanted, runAfter, 0, signal)
        if (keepable && keepFrom <= keepTo) this.keep(rows, wanted, n, m, keepFrom, keepTo, interval, runAfter, snapshot, keepable, keyOf, now)
      } finally {
        this.settle(announced, keyOf)
      }
      fromStore += rows.length
      out.push(...rows)
      n = m + 1
    }
    this.onRead(fromStore, fromKept)
    return out
  }

  /**
   * Of the buckets `n`..`m` a read answered (in order; its first and last may be partial), keeps those within
   * `keepFrom`..`keepTo` (whole in the window) that it answered whole: every one when fewer rows came than were asked
   * for, else those before the last row's bucket; never `after`'s (its groups up to `after` were left out), nor one
   * whose answer may still change as rollups catch up (`settled`). A bucket without readings is kept too, as no rows.
   */
  private keep(rows: BucketRow[], wanted: number, n: number, m: number, keepFrom: number, keepTo: number, interval: IntervalName, after: BucketPosition | undefined, snapshot: Snapshot, settled: (n: number) => boolean, keyOf: (n: number) => string, now: number): void {
    const lastWhole = rows.length < wanted ? m : rows.length ? bucketNumber(interval, rows[rows.length - 1]!.ts) - 1 : n - 1
    const skipped = after ? bucketNumber(interval, after[0]) : undefined
    let i = 0
    for (let b = n; b <= lastWhole; b++) {
      const start = i
      while (i < rows.length && bucketNumber(interval, rows[i]!.ts) === b) i++
      if (b < keepFrom || b > keepTo || b === skipped || !settled(b)) continue
      const key = keyOf(b)
      const old = this.kept.get(key)
      if (old) this.drop(key, old)
      const entry = { rows: rows.slice(start, i), marks: snapshot.marks(b), until: now + KEPT_MS }
      for (const row of entry.rows) {
        this.intern(row)
        this.keptRows.add(row)
      }
      this.kept.set(key, entry)
      this.rows += entry.rows.length + 1
    }
    for (const [key, entry] of this.kept) {
      if (this.rows <= this.maxRows) break
      this.drop(key, entry)
    }
  }

  /**
   * Marks buckets `from`..`to` (but `skipped`, whose groups up to `after` a read leaves out) as being read, where no
   * read in flight holds them under the same marks; returns how to tell their waiters what the read kept.
   */
  private announce(from: number, to: number, skipped: number | undefined, snapshot: Snapshot, keyOf: (n: number) => string): Announced {
    const announced: Announced = new Map()
    for (let b = from; b <= to; b++) {
      const marks = snapshot.marks(b)
      if (b === skipped || this.pending.get(keyOf(b))?.marks === marks) continue
      const { promise, resolve } = Promise.withResolvers<BucketRow[] | undefined>()
      const entry = { marks, rows: promise }
      this.pending.set(keyOf(b), entry)
      announced.set(b, { entry, resolve })
    }
    return announced
  }

  /**
   * Ends what announce() began, for the buckets `which` names (all by default): each waiter gets the bucket as this
   * read kept it, or undefined and reads it itself.
   */
  private settle(announced: Announced, keyOf: (n: number) => string, which: (n: number) => boolean = () => true): void {
    for (const [b, { entry, resolve }] of announced) {
      if (!which(b)) continue
      const kept = this.kept.get(keyOf(b))
      resolve(kept && kept.marks === entry.marks ? kept.rows : undefined)
      if (this.pending.get(keyOf(b)) === entry) this.pending.delete(keyOf(b))
      announced.delete(b)
    }
  }

  /** Points the row's identity fields at the one kept copy of each string (the row's answer reads the same text). */
  private intern(row: BucketRow): void {
    if (this.interned.size > MAX_INTERNED) this.interned.clear()
    for (const field of ['device_id', 'channel', 'metric', 'environment_id'] as const) {
      const text = row[field]
      if (typeof text !== 'string') continue
      const kept = this.interned.get(text)
      if (kept === undefined) this.interned.set(text, text)
      else row[field] = kept
    }
  }

  private drop(key: string, entry: Kept): void {
    for (const row of entry.rows) this.keptRows.delete(row)
    this.kept.delete(key)
    this.rows -= entry.rows.length + 1
  }

  /**
   * The marks of [from, to) (whole buckets of `interval`), and how to ask whether the store has caught up with every
   * write acknowledged before they were read (see the top of the file); undefined where too many marks would be read.
   */
  private async snapshot(store: ReadingsStore, accountId: string, interval: IntervalName, from: number, to: number): Promise<Snapshot | undefined> {
    const grain = markGrain(interval)
    const count = Math.ceil((to - from) / grain)
    if (count > MAX_MARKS) return undefined
    const starts = Array.from({ length: count }, (_, i) => from + i * grain)
    const values = await this.shared.getMany([EPOCH_KEY, ...starts.map((start) => markKey(accountId, grain, start))])
    let epoch = values[0]
    if (!epoch) {
      // The first read since the shared store was (re)started: what was kept before is of no use.
      epoch = randomUUID()
      await this.shared.setMany([EPOCH_KEY], epoch, EPOCH_MS)
    }
    return {
      marks: (n) => {
        const start = bucketStart(interval, n)
        const end = bucketStart(interval, n + 1)
        let text = epoch
        for (let i = Math.floor((start - from) / grain); i < count && from + i * grain < end; i++) text += `,${values[i + 1] ?? ''}`
        return text
      },
      keepable: async () => {
        const [caughtUp, settling] = await Promise.all([store.caughtUp(), store.settling(from, to)])
        if (!caughtUp || !settling) return undefined
        const moving = new Set(settling.map((minute) => bucketNumber(interval, minute)))
        return (n) => !moving.has(n)
      },
    }
  }
}

/** `promise`'s value, or undefined once `signal` aborts first (a waiter whose client went away stops waiting). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (!signal) return promise
  if (signal.aborted) return Promise.resolve(undefined)
  return new Promise((resolve) => {
    const gone = () => resolve(undefined)
    signal.addEventListener('abort', gone, { once: true })
    promise.then((value) => { signal.removeEventListener('abort', gone); resolve(value) })
  })
}
