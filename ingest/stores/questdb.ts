// Readings in QuestDB: writes over ILP/HTTP through our own writer (ilp.ts: one batch is one POST /write,
// which QuestDB commits as a transaction before answering; ILP/TCP could drop data silently, so it is refused),
// reads over HTTP /exec (questdbReader says why), tables, views and expiry over PG wire. The table is made explicitly: designated timestamp, daily WAL partitions, and DEDUP UPSERT
// KEYS on (ts, device, channel) so a retried batch replaces rather than duplicates.
//
// QuestDB applies WAL writes asynchronously: a reading is durable when acknowledged and visible to queries a
// moment later.
import postgres from 'postgres'
import type { Config } from '../../src/config.ts'
import { ReadCancelled, type Database } from '../../db/client.ts'
import { Lanes } from '../lanes.ts'
import type { SeriesCatalogue } from '../series.ts'
import { IlpBody, ilpTarget, ilpVersion, postIlp, seriesPrefix, type IlpTarget } from './ilp.ts'
import { expireQuestdb, type PartitionUnit } from './questdb-expiry.ts'
import { bucketsAfter, bucketsIn, rollupPieces, ROLLUP_LEVELS, rowPerBucket, stretches, type Piece } from '../planner.ts'
import { OwnRollups, RollupMarks, TABLE_MINUTE_CHAIN, VIEW_CHAIN, ViewWatch, type ViewChain, type ViewLevel } from './questdb-rollups.ts'
import { byteOrder, compareKeys, groupKey, NO_DEADLINE, type Aggregate, type AggregationSpec, type GroupKey, type BucketPosition, type BucketRow, type IntervalName, type LatestPosition, type RawRow, type Reading, type ReadingsFilter, type ReadingsStore, type RollupLevel, type SeriesPosition } from './interface.ts'

/**
 * SAMPLE BY's unit: the interval names 1m…1d are QuestDB's own (`m` minutes, `h` hours, `d` days); a calendar month
 * is `1M`. Aligned to the calendar, `1w` samples ISO weeks from Monday 00:00 UTC and `1M` calendar months, on 7.4 and
 * 9.x alike (`7d` would start weeks on Thursdays, the epoch's weekday).
 */
const sampleUnit = (interval: IntervalName) => (interval === '1mo' ? '1M' : interval)

/** A SQL string literal. Values reach here already validated, but quoting keeps any text harmless. */
const literal = (value: string) => `'${value.replace(/'/g, "''")}'`
const instant = (ms: number) => `'${new Date(ms).toISOString()}'`
/** Symbols compare as text for keyset positions. */
const text = (column: string) => `cast(${column} as varchar)`

function where(filter: ReadingsFilter): string {
  const clauses = [`account_id = ${literal(filter.accountId)}`, `ts >= ${instant(filter.from)}`, `ts < ${instant(filter.to)}`]
  if (filter.environmentId !== undefined) clauses.push(`environment_id = ${literal(filter.environmentId)}`)
  if (filter.deviceId !== undefined) clauses.push(`device_id = ${literal(filter.deviceId)}`)
  if (filter.channel !== undefined) clauses.push(`channel = ${literal(filter.channel)}`)
  if (filter.metric !== undefined) clauses.push(`metric = ${literal(filter.metric)}`)
  return clauses.join(' and ')
}

/** Rows after (ts, device, channel), spelled out: QuestDB has no row-value comparison. */
function afterSeries(tsColumn: string, after: SeriesPosition): string {
  const [ts, device, channel] = after
  return `(${tsColumn} > ${instant(ts)} or (${tsColumn} = ${instant(ts)} and (${text('device_id')} > ${literal(device)} or (${text('device_id')} = ${literal(device)} and ${text('channel')} > ${literal(channel)}))))`
}

type Row = Record<string, unknown>
/** A row of an /exec answer: its values in the order the query selects them. */
type Values = unknown[]
const micros = (value: unknown) => Math.round(Number(value) / 1000)
const nullable = (value: unknown) => (value === null || value === undefined || value === '' ? null : String(value))
/** Raw and latest readings select `cast(ts as long) ts_us, device_id, channel, metric, environment_id, value`. */
const RAW_COLUMNS = 'cast(ts as long) ts_us, device_id, channel, metric, environment_id, value'
const rawRow = (r: Values): RawRow => ({
  ts: micros(r[0]), device_id: String(r[1]), channel: String(r[2]), metric: nullable(r[3]), environment_id: nullable(r[4]), value: Number(r[5]),
})

/**
 * Reads go over QuestDB's HTTP /exec (the server and credentials QUESTDB_ILP names), rows as JSON arrays, not over PG
 * wire: for a page of 10,000 bucket rows of 11 columns postgres.js spent 18–23 ms of our CPU turning text columns into
 * values, JSON.parse 3–4 ms, and the query took 28–34 ms against 14–16 ms end to end (QuestDB 9.3.2, same sitting).
 * At most `connections` run at once; the others wait their turn. The deadline is `signal`: aborting closes the
 * connection, which QuestDB notices between rows and stops the query (test/http/readings-query-bounds.test.ts, 7.4.2
 * and 9.3.2); should this process die, its connections close the same way. The Statement-Timeout header is sent too,
 * but it is no backstop to count on: run six times in a row with it, a query ran on past it twice (curl, both versions).
 */
