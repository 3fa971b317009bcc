// Rollups of our own where QuestDB has no materialized views (7.4; views exist from 8.3.1): tables `${table}_1m`,
// `_5m`, `_1h` and `_1d` shaped as the views are (questdb.ts), kept from what the readings table holds. Where QuestDB keeps
// views, the same marks say which days they may lack while behind (ViewWatch, at the end of this file).
//
// Every write marks the minutes its readings fall in (reading_rollup_marks, in the records database) before it is
// acknowledged. A refresh recomputes the marked minutes from the readings table once QuestDB has applied every write
// acknowledged before it began (wal_tables()), then their five minutes from the minutes, their hours from the five
// minutes and their days from the hours,
// upserting (DEDUP UPSERT KEYS): so a retried batch counts once and a late reading updates its old buckets, as with
// the views. A minute is recomputed once its mark has settled, SETTLE_MS after its last write: every write that
// touched it was acknowledged before that refresh began (a write is answered within its request timeout, 10 s), so
// the rollups then hold it, and its mark is removed. A minute still being written is not recomputed: it is read raw
// while it is marked (below), so a result could serve no query, and a minute being written was read whole again
// at every refresh (every 2 s): about thirty times over for a stream writing the current minute.
//
// Exactness: until its mark is removed, a minute counts as stale: the planner reads no rollup bucket holding it, but
// the finer levels around it and the minute itself from the raw readings (planner.ts rollupPieces), so every answer
// equals the raw one whatever the refresh has reached.
//
// Several processes may refresh at once. A refresh gives up, recording nothing, once it has run CYCLE_LIMIT_MS, so a
// slow one cannot land an older computation after the one that removed a mark: each statement is also bounded by the
// connection's statement timeout, and a mark is removed only by a refresh begun SETTLE_MS after its last write.
//
// Progress at any size: a refresh takes a piece of the marked minutes, sized by what the pieces before it cost
// (nextPieceMinutes: grown while quick, shrunk when long, a quarter after one that gave up), and records that piece
// when done, so a backlog shrinks with every refresh that finishes. A fixed month of minutes per refresh, all or
// nothing, never finished at 4,000 series (issue 57: 10,080 marks stood through 120 s of settling on QuestDB 7.4.2),
// and every query then read raw.
import type { Sql } from 'postgres'
import type { Database } from '../../db/client.ts'
import type { PartitionUnit } from './questdb-expiry.ts'
import { stretches } from '../planner.ts'
import type { RollupLevel } from './interface.ts'

const MINUTE_MS = 60_000
const FIVE_MINUTES_MS = 300_000
const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000
/** How long a mark stays after its minute was last written (see above). */
const SETTLE_MS = 60_000
/** A refresh past this long stops without recording anything (see above). */
const CYCLE_LIMIT_MS = 20_000
/** What a piece of marked minutes should take (nextPieceMinutes): a quarter of CYCLE_LIMIT_MS, room for a slow moment. */
const PIECE_TARGET_MS = 5_000
/** The first piece of a process, in marked minutes: an hour, grown from there while pieces are quick. */
const FIRST_PIECE_MINUTES = 60
/** The most marked minutes one piece takes: about a month. */
const MAX_PIECE_MINUTES = 43_200
/** How often the refresher runs; at once again while more minutes wait. */
const REFRESH_EVERY_MS = 2_000
/** Marked minutes this close together are recomputed by one statement (stretches()). */
const MINUTE_GAP_MS = 10 * MINUTE_MS
/** A minute marked by this process is not marked again for this long (mark()). */
const MARK_AGAIN_MS = 1_000
/** At most this many minutes are remembered (a backfill marks thousands of minutes a second). */
const MAX_REMEMBERED = 1_000
/** How long a refresh waits for QuestDB to apply what it was sent. */
const APPLY_WAIT_MS = 10_000
/**
 * The marks table is vacuumed by its refresher once this many marks were refreshed or removed since, or once a
 * minute when any were: every mark is written, updated and deleted, and left to autovacuum (none on embedded
 * PGlite; on Postgres not before its next round) a year loaded at once left 3 million dead rows, and reading which
 * days are stale took 25–137 ms of every readings query.
 */
const VACUUM_AFTER_CHANGES = 10_000
const VACUUM_EVERY_MS = 60_000