export function questdbReader(target: IlpTarget, connections: number, timeoutMs: number): (text: string, signal?: AbortSignal) => Promise<Values[]> {
  const lanes = new Lanes(connections)
  const headers = { ...target.headers, 'statement-timeout': String(timeoutMs) }
  return async (text, signal = NO_DEADLINE) => {
    if (!(await lanes.enter(signal))) throw new ReadCancelled(false, signal.reason)
    try {
      const response = await fetch(`${target.execUrl}?query=${encodeURIComponent(text)}`, { headers, signal, tls: target.tls })
      const body = await response.text()
      let answer: { dataset?: Values[]; error?: string } | undefined
      try { answer = JSON.parse(body) } catch { answer = undefined }
      if (response.status !== 200 || !answer || answer.error !== undefined) {
        // QuestDB's own words (its timeout says "timeout, query aborted"), else the status and what came back.
        throw new Error(answer?.error ?? `QuestDB /exec answered ${response.status}: ${body.slice(0, 200)}`)
      }
      return answer.dataset ?? []
    } catch (error) {
      if (signal.aborted) throw new ReadCancelled(true, signal.reason)
      throw error
    } finally {
      lanes.leave()
    }
  }
}

const ENCODER = new TextEncoder()
/** Cached series prefixes per device, and channels per device, past which a cache starts over (bounds memory). */
const MAX_DEVICES = 100_000
const MAX_CHANNELS = 1024

/**
 * The escaped ILP prefix of each device's channel (`table,account_id=…,device_id=…,channel=…,metric=…,environment_id=… value=`)
 * as UTF-8 bytes, kept beside the device configuration it was built from: a reading whose mapping differs (the device's channels
 * were changed) builds it again. The mapping's strings come from the cached device configuration, so the check is
 * one identity comparison each.
 */
export class SeriesPrefixes {
  private readonly devices = new Map<string, Map<string, { accountId: string; metric: string | null; environmentId: string | null; prefix: Uint8Array }>>()
  constructor(private readonly table: string) {}

  /** The reading's prefix if it is cached (and still matches the reading's mapping). */
  cached(r: Reading): Uint8Array | undefined {
    const hit = this.devices.get(r.deviceId)?.get(r.channel)
    return hit && hit.metric === r.metric && hit.environmentId === r.environmentId && hit.accountId === r.accountId ? hit.prefix : undefined
  }

  /** The reading's prefix, made and cached if it is not. */
  of(r: Reading): Uint8Array {
    const hit = this.cached(r)
    if (hit) return hit
    let channels = this.devices.get(r.deviceId)
    if (!channels) {
      if (this.devices.size >= MAX_DEVICES) this.devices.clear()
      this.devices.set(r.deviceId, (channels = new Map()))
    }
    if (channels.size >= MAX_CHANNELS) channels.clear()
    const prefix = ENCODER.encode(seriesPrefix(this.table, [['account_id', r.accountId], ['device_id', r.deviceId], ['channel', r.channel], ['metric', r.metric], ['environment_id', r.environmentId]], 'value'))
    channels.set(r.channel, { accountId: r.accountId, metric: r.metric, environmentId: r.environmentId, prefix })
    return prefix
  }
}

/** What an ILP line carried, for QuestDB's error about it (lines count from 1, one per reading). */
const describeReading = (readings: readonly Reading[]) => (line: number) => {
  const r = readings[line - 1]
  return r && `device ${r.deviceId}, channel ${r.channel}, ts ${new Date(r.ts).toISOString()}, value ${r.value}`
}

/**
 * Writes readings into `table` over ILP/HTTP as QUESTDB_ILP says: one batch, one request, resolved on QuestDB's 2xx.
 * The ILP version is settled once, here (ilpVersion: asked of the server unless QUESTDB_ILP names it).
 * `register` is given the readings whose prefix this writer has not cached, before they are written (the series
 * catalogue's registration): a series not written yet, or one written before the cache started over (registering
 * it again is idempotent). A cached prefix stands for a series registered when it was made, so a reading
 * costs one cache lookup: asking the catalogue of every reading as well cost 40 ns more per reading, about 3% of
 * the server's CPU on ingest (1.2 µs a reading; measured 2026-11-29).
 */
export async function ilpReadingsWriter(configuration: string, table: string, register?: (readings: readonly Reading[]) => Promise<unknown>): Promise<(readings: readonly Reading[]) => Promise<void>> {
  const target = ilpTarget(configuration)
  const version = await ilpVersion(target)
  const prefixes = new SeriesPrefixes(table)
  /** Bodies of batches answered, for the next ones: one per batch in flight is ever made (IlpBody says why). */
  const idle: IlpBody[] = []
  return async (readings) => {
    if (!readings.length) return
    const known = new Array<Uint8Array | undefined>(readings.length)
    let unseen: Reading[] | undefined
    for (let i = 0; i < readings.length; i++) if (!(known[i] = prefixes.cached(readings[i]!))) (unseen ??= []).push(readings[i]!)
    // Registered before any prefix of theirs is cached: a registration that fails leaves them unseen.
    if (unseen && register) await register(unseen)
    const body = idle.pop() ?? new IlpBody(version)
    for (let i = 0; i < readings.length; i++) {
      const r = readings[i]!
      body.row(known[i] ?? prefixes.of(r), r.value, r.ts)
    }
    await postIlp(target, body.take(), describeReading(readings))
    // Reused only once QuestDB has answered: a request that failed or timed out may still be reading its bytes.
    idle.push(body)
  }
}