/** The levels of our own tables, each rolled up from the one before it (the first from the readings). */
const OWN_LEVELS = ['1m', '5m', '1h', '1d'] as const satisfies readonly RollupLevel[]
const OWN_ROLLUP_COLUMNS = 'cnt long, sum_v double, min_v double, max_v double, last_v double, last_ts timestamp'
const KEYS = 'ts, account_id, device_id, channel, metric, environment_id'

/** [from, to) pairs cut at day boundaries: one statement reads at most a day. */
const byDay = (ranges: [number, number][]) => ranges.flatMap(([from, to]) => {
  const out: [number, number][] = []
  for (let start = from; start < to;) {
    const nextDay = Math.floor(start / DAY_MS) * DAY_MS + DAY_MS
    out.push([start, Math.min(to, nextDay)])
    start = nextDay
  }
  return out
})

const instant = (ms: number) => `'${new Date(ms).toISOString()}'`

/**
 * The minutes written and not yet known to be in the rollups, per readings table (reading_rollup_marks, in the
 * records database): marked by every write before it is acknowledged, read by every query (markedMinutes), removed by
 * whatever keeps the rollups (OwnRollups on 7.4, ViewWatch where QuestDB keeps views) once they hold the minute.
 */
export class RollupMarks {
  /** Minutes this process marked lately, with when (mark()). */
  private readonly marked = new Map<number, number>()
  /** Marks refreshed or removed since the marks table was last vacuumed, and when that was. */
  private changedSinceVacuum = 0
  private vacuumedAt = Date.now()

  constructor(readonly records: Pick<Database, 'query'>, readonly table: string) {}

  /**
   * Marks the minutes of `readings` as written: done before the write is acknowledged. A minute this process
   * marked under MARK_AGAIN_MS ago is not marked again: its mark is then at most that much older than this write,
   * far inside SETTLE_MS. Marking every batch, four batches in flight updating the same row, took a tenth of the
   * ingest rate on QuestDB 7.4.2 and tripled its ack p99 at half rate (30 -> 105 ms).
   */
  async mark(readings: readonly { ts: number }[]): Promise<void> {
    const now = Date.now()
    for (const [minute, at] of this.marked) if (now - at >= MARK_AGAIN_MS) this.marked.delete(minute)
    const minutes = new Set<number>()
    for (const { ts } of readings) {
      const minute = Math.floor(ts / MINUTE_MS) * MINUTE_MS
      if (!this.marked.has(minute)) minutes.add(minute)
    }
    if (!minutes.size) return
    await this.records.query(`insert into reading_rollup_marks (store, minute)
      select $1, timestamptz 'epoch' + m * interval '1 millisecond' from unnest($2::float8[]) as m
      on conflict (store, minute) do update set marked_at = now()`, [this.table, [...minutes].sort((a, b) => a - b)])
    // Remembered once marked (a mark that failed is tried again by the next write), old minutes too: a device
    // sending what it buffered writes the same old minutes batch after batch. Remembering only the last ten minutes'
    // marks, the bench's readings (two hours old) marked every batch, four batches in flight upserting the same rows.
    for (const minute of minutes) if (this.marked.size < MAX_REMEMBERED) this.marked.set(minute, now)
  }

  /**
   * Forgets which minutes this process marked, so that its next write marks them again. For a refresh settling marks
   * sooner than MARK_AGAIN_MS (tests and tools, refreshRollups): it may remove a mark this process would not write
   * again within the second, and a write to that minute would then go unmarked.
   */
  forget(): void {
    this.marked.clear()
  }

  /** The marked minutes (their starts, ms) within [from, to), ascending. */
  async markedMinutes(from: number, to: number): Promise<number[]> {
    const rows = await this.records.query<{ m: number }>(`select date_part('epoch', minute) * 1000 as m from reading_rollup_marks
      where store = $1 and minute >= $2::timestamptz and minute < $3::timestamptz order by minute`, [this.table, new Date(from).toISOString(), new Date(to).toISOString()])
    return rows.map((r) => Number(r.m))
  }

  /** Counts marks refreshed or removed; vacuums the marks table when due (see VACUUM_AFTER_CHANGES). */
  async changed(count: number): Promise<void> {
    this.changedSinceVacuum += count
    if (this.changedSinceVacuum >= VACUUM_AFTER_CHANGES || (this.changedSinceVacuum > 0 && Date.now() - this.vacuumedAt >= VACUUM_EVERY_MS)) {
      // SKIP_LOCKED: should autovacuum or another process be at it, that one does.
      await this.records.query('vacuum (skip_locked) reading_rollup_marks')
      this.changedSinceVacuum = 0
      this.vacuumedAt = Date.now()
    }
  }
}

/**
 * How many marked minutes the next piece takes, from the last piece: `size` minutes asked for, `took` ms, `full`
 * whether as many were pending, `done` whether it finished within the cycle limit. Pieces aim at `targetMs`: one
 * that gave up is cut to a quarter (it cost over four targets); one that ran long is scaled down to the target; a
 * full one under half the target doubles. Never below one minute (a minute that cannot be rolled up within the
 * limit is tried again, and its day read raw meanwhile) nor above MAX_PIECE_MINUTES.
 */
export function nextPieceMinutes(size: number, took: number, full: boolean, done: boolean, targetMs = PIECE_TARGET_MS): number {
  let next = size
  if (!done) next = size / 4
  else if (took > targetMs) next = size * targetMs / took
  else if (full && took < targetMs / 2) next = size * 2
  return Math.max(1, Math.min(MAX_PIECE_MINUTES, Math.floor(next)))
}

/** Runs `step` every `everyMs` (at once again while it says more wait; slower after a failure) until the returned stop(). */
export function repeat(everyMs: number, step: () => Promise<boolean>, onError: (error: unknown) => void): () => Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  let running: Promise<unknown> | undefined
  let stopped = false
  const loop = (ms: number) => {
    if (stopped) return
    timer = setTimeout(() => {
      running = step()
        .then((more) => loop(more ? 0 : everyMs))
        .catch((error) => { onError(error); loop(everyMs * 5) })
    }, ms)
    timer.unref?.()
  }
  loop(0)
  return async () => {
    stopped = true
    if (timer) clearTimeout(timer)
    await running?.catch(() => {})
  }
}

export class OwnRollups {
  private stopLoop: (() => Promise<void>) | undefined
  /** The raw readings' horizon the last maintenance run gave: minutes before it are dropped, not recomputed. */
  rawHorizon = -Infinity
  /** Marked minutes the next refresh takes (nextPieceMinutes). */
  pieceMinutes = FIRST_PIECE_MINUTES

  /**
   * The marks' records database and table are the ones these rollups keep. `pace` is for tests: a piece's target
   * and the cycle limit (PIECE_TARGET_MS, CYCLE_LIMIT_MS).
   */
  constructor(private readonly sql: Sql, private readonly marks: RollupMarks, private readonly partitions: Record<RollupLevel, PartitionUnit>,
    private readonly pace = { targetMs: PIECE_TARGET_MS, limitMs: CYCLE_LIMIT_MS }) {}

  /**
   * Makes the rollup tables. Made for the first time beside readings already stored (a 7.4 deployment upgraded), every
   * minute from the first reading to the last is marked first, so those days are read raw until rolled up, never from
   * empty rollups; marked before the tables exist, a start that fails between the two marks them again.
   * The five-minute table, new beside the others (rollups of an earlier version), is rolled up from the minute table
   * before this process refreshes anything (hours are made from it), and the raw readings' minutes are marked again:
   * a refresh of another process may have rolled up a minute while that ran, and is done again over what it wrote.
   * Processes of the earlier version must be stopped first: their refreshes settle marks without five minutes.
   */
  async create(): Promise<void> {
    const exists = async (level: RollupLevel) => (await this.sql.unsafe<Record<string, unknown>[]>(`select table_name from tables() where table_name = '${this.marks.table}_${level}'`)).length > 0
    const [earlier, fives] = [await exists('1d'), await exists('5m')]
    const spanOf = async (name: string) => (await this.sql.unsafe<{ first: Date | null; last: Date | null }[]>(`select min(ts) first, max(ts) last from ${name}`))[0]
    const markAll = async () => {
      const span = await spanOf(this.marks.table)
      if (span?.first && span.last) {
        await this.marks.records.query(`insert into reading_rollup_marks (store, minute)
          select $1, generate_series(date_trunc('minute', $2::timestamptz), $3::timestamptz, interval '1 minute') on conflict (store, minute) do update set marked_at = now()`, [this.marks.table, new Date(span.first).toISOString(), new Date(span.last).toISOString()])
      }
    }
    if (!earlier) await markAll()
    for (const level of OWN_LEVELS) {
      await this.sql.unsafe(`create table if not exists ${this.marks.table}_${level} (ts timestamp, account_id symbol, device_id symbol, channel symbol, metric symbol, environment_id symbol,
        ${OWN_ROLLUP_COLUMNS}) timestamp(ts) partition by ${this.partitions[level]} wal dedup upsert keys(${KEYS})`)
    }
    if (earlier && !fives) {
      const span = await spanOf(`${this.marks.table}_1m`)
      if (span?.first && span.last) {
        for (const [from, to] of byDay([[new Date(span.first).getTime(), new Date(span.last).getTime() + MINUTE_MS]])) await this.sql.unsafe(this.rollupSql('5m', `${this.marks.table}_1m`, from, to))
        if (!(await this.applied(`${this.marks.table}_5m`))) throw new Error(`QuestDB did not apply ${this.marks.table}_5m's rollup from ${this.marks.table}_1m in time`)
      }
      await markAll()
    }
  }