/**
 * Rollups where QuestDB has materialized views (8.3.1 on): per series variant (device, channel, metric, environment)
 * at 1 second from the table (a step only, VIEW_CHAIN says why), 1 minute from the seconds, 5 minutes from the
 * minutes, 1 hour from the five minutes, 1 day from the hours. QuestDB refreshes them incrementally from what the table holds after deduplication, so a
 * retried batch counts once and a late reading updates its old buckets (both checked on 9.3.2), unless it is older
 * than the raw readings' retention: once expiry has run, the one-second view refreshes nothing older
 * (questdb-expiry.ts). 7.4 has no materialized views: its queries read the table.
 */
const VIEW_COLUMNS = 'cnt, sum_v, min_v, max_v, last_v, last_ts'
/** The raw table and the second, minute, five-minute and hour rollups are partitioned by day, the day rollups by month. */
const VIEW_PARTITIONS: Record<ViewLevel, PartitionUnit> = { '1s': 'day', '1m': 'day', '5m': 'day', '1h': 'day', '1d': 'month' }
/** The view `level` is built from: the table for the first of VIEW_CHAIN, else the view before it. */
const viewBase = (table: string, level: ViewLevel) => (level === VIEW_CHAIN[0] ? table : `${table}_${VIEW_CHAIN[VIEW_CHAIN.indexOf(level) - 1]}`)
function viewSql(table: string, level: ViewLevel): string {
  const keys = 'ts, account_id, device_id, channel, metric, environment_id'
  const body = level === VIEW_CHAIN[0]
    ? `select ${keys}, count() cnt, sum(value) sum_v, min(value) min_v, max(value) max_v, last(value) last_v, last(ts) last_ts from ${table} sample by ${level}`
    : `select ${keys}, sum(cnt) cnt, sum(sum_v) sum_v, min(min_v) min_v, max(max_v) max_v, last(last_v) last_v, max(last_ts) last_ts from ${viewBase(table, level)} sample by ${level}`
  return `create materialized view if not exists ${table}_${level} as (${body}) partition by ${VIEW_PARTITIONS[level]}`
}

/**
 * Makes the views and says which chain they form, or that the server has none (7.4: no materialized_views()).
 * Views an earlier version made with the minute view on the table are dropped and made again on VIEW_CHAIN when the
 * raw readings still hold everything they do (QuestDB rebuilds them from those readings; the watch does not settle
 * until they have caught up, so queries keep to views that have). Once raw readings have expired, rebuilding would
 * lose the rollups of the expired days: those views stay as they are, and the store works on their chain.
 */
async function makeViews(sql: postgres.Sql, table: string): Promise<ViewChain | undefined> {
  const found = await sql.unsafe<{ base_table_name: string }[]>(`select base_table_name from materialized_views() where view_name = '${table}_1m'`).catch(() => undefined)
  if (!found) return undefined
  if (found[0]?.base_table_name === table) {
    // Day partitions expire whole, so the raw readings hold all the day view does when they begin on its first day.
    // Microseconds since the epoch, read as numbers (a timestamp would be read in this process's time zone).
    const first = async (name: string) => (await sql.unsafe<{ first: string | null }[]>(`select cast(min(ts) as long) first from ${name}`))[0]?.first ?? null
    const [raw, days] = [await first(table), await first(`${table}_1d`)]
    const DAY_US = 86_400_000_000
    if (days !== null && (raw === null || Math.floor(Number(raw) / DAY_US) * DAY_US > Number(days))) {
      await sql.unsafe(viewSql(table, '5m'))
      return TABLE_MINUTE_CHAIN
    }
    for (const level of ['1d', '1h', '5m', '1m'] as const) await sql.unsafe(`drop materialized view if exists ${table}_${level}`)
  }
  for (const level of VIEW_CHAIN) await sql.unsafe(viewSql(table, level))
  return VIEW_CHAIN
}

/** Per-bucket statistics of each series variant over the pieces the planner picks, in one SAMPLE BY. */
function sampledPieces(table: string, filter: ReadingsFilter, spec: AggregationSpec, pieces: Piece[]): string {
  const variant = 'device_id, channel, metric, environment_id'
  const branch = (piece: Piece) => {
    const window = where({ ...filter, from: piece.from, to: piece.to })
    // A raw reading's sum in two parts as sampledRaw adds them (see orderFreeSum); a rollup's sum as it is.
    return piece.level === 'raw'
      ? `select ts, ${variant}, cast(1 as long) cnt, ${wholePart('value')} whole_v, ${remainder('value')} rest_v, value min_v, value max_v, value last_v, ts last_ts from ${table} where ${window}`
      : `select ts, ${variant}, cnt, 0.0 whole_v, sum_v rest_v, min_v, max_v, last_v, last_ts from ${table}_${piece.level} where ${window}`
  }
  const every = `sample by ${sampleUnit(spec.interval)} align to calendar`
  const statistics = `sum(cnt) cnt, ${orderFreeSum('whole_v', 'rest_v')} sum_v, min(min_v) min_v, max(max_v) max_v, last(last_v) last_v, max(last_ts) last_ts`
  // Always through a subquery, even for raw readings alone: QuestDB 7.4 samples each row on its own when a SAMPLE
  // BY aggregates its designated timestamp (max(ts), even cast), and last_ts needs exactly that; a copy of ts made
  // in a subquery is an ordinary column. The branches follow one another in time (the planner's pieces do not overlap), so their union is in ts order as
  // SAMPLE BY needs, and last(last_v) is the value of the latest piece of a variant in each bucket.
  return `select ts, ${variant}, ${statistics} from (${pieces.map((p) => `(${branch(p)})`).join(' union all ')}) timestamp(ts) ${every}`
}