  /**
   * One refresh (see the top of the file): a piece of the marks settled since their last refresh (pieceMinutes of
   * them, oldest refresh first) is recomputed and recorded, and every mark so settled is removed. `settleMs` below
   * SETTLE_MS is for tests and tools that know no write is under way. Says how many minutes it recorded and
   * whether more wait.
   */
  async refresh(settleMs = SETTLE_MS): Promise<{ minutes: number; more: boolean }> {
    const began = Date.now()
    const size = this.pieceMinutes
    const settle = `$2 * interval '1 millisecond'`
    // One more than the piece: whether more wait.
    const pending = await this.marks.records.query<{ m: number; began: string }>(`select date_part('epoch', minute) * 1000 as m, now()::text as began from reading_rollup_marks
      where store = $1 and marked_at <= now() - ${settle} and (refreshed_at is null or refreshed_at < marked_at + ${settle})
      order by refreshed_at nulls first, minute limit ${size + 1}`, [this.marks.table, settleMs])
    const minutes = pending.slice(0, size).map((r) => Number(r.m))
    if (minutes.length) {
      const done = await this.rollUp(minutes, began) && Date.now() - began <= this.pace.limitMs
      this.pieceMinutes = nextPieceMinutes(size, Date.now() - began, pending.length > size, done, this.pace.targetMs)
      if (!done) return { minutes: 0, more: true }
      await this.marks.records.query(`update reading_rollup_marks set refreshed_at = $3::timestamptz
        where store = $1 and minute = any(select timestamptz 'epoch' + m * interval '1 millisecond' from unnest($2::float8[]) as m)`, [this.marks.table, minutes, pending[0]!.began])
    }
    const [removed] = await this.marks.records.query<{ n: number }>(`with removed as (delete from reading_rollup_marks where store = $1 and refreshed_at >= marked_at + ${settle} returning 1)
      select count(*)::int as n from removed`, [this.marks.table, settleMs])
    await this.marks.changed(minutes.length + (removed?.n ?? 0))
    return { minutes: minutes.length, more: pending.length > size }
  }

  /**
   * Recomputes the minutes `minutes` (ms), then their hours and days, from what QuestDB holds once it has applied
   * every write acknowledged before now; false once past the cycle limit counted from `began` (no statement is sent
   * after it) or when QuestDB did not apply in time.
   */
  private async rollUp(minutes: number[], began: number): Promise<boolean> {
    // Everything acknowledged before the marks were read is in the readings table's WAL by now: wait until applied.
    if (!(await this.applied(this.marks.table))) return false
    const kept = minutes.filter((m) => m >= this.rawHorizon).sort((a, b) => a - b)
    const steps: [RollupLevel, string, [number, number][]][] = [
      ['1m', this.marks.table, byDay(stretches(kept, MINUTE_MS, MINUTE_GAP_MS))],
      ['5m', `${this.marks.table}_1m`, byDay(stretches(kept, FIVE_MINUTES_MS, HOUR_MS))],
      ['1h', `${this.marks.table}_5m`, byDay(stretches(kept, HOUR_MS, HOUR_MS))],
      ['1d', `${this.marks.table}_1h`, stretches(kept, DAY_MS)],
    ]
    for (const [level, source, ranges] of steps) {
      for (const [from, to] of ranges) {
        if (Date.now() - began > this.pace.limitMs) return false
        await this.sql.unsafe(this.rollupSql(level, source, from, to))
      }
      if (!(await this.applied(`${this.marks.table}_${level}`))) return false
    }
    return true
  }