/**
 * Whether the window is one piece of a rollup level exactly as wide as the interval (a daily query from the day
 * rollups, hourly from the hour rollups): each of its rows is then one bucket of one variant, read as it is
 * (rollupRows), and merged like a SAMPLE BY's rows.
 */
const asIs = (pieces: readonly Piece[], spec: AggregationSpec) => pieces.length === 1 && rowPerBucket(pieces[0]!, spec.interval)

/** A rollup level's rows of the window as they are, shaped as sampledPieces' (see asIs). */
function rollupRows(table: string, filter: ReadingsFilter, piece: Piece): string {
  return `select ts, device_id, channel, metric, environment_id, ${VIEW_COLUMNS} from ${table}_${piece.level} where ${where({ ...filter, from: piece.from, to: piece.to })}`
}

/**
 * A bucket's sum of raw readings that is the same whatever order they are added in: QuestDB runs a plain SAMPLE BY
 * as a parallel GROUP BY, which adds a bucket's values in the order its workers happen to take the table's frames,
 * so a plain sum(value) of the same bucket read twice, or in pages of another size, differed in its last digits (2 of
 * 28 weekly rows, 7.4.2). Each value is split into a multiple of 2^-20 (`floor(value·2^20)`, an integer, summed
 * exactly in doubles up to 2^53, so while a bucket's readings add up to less than about 8.6·10^9 in magnitude) and
 * the remainder below 2^-20, whose sum's rounding (about 10^-22 per reading) moves the result's last bit only about
 * once in 10^7 buckets. Added in time order (sampledPieces) the result is the same as in any other (sampledRaw).
 * Kept in the parallel GROUP BY: summing in one pass instead cost the dense bench's dashboards 35 % at p50 (7.4.2).
 */
const SPLIT = 1048576.0
const wholePart = (value: string) => `floor(${value} * ${SPLIT})`
const remainder = (value: string) => `${value} - ${wholePart(value)} / ${SPLIT}`
const orderFreeSum = (whole: string, rest: string) => `sum(${whole}) / ${SPLIT} + sum(${rest})`

/**
 * The same statistics from the raw readings alone, without the time of each variant's last reading: a plain SAMPLE
 * BY that QuestDB runs as a parallel GROUP BY. A page of 10,000 days read 0.23-0.38 s this way on 7.4.2 against
 * 1.2 s through sampledPieces (same rows, same values). Without that time, variants of one group in one bucket
 * cannot be told apart by which came last: buckets() asks sampledPieces instead where that matters.
 */
function sampledRaw(table: string, filter: ReadingsFilter, spec: AggregationSpec): string {
  return `select ts, device_id, channel, metric, environment_id, count() cnt, ${orderFreeSum(wholePart('value'), remainder('value'))} sum_v, min(value) min_v, max(value) max_v, last(value) last_v, 0 last_ts
    from ${table} where ${where(filter)} sample by ${sampleUnit(spec.interval)} align to calendar`
}

/**
 * The rows of a bucket read (sampledPieces, sampledRaw, rollupRows) merged per bucket and group, as the page's rows in
 * (ts, group key) order; undefined when, read `withTimes` false, a channel has several variants in a bucket.
 *
 * A group is a device's channel: its variants (a channel whose mapping changed within the bucket) add up, and its
 * metric and environment are those of the variant read last. Grouped by metric, the variants with that metric add up,
 * and `last` is the value read last (the greatest of those read at that same time). The store's rows cover the
 * filter's window whole: callers ask for stretches about the size of a page (ingest/planner.ts).
 *
 * The rows are sorted by bucket and group here (comparing their fields: no key text is made), so that a group's
 * variants in a bucket are neighbours: each is added to the one before it, and the group's row is made once the next
 * group begins. The sort reorders `rows` in place. QuestDB gives a bucket's groups in no order, and sorting them
 * there (ORDER BY on the symbols) cost it 6 ms more for 5,000 day rollups against 1 ms here.
 * Numbering the groups in Maps instead, keeping each bucket's groups by number, then making the rows in order took
 * twice the time of this (3.1 ms against 1.6 ms for those 5,000 rows, 9.3.2; JSON.parse of them 1.7 ms).
 */
function mergeVariants(rows: Values[], byMetric: boolean, filter: ReadingsFilter, withTimes: boolean, aggregates: readonly Aggregate[]): BucketRow[] | undefined {
  const metricOf = (row: Values) => filter.metric ?? nullable(row[3])
  // Past the group, by variant (device, channel, metric, environment): a group's partial sums are added in this one
  // order, not in the order QuestDB's hash map gives them (which follows the map's size, so the window read).
  const byVariant = (a: Values, b: Values) => byteOrder(a[1] as string, b[1] as string) || byteOrder(a[2] as string, b[2] as string)
    || byteOrder(String(a[3] ?? ''), String(b[3] ?? '')) || byteOrder(String(a[4] ?? ''), String(b[4] ?? ''))
  const sorted = byMetric
    ? rows.filter((row) => metricOf(row) !== null).sort((a, b) => (a[0] as number) - (b[0] as number) || byteOrder(metricOf(a)!, metricOf(b)!) || byVariant(a, b))
    : rows.sort((a, b) => (a[0] as number) - (b[0] as number) || byVariant(a, b))
  const out: BucketRow[] = []
  let open = false
  let ts = 0, first = '', second = ''
  let metric: string | null = null, environment: string | null = null
  let count = 0, sum = 0, min = 0, max = 0, last = 0, lastUs = 0
  const close = () => {
    const row: BucketRow = byMetric
      ? { ts, metric, environment_id: environment }
      : { ts, device_id: first, channel: second, metric, environment_id: environment }
    for (const a of aggregates) row[a] = a === 'avg' ? sum / count : a === 'min' ? min : a === 'max' ? max : a === 'count' ? count : last
    out.push(row)
  }
  for (const [tsUs, device, channel, metricValue, environmentValue, cnt, sumValue, minValue, maxValue, lastValue, lastTs] of sorted) {
    const rowMetric = filter.metric ?? nullable(metricValue)
    const rowTs = micros(tsUs)
    const rowFirst = byMetric ? rowMetric! : String(device)
    const rowSecond = byMetric ? '' : String(channel)
    const rowLastUs = Number(lastTs)
    const rowLast = Number(lastValue)
    if (open && rowTs === ts && rowFirst === first && rowSecond === second) {
      // Without the times, which of two variants came last is unknown: the caller asks again with them.
      if (!withTimes && !byMetric) return undefined
      count += Number(cnt); sum += Number(sumValue)
      min = Math.min(min, Number(minValue)); max = Math.max(max, Number(maxValue))
      if (rowLastUs > lastUs || (rowLastUs === lastUs && rowLast > last)) {
        lastUs = rowLastUs; last = rowLast
        if (!byMetric) { metric = rowMetric; environment = filter.environmentId ?? nullable(environmentValue) }
      }
      continue
    }
    if (open) close()
    open = true
    ts = rowTs; first = rowFirst; second = rowSecond
    metric = rowMetric; environment = filter.environmentId ?? (byMetric ? null : nullable(environmentValue))
    count = Number(cnt); sum = Number(sumValue); min = Number(minValue); max = Number(maxValue); last = rowLast; lastUs = rowLastUs
  }
  if (open) close()
  return out
}

/**
 * A bucket read of at least this many rows is split at its middle bucket into two reads run at once, each on a
 * connection of its own (questdbReader): QuestDB answers each on a worker of its own, and we parse one answer while
 * the other is still coming. Fetching and parsing day rollups of one environment (40 series), one read against two
 * halves at once, medians of 60 (QuestDB 9.3.2, same sitting): 2,000 rows 2.6 / 2.5 ms, 4,000 rows 4.9 / 4.3 ms,
 * 10,080 rows (page 1 of a year's daily walk) 12.5 / 8.0 ms. Below about 4,000 rows a second request costs what it saves.
 */
export const SPLIT_READ_ROWS = 4_000

/**
 * What a bucket read selects, in mergeVariants' order: a column the answer does not use is selected as null. Parsing
 * the /exec answer was a quarter of the server's CPU on an hourly walk, and the text the filter fixes (an
 * environment's id on every row) and the statistics no aggregate asks for were most of its bytes. `last_us` stays:
 * it also tells which of a channel's variants came last.
 */
function bucketColumns(filter: ReadingsFilter, spec: AggregationSpec): string {
  const wanted = (column: string, used: boolean) => (used ? column : 'null')
  const asked = (aggregate: Aggregate) => spec.aggregates.includes(aggregate)
  return ['cast(ts as long) ts_us', 'device_id', 'channel',
    wanted('metric', filter.metric === undefined), wanted('environment_id', filter.environmentId === undefined),
    wanted('cnt', asked('avg') || asked('count')), wanted('sum_v', asked('avg')), wanted('min_v', asked('min')), wanted('max_v', asked('max')),
    wanted('last_v', asked('last')), 'cast(last_ts as long) last_us'].join(', ')
}

/**
 * How long caughtUp() waits for QuestDB to apply what was acknowledged: it applies a commit within milliseconds when
 * not overloaded, and a read waiting longer would cost its asker more than keeping its buckets saves.
 */
const CAUGHT_UP_WAIT_MS = 100

/** The tails of a window latest() reads first (see there): its last minutes, then today's and the days before. */
const LATEST_RECENT_MS = 15 * 60_000
const LATEST_RECENT_DAYS = 1

/** A double whose shortest text has 16 decimals: QuestDB must give it back as it is. */
const DOUBLE_PROBE = 0.1234567890123456

/**
 * Reads go over /exec, whose JSON writes a double with `http.json.query.double.scale` decimals on QuestDB 7.x, 12 by
 * default: 238.73999999999998 was read back as 238.739999999999, so a reading's value (or `last`) differed from what
 * was written and from the SQL store's answer (test/http/readings-walks.test.ts found it on 7.4.2). 8.x and later write
 * every double in full, as 7.x does at scale 19. Rather than answer altered values, the store does not open.
 */
async function requireExactDoubles(query: (text: string) => Promise<Values[]>): Promise<void> {
  const [[answered] = []] = await query(`select ${DOUBLE_PROBE} v`)
  if (Number(answered) !== DOUBLE_PROBE) {
    throw new Error(`QuestDB writes doubles over /exec with too few decimals (${String(answered)} for ${DOUBLE_PROBE}), so readings would read back altered: on QuestDB 7.x set http.json.query.double.scale=19 in server.conf (or QDB_HTTP_JSON_QUERY_DOUBLE_SCALE=19); 8.x and later need nothing`)
  }
}