  /** Runs refresh() every REFRESH_EVERY_MS (at once again while more wait) until stop(). */
  start(onError: (error: unknown) => void): void {
    this.stopLoop = repeat(REFRESH_EVERY_MS, async () => (await this.refresh()).more, onError)
  }

  async stop(): Promise<void> {
    await this.stopLoop?.()
  }

  /**
   * One level's buckets in [from, to) recomputed from `source` (the readings, or the level below). The time of the
   * last reading goes through a copy of ts: QuestDB 7.4 samples each row on its own when a SAMPLE BY aggregates its
   * designated timestamp.
   */
  private rollupSql(level: RollupLevel, source: string, from: number, to: number): string {
    const window = `ts >= ${instant(from)} and ts < ${instant(to)}`
    const select = source === this.marks.table
      ? `select ${KEYS}, count() cnt, sum(value) sum_v, min(value) min_v, max(value) max_v, last(value) last_v, max(t) last_ts
         from (select ${KEYS}, value, ts t from ${source} where ${window}) timestamp(ts)`
      : `select ${KEYS}, sum(cnt) cnt, sum(sum_v) sum_v, min(min_v) min_v, max(max_v) max_v, last(last_v) last_v, max(last_ts) last_ts from ${source} where ${window}`
    return `insert into ${this.marks.table}_${level} ${select} sample by ${level} align to calendar`
  }

  private async applied(name: string): Promise<boolean> {
    return (await appliedTxn(this.sql, name)) !== undefined
  }
}

/**
 * Waits until QuestDB has applied every transaction table `name` had when asked, and gives that transaction's number;
 * undefined past `waitMs` (APPLY_WAIT_MS) or if the table is suspended.
 */
async function appliedTxn(sql: Sql, name: string, waitMs = APPLY_WAIT_MS, wanted = () => true): Promise<number | undefined> {
  const until = Date.now() + waitMs
  let target: number | undefined
  while (Date.now() < until && wanted()) {
    const [row] = await sql.unsafe<Record<string, unknown>[]>(`select suspended, writerTxn, sequencerTxn from wal_tables() where name = '${name}'`)
    if (!row || row.suspended === true) return undefined
    target ??= Number(row.sequencerTxn)
    if (Number(row.writerTxn) >= target) return target
    await Bun.sleep(20)
  }
  return undefined
}

/**
 * QuestDB's views (8.3.1 on), each built from the one before it: `1s` from the readings table, then the four levels
 * the planner reads. (Views an earlier version made have the hours from the minutes: a five-minute view is added
 * beside them, on the minutes, and the hours stay as they are.) The one-second view is only a step: QuestDB refreshes a view by recomputing every bucket its
 * base's new transactions touch, whole, so a minute view on the table read the current minute's readings again at
 * every refresh, and a dense stream paid for each reading many times over. A one-second bucket is over before it
 * holds much. `bun bench/questdb-view-cost.ts` on 9.3.2 (18 million readings at full speed over ILP/HTTP, QuestDB
 * alone, counted until every view had caught up; two rounds): QuestDB's CPU per reading 1.85 and 2.38 µs with no
 * views, 4.33 and 3.92 with the minute view on the table, 2.97 and 2.20 with this chain. (A scratch build refreshing
 * the minute view by hand every 2 s instead: 2.53 and 2.74, against 1.85 and 1.88 with no views.) The cost: a sparse
 * series has about a row per reading in it, as in the minute view (the README gives the bytes).
 */
export const VIEW_CHAIN = ['1s', '1m', '5m', '1h', '1d'] as const
export type ViewLevel = (typeof VIEW_CHAIN)[number]
/**
 * The views an earlier version made, the minute view on the table, with a five-minute view added on the minutes. A
 * store keeps them where rebuilding them on VIEW_CHAIN would lose rollups (raw readings have expired since): see
 * makeViews in questdb.ts.
 */
export const TABLE_MINUTE_CHAIN = ['1m', '5m', '1h', '1d'] as const
export type ViewChain = typeof VIEW_CHAIN | typeof TABLE_MINUTE_CHAIN

/** How often ViewWatch looks for marks to settle. */
const WATCH_EVERY_MS = 2_000