/**
 * ILP over HTTP (ingest's acknowledgements) and /exec (the readings queries) are served by one pool of QuestDB's
 * workers: http.worker.count, or the shared pool when that is 0 (4 workers on a small machine). With a read in flight
 * on each of them a write waits for one to end. In the dense bench (issue 57, QuestDB 7.4.2, 4 reader connections) ack
 * p99 was 470 ms with 4 shared workers and 164 ms with 6. QuestDB's configuration is its operator's: this says so at
 * start, and README's QuestDB section gives the setting.
 */
async function workersLeftForWrites(query: (text: string) => Promise<Values[]>, readers: number): Promise<string | undefined> {
  const rows = await query(`select property_path, value from (show parameters) where property_path in ('http.worker.count', 'shared.worker.count')`).catch(() => [])
  const setting = (name: string) => Number(rows.find(([path]) => path === name)?.[1])
  const http = setting('http.worker.count')
  const workers = http > 0 ? http : setting('shared.worker.count')
  if (!Number.isFinite(workers) || workers >= readers + 2) return undefined
  return `QuestDB serves HTTP (ILP writes and the readings queries alike) with ${workers} workers and READINGS_QUERY_CONNECTIONS is ${readers}: with every worker reading, acknowledgements wait for reads. Give QuestDB at least ${readers + 2} (shared.worker.count, or http.worker.count; QDB_SHARED_WORKER_COUNT=${readers + 2}), or lower READINGS_QUERY_CONNECTIONS`
}

/**
 * `catalogue` (in the records database) registers each series before its first reading is written: the server
 * always gives one; a tool or test that only writes and reads QuestDB may leave it out.
 */