/**
 * Where QuestDB keeps the rollups (materialized views, 8.3.1 on), it refreshes them a moment after each write; while
 * writes keep coming (a facility streaming readings) some view is nearly always behind the table, and a query that
 * read the views only once all had caught up read a year raw instead. While one device posted ten times a second, a
 * year's daily walk took a median of 138 ms (p90 729) that way and 62 ms (p90 88) this way (QuestDB 9.3.2, two servers
 * on the same data walked alternately, 16 walks each). So writes mark their minutes as
 * on 7.4 (RollupMarks), queries read a marked minute raw and every bucket not holding one from the views, and this watch
 * removes marks once the views hold them, as OwnRollups does once its tables do.
 *
 * One watch: note the time (the records database's clock, which stamps the marks), then the table's last
 * transaction; wait until the first view of the chain has refreshed from that transaction and QuestDB has applied
 * the refresh; then each next view from the transaction of its base (a view before it) so applied. Every
 * write acknowledged before the time noted is then in every view, and marks last written SETTLE_MS before it (their
 * writes were acknowledged before it, see the top of the file) are removed.
 *
 * Writes made before this process started may be unmarked (an earlier version wrote them): until one watch begun
 * after the start has finished (`settled`), queries keep to views that have caught up whole.
 */
export class ViewWatch {
  private stopLoop: (() => Promise<void>) | undefined
  private stopping = false
  /** Whether a watch begun after this process started has finished (see above). */
  settled = false

  /** The marks' records database and table are the ones this watch keeps. */
  constructor(private readonly sql: Sql, private readonly marks: RollupMarks, private readonly chain: ViewChain) {}

  /** One watch (see above); `settleMs` below SETTLE_MS is for tests and tools that know no write is under way. Says whether it finished. */
  async watch(settleMs = SETTLE_MS): Promise<boolean> {
    const began = Date.now()
    const [now] = await this.marks.records.query<{ at: string; due: boolean }>(`select now()::text as at, exists(select 1 from reading_rollup_marks where store = $1 and marked_at <= now() - $2 * interval '1 millisecond') as due`, [this.marks.table, settleMs])
    if (this.settled && !now?.due) return true
    const [source] = await this.sql.unsafe<Record<string, unknown>[]>(`select sequencerTxn from wal_tables() where name = '${this.marks.table}'`)
    /** The transaction each table or view was noted at (the table's last, each view's applied refresh from it). */
    const noted = new Map([[this.marks.table, Number(source?.sequencerTxn)]])
    if (!Number.isFinite(noted.get(this.marks.table))) return false
    for (const level of this.chain) {
      const view = `${this.marks.table}_${level}`
      while (true) {
        if (this.stopping || Date.now() - began > CYCLE_LIMIT_MS) return false
        const [state] = await this.sql.unsafe<Record<string, unknown>[]>(`select view_status, base_table_name, refresh_base_table_txn from materialized_views() where view_name = '${view}'`)
        // `refreshing` is a view at work: wait for it. `invalid` needs an operator's full refresh: give up.
        if (!state || state.view_status === 'invalid') return false
        // Its own base: an earlier version's hours are on the minutes, not on the five minutes before them in the chain.
        const baseTxn = noted.get(String(state.base_table_name))
        if (baseTxn === undefined) throw new Error(`${view} is built on ${String(state.base_table_name)}, which is not before it in its chain (${this.chain.join(', ')})`)
        if (Number(state.refresh_base_table_txn) >= baseTxn) break
        await Bun.sleep(50)
      }
      const applied = await appliedTxn(this.sql, view, Math.max(0, CYCLE_LIMIT_MS - (Date.now() - began)), () => !this.stopping)
      if (applied === undefined) return false
      noted.set(view, applied)
    }
    const [removed] = await this.marks.records.query<{ n: number }>(`with removed as (delete from reading_rollup_marks
      where store = $1 and marked_at <= $2::timestamptz - $3 * interval '1 millisecond' returning 1) select count(*)::int as n from removed`, [this.marks.table, now!.at, settleMs])
    await this.marks.changed(removed?.n ?? 0)
    this.settled = true
    return true
  }

  /** Runs watch() every WATCH_EVERY_MS until stop(). */
  start(onError: (error: unknown) => void): void {
    this.stopLoop = repeat(WATCH_EVERY_MS, async () => { await this.watch(); return false }, onError)
  }

  async stop(): Promise<void> {
    this.stopping = true
    await this.stopLoop?.()
  }
}