export async function questdbStore(config: Config, catalogue?: SeriesCatalogue, own?: { records: Pick<Database, 'query'>; log: (message: string, error: unknown) => void }): Promise<ReadingsStore> {
  if (!config.questdbPgUrl) throw new Error('QUESTDB_PG_URL is needed with QUESTDB_ILP: the table, its views and expiry go over PG wire')
  const table = config.questdbTable
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error('QUESTDB_TABLE must be a plain identifier')
  const writeIlp = await ilpReadingsWriter(config.questdbIlp!, table, catalogue && ((readings) => catalogue.idsOf(readings)))
  const query = questdbReader(ilpTarget(config.questdbIlp!), config.readingsQueries.connections, config.readingsQueries.timeoutMs + 1_000)
  await requireExactDoubles(query)
  const crowded = await workersLeftForWrites(query, config.readingsQueries.connections)
  if (crowded) own?.log(crowded, undefined)
  // PG wire makes the table and views, expires partitions and reads the series once at start; the readings queries
  // go over HTTP (questdbReader). The startup option statement_timeout is QuestDB's per-connection query timeout on
  // 7.4 and 9.x alike (SET statement_timeout is accepted and ignored).
  const sql = postgres(config.questdbPgUrl, {
    max: 2, prepare: false, onnotice: () => {}, idle_timeout: 30,
    connection: { options: `-c statement_timeout=${config.readingsQueries.timeoutMs + 1_000}` },
  })
  await sql.unsafe(`create table if not exists ${table} (
    ts timestamp, account_id symbol, device_id symbol, channel symbol, metric symbol, environment_id symbol, value double
  ) timestamp(ts) partition by day wal dedup upsert keys(ts, device_id, channel)`)

  // Materialized views where the server has them; where it has none (7.4), rollup tables of our own kept from
  // marks in the records database (questdb-rollups.ts), or, given no records database (a tool, a test of QuestDB
  // alone), the table alone.
  /** The chain of views the store keeps, where QuestDB has them. */
  const views = await makeViews(sql, table)
  /** Where writes are marked (own rollups, or views with a records database), before they are acknowledged. */
  const marks = own ? new RollupMarks(own.records, table) : undefined
  const tables = !views && marks ? new OwnRollups(sql, marks, VIEW_PARTITIONS) : undefined
  await tables?.create()
  tables?.start((error) => own!.log('QuestDB rollups refresh failed', error))
  const watch = views && marks ? new ViewWatch(sql, marks, views) : undefined
  watch?.start((error) => own!.log('QuestDB rollup views watch failed', error))
  /**
   * The view levels that are valid, and those that have also caught up whole with what they are built from (each
   * level on the one below it; a level counts only when the levels below it do).
   */
  const viewStates = async (signal: AbortSignal): Promise<{ valid: RollupLevel[]; caughtUp: RollupLevel[] }> => {
    const names = views!.map((level) => `'${table}_${level}'`).join(', ')
    const [rows, applied] = await Promise.all([
      query(`select view_name, view_status, refresh_base_table_txn, base_table_txn from materialized_views() where view_name in (${names})`, signal),
      // A view's refresh is counted once written to the view's WAL; what reads see is what has been applied from it.
      // The table too: QuestDB counts a commit applied (writerTxn, and a view's base_table_txn) a moment after readers
      // see its rows, so until the table has no commit in flight a view can look caught up without them.
      query(`select name, writerTxn, sequencerTxn from wal_tables() where name in (${names}, '${table}')`, signal),
    ])
    /** Whether QuestDB has applied every commit to `name` (a view or the table). */
    const settled = (name: string) => applied.some(([n, writer, sequencer]) => n === name && Number(writer) === Number(sequencer))
    // `valid`, or `refreshing` (at work); an `invalid` view is refreshed no more until an operator refreshes it whole.
    const valid = (level: ViewLevel) => rows.some(([name, status]) => name === `${table}_${level}` && status !== 'invalid')
    const fresh = (level: ViewLevel) => rows.some(([name, status, refreshed, base]) => name === `${table}_${level}` && status === 'valid' && Number(refreshed) === Number(base))
      && settled(`${table}_${level}`)
    // The planner's levels: a one-second step is not one, but the levels after it count only while it does.
    const prefix = (ok: (level: ViewLevel) => boolean) => {
      const levels: RollupLevel[] = []
      for (const level of views!) {
        if (!ok(level)) break
        if (level !== '1s') levels.push(level)
      }
      return levels
    }
    return { valid: prefix(valid), caughtUp: settled(table) ? prefix(fresh) : [] }
  }
  /**
   * What a bucket read takes from where, for any part of the window `from`–`to`: where our own rollups are kept, the
   * rollups but around marked minutes (rollupPieces' `stale`: the finer levels there, the marked minutes raw); where
   * QuestDB keeps views, the views that have caught up whole, or (once the watch has settled, ViewWatch) every valid
   * view but around marked minutes; without either, the table alone.
   */
  const piecesOf = async (from: number, to: number, interval: IntervalName, signal: AbortSignal): Promise<(start: number, end: number) => Piece[]> => {
    if (tables) {
      const stale = stretches(await marks!.markedMinutes(from, to), 60_000)
      return (start, end) => rollupPieces(start, end, interval, undefined, stale)
    }
    if (!views) return (start, end) => rollupPieces(start, end, interval, [])
    const states = await viewStates(signal)
    // The marks are read only when some view is behind: a quiet store costs no more than before.
    if (!watch?.settled || states.caughtUp.length === ROLLUP_LEVELS.length) return (start, end) => rollupPieces(start, end, interval, states.caughtUp)
    const stale = stretches(await marks!.markedMinutes(from, to), 60_000)
    return (start, end) => rollupPieces(start, end, interval, states.valid, stale)
  }

  /** One read of the buckets of `filter`'s window from `pieces`, in (ts, group key) order (buckets() below). */
  const readBuckets = async (filter: ReadingsFilter, spec: AggregationSpec, pieces: Piece[], limit: number, after: BucketPosition | undefined, signal: AbortSignal): Promise<BucketRow[]> => {
    const byMetric = spec.groupBy === 'metric'
    const read = async (sampled: string) => query(`select ${bucketColumns(filter, spec)} from (${sampled})`, signal)
    // Where the window is raw readings alone (QuestDB 7.4 always) the plain SAMPLE BY answers, unless the times of
    // the last readings are needed: `last` across a metric's series, or (met while merging) a channel with several
    // variants in one bucket, whose metric and environment are those of the variant read last.
    const plain = pieces.every((piece) => piece.level === 'raw') && !(byMetric && spec.aggregates.includes('last'))
    const rows = await read(plain ? sampledRaw(table, filter, spec) : asIs(pieces, spec) ? rollupRows(table, filter, pieces[0]!) : sampledPieces(table, filter, spec, pieces))
    const merged = mergeVariants(rows, byMetric, filter, !plain, spec.aggregates)
      ?? mergeVariants(await read(sampledPieces(table, filter, spec, pieces)), byMetric, filter, true, spec.aggregates)!
    let start = 0
    if (after) {
      const position: GroupKey = [after[1], after[2]]
      while (start < merged.length && (merged[start]!.ts < after[0] || (merged[start]!.ts === after[0] && compareKeys(groupKey(merged[start]!, spec.groupBy), position) <= 0))) start++
    }
    return merged.slice(start, start + limit)
  }

  /**
   * ILP over HTTP answers once its rows are committed to the table's WAL: every write acknowledged before the first
   * query here has a transaction at or below the sequencer's then, and reads see it once QuestDB has applied that far.
   */
  const appliedSoon = async (): Promise<boolean> => {
    const state = async () => (await query(`select writerTxn, sequencerTxn from wal_tables() where name = '${table}'`))[0]
    const first = await state()
    if (!first) return false
    const target = Number(first[1])
    for (let applied = Number(first[0]), until = Date.now() + CAUGHT_UP_WAIT_MS; applied < target; applied = Number((await state())?.[0])) {
      if (Date.now() >= until) return false
      await Bun.sleep(10)
    }
    return true
  }
  /**
   * One check at a time, shared: callers arriving while one runs share the next, begun once it ends (so after each of
   * their calls). Every uncached page asking for its own polled the readings' connections (4) with wal_tables queries
   * ahead of the reads themselves.
   */
  let running: Promise<boolean> | undefined
  let next: Promise<boolean> | undefined
  const caughtUp = (): Promise<boolean> => {
    next ??= (async () => {
      await running?.catch(() => false)
      next = undefined
      const check = (running = appliedSoon())
      try { return await check } finally { if (running === check) running = undefined }
    })()
    return next
  }

  await catalogue?.backfillOnce(`reading_series_backfilled:questdb:${table}`, async () => {
    const rows = await sql.unsafe<Row[]>(`select distinct account_id, device_id, channel, metric, environment_id from ${table}`)
    return rows.map((r) => ({ accountId: String(r.account_id), deviceId: String(r.device_id), channel: String(r.channel), metric: nullable(r.metric), environmentId: nullable(r.environment_id), ts: 0, value: 0 }))
  })

  return {
    kind: 'questdb',
    rollupLevels: views || tables ? ROLLUP_LEVELS.map((l) => l.name) : [],
    // DROP PARTITION on 7.4, TTL where there are views (questdb-expiry.ts says why).
    maintain(horizons, now) {
      if (tables) tables.rawHorizon = horizons.raw
      return expireQuestdb(sql, table, views ? { kind: 'views', partitions: VIEW_PARTITIONS, chain: views } : tables ? { kind: 'tables', partitions: VIEW_PARTITIONS } : undefined, horizons, now)
    },
    async refreshRollups(settleMs) {
      while (tables && (await tables.refresh(settleMs)).more);
      // Views: until a watch finishes (it gives up after CYCLE_LIMIT_MS, or on a view that is not valid).
      for (let tries = 0; watch && tries < 3 && !(await watch.watch(settleMs)); tries++);
      // Marks may have gone sooner than this process remembers writing them (RollupMarks.forget).
      marks?.forget()
    },
    async write(readings) {
      if (!readings.length) return
      // The writer registers new series in the catalogue before their readings go out (ilpReadingsWriter). The
      // minutes are marked before the write is acknowledged (questdb-rollups.ts says why), alongside it.
      await Promise.all([marks?.mark(readings), writeIlp(readings)])
    },
    async raw(filter, limit, after?: SeriesPosition, skip = 0, signal = NO_DEADLINE) {
      const rows = await query(`select ${RAW_COLUMNS} from ${table} where ${where(filter)}${after ? ` and ${afterSeries('ts', after)}` : ''}
        order by ts, device_id, channel limit ${skip}, ${skip + limit}`, signal)
      return rows.map(rawRow)
    },
    async buckets(filter, spec, limit, after?: BucketPosition, skip = 0, signal = NO_DEADLINE) {
      if (filter.from >= filter.to) return []
      const pieces = await piecesOf(filter.from, filter.to, spec.interval, signal)
      const wanted = limit + skip
      const count = bucketsIn(filter.from, filter.to, spec.interval)
      if (wanted < SPLIT_READ_ROWS || count < 2) return (await readBuckets(filter, spec, pieces(filter.from, filter.to), wanted, after, signal)).slice(skip)
      // The halves split at a bucket's start, so each bucket is read whole by one of them.
      const middle = bucketsAfter(spec.interval, filter.from, Math.floor(count / 2))
      const halves = await Promise.all([{ ...filter, to: middle }, { ...filter, from: middle }].map((half) => readBuckets(half, spec, pieces(half.from, half.to), wanted, after, signal)))
      return halves.flat().slice(skip, wanted)
    },
    caughtUp,
    async settling(from, to) {
      // Without rollups every answer is the raw readings' (the same digits whenever read); with views but no marks,
      // which minutes the views lack is not known.
      if (!views && !tables) return []
      return marks?.markedMinutes(from, to)
    },
    async latest(filter, limit, after?: LatestPosition, signal = NO_DEADLINE) {
      const page = (window: ReadingsFilter) => query(`select * from (
          select ${RAW_COLUMNS} from ${table} where ${where(window)} latest on ts partition by device_id, channel
        )${after ? ` where (${text('device_id')} > ${literal(after[0])} or (${text('device_id')} = ${literal(after[0])} and ${text('channel')} > ${literal(after[1])}))` : ''}
        order by device_id, channel limit ${limit}`, signal)
      // LATEST ON walks the partitions back from the window's end until it has passed them all: it cannot know that
      // no other series is further back, so a room's latest values read the whole table (4.2–4.9 s under the dense
      // site's load, issue 57). Where every series the catalogue holds for the filter has a reading in a tail of the
      // window (a site reporting live), the answer is the one over that tail alone: first the last minutes, then the
      // recent partitions; otherwise the window is read whole, as before. The recent days alone still scanned a day
      // or two of every series (p50 174 ms for one room of 100 series in the dense bench, 7.4.2).
      const end = Math.min(filter.to, Date.now())
      const tails = [end - LATEST_RECENT_MS, Math.floor(end / 86_400_000) * 86_400_000 - LATEST_RECENT_DAYS * 86_400_000].filter((start) => filter.from < start && start < filter.to)
      if (catalogue && tails.length) {
        const series = await catalogue.list(filter)
        const pairs = new Set(series.map((s) => `${s.device_id}\u0000${s.channel}`))
        const seriesIn = async (tail: ReadingsFilter) => Number((await query(`select count() from (select device_id, channel from ${table} where ${where(tail)} latest on ts partition by device_id, channel)`, signal))[0]?.[0])
        for (const from of tails) {
          const tail = { ...filter, from }
          const rows = await page(tail)
          // A first page that is not full holds every series of the tail: no count needed (one query, not two).
          if ((!after && rows.length < limit ? rows.length : await seriesIn(tail)) === pairs.size) return rows.map(rawRow)
        }
      }
      return (await page(filter)).map(rawRow)
    },
    async ping() {
      // Both ways in: HTTP for the readings queries, PG wire for the tables and expiry.
      await Promise.all([query('select 1'), sql.unsafe('select 1')])
    },
    async close() {
      await tables?.stop()
      await watch?.stop()
      await sql.end({ timeout: 5 })
    },
  }
}

