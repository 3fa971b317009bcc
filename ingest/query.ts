// GET /environment/readings: raw readings, per-bucket aggregates, or the latest reading per channel, from
// whichever readings store is configured (CONTRACT §7); as JSON pages or as streamed CSV files.
import { Elysia, t } from 'elysia'
import { acceptsGzip, jsonBody, jsonBodyResponse, jsonTextResponse, type ResponseSet } from '../src/http/compression.ts'
import { canonical, toPage, type CursorCodec, type Page, type CursorScope } from '../src/http/cursor.ts'
import { ApiError } from '../src/http/errors.ts'
import { op } from '../src/http/operation.ts'
import { API_PREFIX } from '../src/http/pipeline.ts'
import { principalMacro } from '../src/http/request.ts'
import { pathOf, queryOf } from '../src/http/request-url.ts'
import { JsonInteger, PageOf } from '../src/http/schemas.ts'
import { Instant, nullable, oneOf } from '../src/records/fields.ts'
import { ReadCancelled } from '../db/client.ts'
import { READINGS_QUERY_DEFAULTS, READINGS_RETENTION_DEFAULTS, type ReadingsQueryLimits, type ReadingsRetention } from '../src/config.ts'
import type { SharedStore } from '../src/kv/interface.ts'
import type { Logger } from '../src/log.ts'
import type { Metrics } from '../src/observability.ts'
import { bucketPage, INTERVALS, planQuery, rawPage, type CatalogueScope, type ReadingsShape } from './planner.ts'
import { Foreground, MAX_YIELD_MS } from './foreground.ts'
import { Lanes } from './lanes.ts'
import { READ_AHEAD_MS, ReadAhead } from './read-ahead.ts'
import { JOIN_MS, SharedReads } from './shared-reads.ts'
import { KeptBuckets } from './kept-buckets.ts'
import { RenderedPages } from './rendered-pages.ts'
import type { SeriesCatalogue } from './series.ts'
import { AGGREGATES, compareKeys, FILLS, GROUPINGS, groupKey, type Aggregate, type BucketPosition, type BucketRow, type BucketSpec, type Grouping, type ReadingsFilter, type ReadingsStore, type SeriesPosition } from './stores/interface.ts'
const DEFAULT_WINDOW_MS = 24 * 3600 * 1000
const JSON_LIMIT = { default: 1000, max: 10_000 }
const CSV_LIMIT = { default: 100_000, max: 1_000_000 }
/**
 * Rows fetched from the store per step of a heavy query's CSV stream: memory stays at one step, whatever the file's
 * size. Steps of 10,000 (a JSON page's most) made fewer round trips, but one such step through PGlite left 40 MB of
 * garbage, near the bound test/processes/readings-export-memory.test.ts holds a file to (50 MB over idle). A light
 * query's file, at most READINGS_HEAVY_ROWS rows, is read in steps of a JSON page's most.
 */
const CSV_STEP_ROWS = 5000
/**
 * Bun collects garbage lazily, and the embedded store's result buffers are large: left alone, an export through
 * PGlite grew the process by about 2 KB per row (1.1 GB for 300,000 rows) before any collection ran, and through
 * Postgres by 136 MB for a million rows. A stream whose process has grown this much since the stream began asks
 * for a collection after each step (about 30 ms on PGlite). Measured again after each collection instead, the
 * allocator's kept pages let a million-row export through Postgres grow 75 MB. At 16 MB a PGlite export of 300,000
 * rows grew 25–50 MB over idle (once past the test's 50); at 8 MB, 31–36 MB.
 */
const CSV_GC_SLACK_BYTES = 8 * 2 ** 20
/**
 * A full collection stops the process for as long as its live heap takes to mark: 20–40 ms for an idle server on
 * PGlite, about 100 ms with the 2 million rows kept buckets may hold (ingest/kept-buckets.ts; Bun 1.4). Asked after
 * every step of an export, the dense site's (676,000 rows in steps of 5,000) stopped every acknowledgement, latest
 * value and page behind it for about half of the export's 25 s. So while they take longer than FREE_GC_MS (the shorter of the last two) one runs at
 * most once per FULL_GC_SPACING times that (a twentieth of the process's time at most), with a young-generation one
 * (about 2 ms) in between; a shorter one runs whenever asked, as the bound above needs (at 25 ms an idle PGlite
 * server's export grew 60–78 MB, spaced; at 50, 24 MB).
 */
const FREE_GC_MS = 50
const FULL_GC_SPACING = 20
/**
 * And only where the live heap is large, as this process knows it: its kept bucket rows (the heap that made full
 * collections long). Time alone did not tell: on a slower day of the same 2-core box an idle PGlite server's full
 * collection took 40–79 ms, so its exports were spaced too and grew 59–78 MB over idle in 3 of 4 runs of
 * test/processes/readings-export-memory.test.ts (past its 50).
 */
const LARGE_HEAP_KEPT_ROWS = 500_000
let lastFullGc = { endedAt: 0, tookMs: 0, lastTookMs: Infinity }

/**
 * Garbage collected now, within the bound above (an export's stream asks after each step); `keptRows`: the rows kept
 * buckets hold. Each collection is told to `collected` (hrs_readings_csv_collections_seconds): the process stood still.
 */
function collectGarbage(keptRows: number, collected: (kind: 'full' | 'young', seconds: number) => void): void {
  const now = performance.now()
  if (keptRows > LARGE_HEAP_KEPT_ROWS && lastFullGc.tookMs > FREE_GC_MS && now - lastFullGc.endedAt < FULL_GC_SPACING * lastFullGc.tookMs) {
    Bun.gc(false)
    collected('young', (performance.now() - now) / 1000)
    return
  }
  Bun.gc(true)
  const endedAt = performance.now()
  collected('full', (endedAt - now) / 1000)
  // The shorter of the last two: a long collection among short ones (much garbage at once) says nothing of the next,
  // a live heap that takes long to mark makes every one long.
  const took = endedAt - now
  lastFullGc = { endedAt, tookMs: Math.min(took, lastFullGc.lastTookMs), lastTookMs: took }
}

const ReadingRow = t.Object({
  ts: Instant,
  device_id: t.Optional(t.String({ description: 'Absent in rows grouped by metric (`group_by=metric`).' })),
  channel: t.Optional(t.String({ description: 'Absent in rows grouped by metric (`group_by=metric`).' })),
  metric: nullable(t.String(), 'Mapped at ingest; null for an unmapped channel.'),
  environment_id: nullable(t.String(), 'In rows grouped by metric, the `environment_id` filter (null without one: the whole account).'),
  value: t.Optional(t.Number({ description: 'Raw and latest rows.' })),
  avg: t.Optional(t.Number()), min: t.Optional(t.Number()), max: t.Optional(t.Number()), last: t.Optional(t.Number()),
  count: t.Optional(JsonInteger()),
}, { $id: '#/components/schemas/ReadingRow', description: 'A reading, or with `interval` one bucket of a series (or with `group_by=metric` of a metric; its `ts` is the bucket start) carrying the requested aggregates; an aggregate an empty bucket lacks is left out.' })

/** A JSON page of readings: what the route declares, and what the tests hold every page to. */
export const ReadingsPage = PageOf(ReadingRow)

const LIMITS = READINGS_QUERY_DEFAULTS
const RETENTION = READINGS_RETENTION_DEFAULTS
const COST_DESCRIPTION = `**What a query may cost** is known before it runs. A query with \`interval\` covers the series the filter matches
(device and channel, under each metric and environment they were stored with; grouped by metric as well, since those are what it
aggregates) times the buckets of the window (weeks and months counted as the calendar has them); at most
${LIMITS.maxBuckets.toLocaleString('en-US')} rows (operator setting \`READINGS_MAX_BUCKETS\`), whatever the page size. Over it the answer is 422
\`query_too_expensive\` at once, with \`max_rows\`, \`rows\`, \`series\`, \`buckets\`, \`suggested_interval\` (the finest coarser interval that is answered,
with \`suggested_from\` when the window must start on its grid for the rollups to answer it) and
\`max_window_seconds\` (the longest window that fits at this interval). Each store query then runs for at most
${LIMITS.timeoutMs / 1000} s (\`READINGS_QUERY_TIMEOUT_MS\`) and is cancelled in the store past it, or when the client goes away: 422
\`query_timeout\`, saying what to narrow. A request is heavy when it has the store compute over ${LIMITS.heavyRows.toLocaleString('en-US')} rows
(\`READINGS_HEAVY_ROWS\`), counted from what it reads, not from the whole question it is a page of: a raw page, CSV file or page of latest readings its \`limit\`; a
page or file of buckets its \`limit\` plus a bucket's rows on either side (one per series the filter matches), at most the whole question.
An account runs at most ${LIMITS.perAccount} heavy requests at once (\`READINGS_QUERIES_PER_ACCOUNT\`, counted across the
service's processes), beyond that 429 \`too_many_queries\` with \`Retry-After\`; and a process runs ${LIMITS.heavyConcurrency} heavy ${LIMITS.heavyConcurrency === 1 ? 'query' : 'queries'}
at a time whatever the account (\`READINGS_HEAVY_CONCURRENCY\`: the share of a node's cores they may take), the others waiting their turn
within their deadline (past it, 429 \`too_many_queries\` as well). A heavy request's reads (each step of a CSV file among them), and the
garbage collections its file asks for, first wait until the process has no light readings request in flight, at most ${MAX_YIELD_MS / 1000} s each:
a dashboard's pages before an export's next rows (the waits are \`hrs_readings_heavy_yield_seconds\` on \`/metrics\`). Answers come from rollups of the readings (per series at 1 minute,
1 hour and 1 day, kept on write) wherever they answer exactly, and from the readings themselves at the window's edges: nothing changes for
callers but speed. While a client walks a JSON listing (a request with \`cursor\` whose page has more, or the first page of a bucketed
query that is not heavy), the page after it is read as it is sent and kept up to ${READ_AHEAD_MS / 1000} s for the next request with that
cursor and \`limit\`; likewise, once a CSV file whose listing has more has been read (an export, walked to its end, from its first file),
the start of the next file: a page or file may hold the readings as they were up to that long before it was asked for. Identical
questions asked at once (same account, window, filters, aggregation, page position and \`limit\`, as dashboards polling one room with the
same \`from\` and \`to\` ask) share one read of the store: a request joins a read begun at most ${JOIN_MS / 1000} s before it, so its answer may
hold the readings as they were up to that long before, and is otherwise the answer of a read of its own (counted in
\`hrs_readings_shared_reads_total\` on \`/metrics\`). A window left to default ends at the moment asked, so it is a question of its own.
Whole buckets a JSON page read are kept by the service (\`READINGS_KEPT_ROWS\`, up to 30 minutes), and the next page of the same question
(account, filters, interval, aggregates, grouping; any window or page size) reads from the store only the buckets not kept: a write into a
kept bucket's time, by any process, makes it read again, so the answer is the one a read of its own gives. Buckets another request is
reading from the store at that moment, with no write into their time since, are waited for rather than read again.

**Retention.** Raw readings are kept ${RETENTION.rawDays} days, minute and 5-minute rollups ${RETENTION.minuteDays}, hour rollups ${RETENTION.hourDays}, day rollups
${RETENTION.dayDays ? `${RETENTION.dayDays} days` : 'forever'} (operator settings \`READINGS_RETENTION_DAYS\`, \`READINGS_MINUTE_ROLLUP_RETENTION_DAYS\`,
\`READINGS_HOUR_ROLLUP_RETENTION_DAYS\`, \`READINGS_DAY_ROLLUP_RETENTION_DAYS\`; 0 keeps forever; deployment-wide, not per account, since
expiry drops whole partitions), each counted in whole UTC days back from today. A window that reaches before them is answered from the
rollups where they answer it exactly (an \`interval\` that is a whole number of a kept level's buckets, from a \`from\` on its grid); otherwise
422 \`beyond_retention\` at once, naming the retention and an interval and \`from\` that fit (never a page that looks like no data).
Every \`suggested_*\` of a refusal is checked by the same planner before it is offered, against both the cost bound and retention:
the same query with them is answered; where no interval is, none is suggested. The
latest readings (\`latest=true\`) are whatever the store still holds. On QuestDB rollups are materialized views (8.3.1 on), on 7.4 tables the service keeps.`

const CSV_DESCRIPTION = `RFC 4180 CSV (\`text/csv; charset=utf-8; header=present\`), streamed: a header line, then one line per row, each ended by CRLF.
Columns: \`ts,device_id,channel,metric,environment_id,value\` for raw readings; with \`interval\`, \`ts,device_id,channel,metric,environment_id\`
followed by the requested aggregates in the order of \`agg\` (\`ts\` is the bucket start); with \`group_by=metric\`, \`ts,metric,environment_id\` then the aggregates. \`ts\` is RFC 3339 UTC with milliseconds; numbers
are plain decimals that read back to the same double (e.g. \`21.5\`, \`-0.25\`, \`1e-7\`); an empty field is null (an unmapped channel's
metric, an empty bucket's aggregate). A field holding a comma, a double quote, CR or LF is enclosed in double quotes with inner quotes
doubled; nothing else is quoted and nothing is escaped against spreadsheet formulas (values are data, sent as stored).
One response is one file of at most \`limit\` rows (a reading stored while a file is being sent, before the file's last row, may make it longer:
it never falls between two files). When more rows follow, the response carries \`Link: <…>; rel="next"\` (RFC 8288; the
same request with the \`cursor\` for the next file) and \`Next-Cursor\`; without them this file is the last. A file holds the rows a JSON
page of the same \`limit\` would, from the same cursor: \`limit\` rows while more follow (of buckets, cut between the series or metrics of a
bucket where \`limit\` falls there), so walking files or pages, at any \`limit\`, gives every row once. A cursor fixes the window, so files follow
on without gaps or repeats. A file's first rows are read before its status line is sent: a refusal (429 \`too_many_queries\` over the
account's heavy queries, 422 \`query_timeout\`) is a problem document, never a 200 that breaks off. A stream that breaks off later (the store
failed mid-file, a deadline passed) ends without the chunked terminator, so the client sees a transfer error rather than a short file
(counted in \`hrs_readings_csv_broken_total\` on \`/metrics\`).`

const GROUP_BY_DESCRIPTION = `With \`interval\`: what a row aggregates. \`series\` (default): one device channel, as stored. \`metric\`: every series of
a metric in scope, one row per metric per bucket: within an environment with \`environment_id\`, otherwise across the whole account (every
environment, and channels mapped to a metric without one); the other filters narrow the series aggregated. Channels without a metric are left out.
A grouped row has no \`device_id\` or \`channel\`; its \`environment_id\` is the filter's (null without one); CSV columns are
\`ts,metric,environment_id\` then the aggregates. Aggregates are over the readings themselves, never averages of averages: \`avg\` is their sum
÷ their count, \`min\`, \`max\` and \`count\` are over every reading of every series in the bucket, and \`last\` is the value read latest
(the greatest of them when several series have a reading at that same instant). A series is counted under the metric it had when each reading
was stored. \`fill\` gives every bucket to every metric with a reading in the window. Rows are ordered by bucket, then metric.`

const Query = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: CSV_LIMIT.max, description: `JSON: page size 1–${JSON_LIMIT.max} (default ${JSON_LIMIT.default}). CSV: rows per file 1–${CSV_LIMIT.max} (default ${CSV_LIMIT.default}).` })),
  cursor: t.Optional(t.String({ maxLength: 2048, description: 'The `next_cursor` of the previous page (or `Next-Cursor` of the previous CSV file); bound to this list and its filters, valid for JSON and CSV alike.' })),
  environment_id: t.Optional(t.String({ maxLength: 40 })),
  device_id: t.Optional(t.String({ maxLength: 40 })),
  channel: t.Optional(t.String({ maxLength: 32 })),
  metric: t.Optional(t.String({ maxLength: 50 })),
  from: t.Optional(t.String({ format: 'date-time', description: 'Inclusive; default 24 hours before `to`.' })),
  to: t.Optional(t.String({ format: 'date-time', description: 'Exclusive; default now.' })),
  interval: t.Optional(oneOf(Object.keys(INTERVALS) as [keyof typeof INTERVALS], 'Bucket width: one row per bucket per series (device, channel), or per metric with `group_by=metric`. Buckets are in UTC: `1m` to `1d` aligned to the epoch (midnight UTC for `1d`), `1w` ISO weeks starting Monday 00:00 UTC, `1mo` calendar months starting on the 1st at 00:00 UTC. A row\'s `ts` is its bucket\'s start.')),
  group_by: t.Optional(oneOf([...GROUPINGS], GROUP_BY_DESCRIPTION)),
  agg: t.Optional(t.String({ pattern: `^(${AGGREGATES.join('|')})(,(${AGGREGATES.join('|')}))*$`, 'x-expected': `a comma-separated list of: ${AGGREGATES.join(', ')}`, description: 'With `interval`: comma-separated aggregates (default avg). `avg` is the sum of a bucket\'s readings ÷ their count, its partial sums (per series, per rollup bucket or run of readings) added in one fixed order (series, then time) on every store, so the same question gives the same digits whatever the page size or format. A bucket read from a rollup adds its minutes\' or hours\' sums where the raw readings add each value: while a rollup catches up with recent writes, an `avg` may change once in its last digits (floating-point rounding of the sums).', examples: ['avg,max'] })),
  fill: t.Optional(oneOf([...FILLS], 'With `interval`: `none` (default) lists only buckets holding readings; `null` and `previous` list every bucket of the window for every series with a reading in the window, so gaps show. An empty bucket has `count` 0 and its other aggregates absent (`null`) or carried from the series\' latest earlier bucket in the window (`previous`; absent before its first reading); its `metric` and `environment_id` are those of that earlier bucket.')),
  latest: t.Optional(t.Boolean({ description: 'The newest reading per series in the window (default window: all time). JSON only.' })),
  format: t.Optional(oneOf(['json', 'csv'], 'Response format; overrides `Accept`. Without it, `Accept: text/csv` preferred over JSON (by q-value) answers CSV; any other `Accept`, including types this operation cannot produce, answers JSON (no 406).')),
})

/** CSV when the query says so, or when Accept ranks text/csv above JSON; JSON otherwise (RFC 9110 §12.5.1 lets a server ignore an Accept it cannot meet). */
function wantsCsv(format: 'json' | 'csv' | undefined, accept: string | null): boolean {
  if (format) return format === 'csv'
  if (!accept) return false
  let csv = 0
  let json = 0
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((s) => s.trim().toLowerCase())
    const q = Number(params.find((p) => p.startsWith('q='))?.slice(2) ?? 1)
    if (!(q >= 0 && q <= 1)) continue
    if (type === 'text/csv') csv = Math.max(csv, q + 0.002)
    else if (type === 'text/*') csv = Math.max(csv, q + 0.001)
    if (type === 'application/json') json = Math.max(json, q + 0.002)
    else if (type === 'application/*' || type === '*/*') json = Math.max(json, q + 0.001)
  }
  // The small bonus makes the more specific range win at equal q (RFC 9110 §12.5.1); ties go to JSON.
  return csv > json
}

/** One RFC 4180 field. */
const csvField = (value: string | number | null | undefined): string => {
  if (value === null || value === undefined) return ''
  if (typeof value === 'number') return String(value)
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value
}
const csvLine = (fields: (string | number | null | undefined)[]) => `${fields.map(csvField).join(',')}\r\n`

type IdentityField = 'device_id' | 'channel' | 'metric' | 'environment_id'
/**
 * A row's identity fields (device_id, channel, metric, environment_id; or metric, environment_id) as CSV text, made
 * once per identity and reused: a file cycles through the same few series, and quoting every field of every row
 * again was most of the encoding's time (5,000 daily rows: 6–7 ms encoded field by field, 3.8 ms this way).
 */
function identityText(fields: readonly IdentityField[]): (row: Row) => string {
  const [first, second, ...rest] = fields as [IdentityField, IdentityField, ...IdentityField[]]
  const made = new Map<unknown, Map<unknown, { rest: unknown[]; text: string }>>()
  return (row) => {
    let bySecond = made.get(row[first])
    if (!bySecond) made.set(row[first], (bySecond = new Map()))
    let known = bySecond.get(row[second])
    for (let i = 0; known && i < rest.length; i++) if (known.rest[i] !== row[rest[i]!]) known = undefined
    if (!known) bySecond.set(row[second], (known = { rest: rest.map((f) => row[f]), text: fields.map((f) => csvField(row[f])).join(',') }))
    return known.text
  }
}

type Row = BucketRow & { value?: number }
/** A row's place in its listing: (ts, device_id, channel) of a reading or a series' bucket, (ts, metric, '') of a metric's. */
const positionKey = (row: Row, groupBy: Grouping): BucketPosition => [row.ts, ...groupKey(row, groupBy)]
/** The order of two positions in a listing: by time, then group key bytewise, as the stores order rows. */
const comparePositions = (a: BucketPosition, b: BucketPosition) => a[0] - b[0] || compareKeys([a[1], a[2]], [b[1], b[2]])

export interface ReadingsQueryDeps {
  readings: ReadingsStore
  cursors: CursorCodec
  series: SeriesCatalogue
  shared: SharedStore
  config: { readingsQueries: ReadingsQueryLimits; readingsRetention: ReadingsRetention }
  metrics: Pick<Metrics, 'readingsHeavyYields' | 'readingsCsvBroken' | 'readingsCsvCollections' | 'readingsSharedReads' | 'readingsBucketRows' | 'readingsPagesResent'>
  log: Logger
}

const SLOT_POLL_MS = 50

/**
 * Runs one read of the store for a request: under the deadline, cancelled in the store when the deadline passes
 * or the client goes away; a heavy read holds one of the account's slots (counted in the shared store, so across
 * processes and nodes) while it runs, and one of this process's lanes (ingest/lanes.ts). Without a free slot the
 * request is refused with 429, or, for the later steps of a CSV file already being sent, waits for one; it waits
 * for a lane within its deadline, then is refused with 429 too.
 */
async function underDeadline<T>(deps: ReadingsQueryDeps, lanes: Lanes, foreground: Foreground, clientGone: AbortSignal, accountId: string, heavy: boolean, waitForSlot: boolean, read: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const limits = deps.config.readingsQueries
  const seconds = Math.ceil(limits.timeoutMs / 1000)
  const slots = `readings-queries:${accountId}`
  let slot: string | null = null
  if (heavy) {
    // Before its slot is taken and its deadline begins: waiting here holds up nothing of the account's.
    deps.metrics.readingsHeavyYields.observe([], await foreground.lull())
    const giveUpAt = Date.now() + limits.timeoutMs
    while (!(slot = await deps.shared.takeSlot(slots, limits.perAccount, limits.timeoutMs + 1_000))) {
      if (!waitForSlot || Date.now() >= giveUpAt || clientGone.aborted) {
        throw new ApiError('too_many_queries', `This account already has ${limits.perAccount} heavy readings queries running (each may take up to ${seconds} s). Retry when one has finished, or ask for fewer rows per query.`, { headers: { 'retry-after': String(seconds) } })
      }
      await Bun.sleep(SLOT_POLL_MS)
    }
  }
  // The deadline counts from here: time spent waiting for a lane is part of it.
  const signal = AbortSignal.any([clientGone, AbortSignal.timeout(limits.timeoutMs)])
  const laneTaken = heavy && (await lanes.enter(signal))
  try {
    if (heavy && !laneTaken) {
      if (clientGone.aborted) throw clientGone.reason
      throw new ApiError('too_many_queries', `This process runs ${limits.heavyConcurrency} heavy readings ${limits.heavyConcurrency === 1 ? 'query' : 'queries'} at a time and this one waited ${seconds} s for its turn. Retry shortly, or ask for fewer rows per query.`, { headers: { 'retry-after': '1' } })
    }
    return await read(signal)
  } catch (error) {
    if (clientGone.aborted) throw error
    if (error instanceof ReadCancelled && !error.started) {
      throw new ApiError('service_unavailable', `The readings store did not start this query within ${seconds} s: its connections are all busy, or it is unreachable. Nothing was changed; retry shortly.`, { headers: { 'retry-after': '1' } })
    }
    if (error instanceof ReadCancelled || isStoreTimeout(error)) {
      throw new ApiError('query_timeout', `This query did not finish within ${seconds} s and was cancelled in the store. Narrow it: a shorter window (from, to), a coarser interval, fewer series (device_id, channel, metric) or a smaller limit.`)
    }
    throw error
  } finally {
    if (laneTaken) lanes.leave()
    if (slot) void deps.shared.giveSlot(slots, slot).catch(() => {})
  }
}

/**
 * The store's own statement timeout (our backstop, should our cancel be lost): SQLSTATE 57014 from Postgres;
 * QuestDB sends SQLSTATE 00000 with "timeout, query aborted" (7.4 and 9.x).
 */
const isStoreTimeout = (error: unknown) => {
  const { code, message } = error as { code?: unknown; message?: unknown }
  // 57014 is also a query cancelled before it started (Postgres unreachable, db/client.ts): that one is a 503.
  return typeof message === 'string' && ((code === '57014' && message.includes('statement timeout')) || message.startsWith('timeout, query aborted'))
}

/** A walk's next page goes unread only by its deadline (underDeadline) or a refused slot. */
const NEVER_ABORTED = new AbortController().signal

export function readingsRoutes(deps: ReadingsQueryDeps) {
  const readAhead = new ReadAhead<Row[]>()
  const sharedReads = new SharedReads(() => deps.metrics.readingsSharedReads.inc())
  const heavyLanes = new Lanes(deps.config.readingsQueries.heavyConcurrency)
  const foreground = new Foreground()
  const kept = new KeptBuckets(deps.shared, deps.config.readingsQueries.keptRows, (fromStore, fromKept) => {
    deps.metrics.readingsBucketRows.inc(['store'], fromStore)
    deps.metrics.readingsBucketRows.inc(['kept'], fromKept)
  })
  // JSON pages of buckets are answered from kept buckets where they can be; a CSV file (an export, read once) is not kept.
  const keptStore = kept.over(deps.readings)
  // Pages of buckets sent again as they were, where made from the same kept rows: from as many rows as may be kept at most.
  const renderedPages = new RenderedPages<Row>(deps.config.readingsQueries.keptRows, (rows) => kept.holdsAll(rows), () => deps.metrics.readingsPagesResent.inc())
  return new Elysia({ name: 'readings', prefix: API_PREFIX })
    .use(principalMacro)
    .get('/environment/readings', async ({ principal, request, query, set }) => {
      const { limit, cursor, format, ...filters } = query
      const csv = wantsCsv(format, request.headers.get('accept'))
      const accountId = principal.accountId
      // The format is left out of the binding: one cursor continues a listing as JSON or as CSV.
      const scope: CursorScope = { list: 'readings', accountId, filters }
      const position = cursor ? deps.cursors.decode(scope, cursor) : undefined
      const refuse = (path: string, detail: string, message: string) => new ApiError('invalid_parameter', detail, { errors: [{ path, message }] })
      if (query.interval && query.latest) throw refuse('/query/latest', 'Use either interval or latest.', 'cannot be combined with interval')
      if (query.agg && !query.interval) throw refuse('/query/agg', 'agg needs an interval.', 'needs interval')
      if (query.fill && !query.interval) throw refuse('/query/fill', 'fill needs an interval.', 'needs interval')
      if (query.group_by && !query.interval) throw refuse('/query/group_by', 'group_by needs an interval.', 'needs interval')
      if (csv && query.latest) throw refuse('/query/latest', 'CSV covers raw readings and buckets; ask for the latest readings as JSON.', 'not available as CSV')
      if (!csv && limit !== undefined && limit > JSON_LIMIT.max) throw refuse('/query/limit', `A JSON page holds at most ${JSON_LIMIT.max} rows; CSV files up to ${CSV_LIMIT.max}.`, `at most ${JSON_LIMIT.max} for JSON`)
      // The window is fixed by the first page (carried in the cursor), so "now" does not slide under a paging client.
      // The latest readings' default window ends a year ahead, on a whole minute: asked within the same minute, it is
      // the same question, so identical asks share a read and their cursors (shared-reads.ts).
      const to = position ? Number(position[0]) : query.to ? Date.parse(query.to) : query.latest ? Math.ceil((Date.now() + 366 * 86_400_000) / 60_000) * 60_000 : Date.now()
      const from = position ? Number(position[1]) : query.from ? Date.parse(query.from) : query.latest ? 0 : to - DEFAULT_WINDOW_MS
      if (from >= to) throw refuse('/query/from', 'from must be before to.', 'must be before to')
      const filter: ReadingsFilter = { accountId, environmentId: query.environment_id, deviceId: query.device_id, channel: query.channel, metric: query.metric, from, to }
      const store = deps.readings
      const window = [to, from] as const
      const groupBy = query.group_by ?? 'series'
      const spec: BucketSpec | undefined = query.interval
        ? { interval: query.interval, aggregates: (query.agg?.split(',') ?? ['avg']) as Aggregate[], fill: query.fill ?? 'none', groupBy }
        : undefined
      const rowLimit = limit ?? (csv ? CSV_LIMIT.default : JSON_LIMIT.default)
      // The cost is known before anything runs in the store: refused here when over the limits (ingest/planner.ts).
      const shape: ReadingsShape = query.latest ? { kind: 'latest', limit: rowLimit } : query.interval ? { kind: 'buckets', interval: query.interval, fill: query.fill ?? 'none' } : { kind: 'raw', limit: rowLimit }
      // A query grouped by metric costs what the series it aggregates cost, though it answers a row per metric. The
      // latest readings cost their page's limit at most (planner.ts boundRows), with no read of the catalogue: their
      // answer reads it once more (kept-latest.ts), and every read of the records database is a wait in a busy process.
      const series = query.latest ? 0 : await deps.series.count(filter)
      const catalogue: CatalogueScope = { series, metrics: spec?.groupBy === 'metric' ? await deps.series.metrics(filter) : [] }
      // One more row than the page or file: whether the listing goes on.
      const { bound, heavy } = planQuery(shape, series, from, to, { limits: deps.config.readingsQueries, levels: store.rollupLevels, retention: deps.config.readingsRetention, now: Date.now() }, rowLimit + 1)
      // A light request is foreground while it is answered: heavy reads wait for a lull in them (foreground.ts).
      const leave = heavy ? undefined : foreground.enter()
      try {
        const read = <T>(work: (signal: AbortSignal) => Promise<T>, waitForSlot = false, clientGone = request.signal) => underDeadline(deps, heavyLanes, foreground, clientGone, accountId, heavy, waitForSlot, work)
        // What decides a read's rows, with the account first (shared-reads.ts): the filter (the account, the window, the
        // filters) and the aggregation; a read's own key adds its page position and size.
        const question = `${accountId}\u0000${JSON.stringify([filter, spec ?? null])}`
        /** The read, shared with an identical one in flight; not a later step of a CSV file, which waits for a slot. */
        const sharedRead = <T>(key: string, work: (signal: AbortSignal) => Promise<T>, waitForSlot: boolean, clientGone: AbortSignal) => waitForSlot
          ? read(work, true, clientGone)
          : sharedReads.read(`${question}\u0000${key}`, clientGone, (allGone) => read(work, false, allGone))
        const fetchRows = (count: number, after?: BucketPosition, skip?: number, waitForSlot = false, clientGone = request.signal): Promise<Row[]> =>
          sharedRead<Row[]>(JSON.stringify(['rows', count, after ?? null, skip ?? 0]),
            async (signal) => (spec ? bucketPage(csv ? store : keptStore, filter, spec, count, after, signal, catalogue, skip ?? 0) : rawPage(store, filter, count, after as SeriesPosition | undefined, skip ?? 0, signal, series)), waitForSlot, clientGone)
        const encodePosition = (p: BucketPosition) => deps.cursors.encode(scope, [...window, ...p])

        if (query.latest) {
          const latestAfter = position ? [String(position[2]), String(position[3])] as [string, string] : undefined
          const rows = await sharedRead(JSON.stringify(['latest', rowLimit + 1, latestAfter ?? null]), (signal) => store.latest(filter, rowLimit + 1, latestAfter, signal), false, request.signal)
          return jsonPage(toPage(rows, rowLimit, deps.cursors, scope, (r) => [...window, r.device_id, r.channel], presenter()), request, set)
        }
        const after = position ? [Number(position[2]), String(position[3]), String(position[4])] as BucketPosition : undefined
        if (!csv) {
          // A cursor names the window, filters and position (bound to this account by its MAC): with the page size, it
          // says which rows a page holds, so a page read ahead under that key is the page asked for.
          const pageKey = (pageCursor: string) => `${accountId}\u0000${rowLimit}\u0000${pageCursor}`
          const rows = (cursor ? await readAhead.take(pageKey(cursor)) : undefined) ?? await fetchRows(rowLimit + 1, after)
          /** The page's last row, where more rows follow it: the next page's position. */
          const last = rows.length > rowLimit ? positionKey(rows[rowLimit - 1]!, groupBy) : undefined
          // From a walk's second page on; from the first too where the query is bucketed and light (READINGS_HEAVY_ROWS
          // bounds all its rows, so a page read for nothing is small, and it holds none of the account's slots). A
          // year's daily buckets (two pages) on QuestDB 7.4.2 walked in 47.1 ms this way against 53.2 ms (medians of four
          // alternating runs of `bun run bench history --store questdb`, faster in each pair); on 9.3.2, whose reads
          // answer sooner, two pairs showed no difference.
          if (last && (cursor || (spec && !heavy))) {
            // Not tied to this request: it has been answered by the time the next one comes.
            readAhead.start(pageKey(encodePosition(last)), () => fetchRows(rowLimit + 1, last, 0, false, NEVER_ABORTED))
          }
          const page = () => toPage(rows, rowLimit, deps.cursors, scope, (r) => [...window, ...positionKey(r, groupBy)], presenter())
          // Raw readings are read from the store each time: their rows are never the same objects twice.
          if (!spec) return jsonPage(page(), request, set)
          // A page of buckets made from the same kept rows as one sent before is sent again as it was (rendered-pages.ts).
          const renderKey = `${accountId}\u0000${canonical(filters)}\u0000${from}\u0000${to}\u0000${rowLimit}\u0000${cursor ?? ''}\u0000${acceptsGzip(request.headers.get('accept-encoding'))}`
          const body = renderedPages.body(renderKey, rows, () => jsonBody(request, JSON.stringify(page()), (set.headers as Record<string, unknown>).etag !== undefined))
          // Elysia types a handler's answer as one shape; a Response is sent as it is, outside the JSON schema.
          return jsonBodyResponse(set, body) as unknown as Page<PresentedRow>
        }

        // CSV: a file is the run of pages of `limit` rows that starts at the cursor, cut where a JSON page of that size
        // is cut (between series of a bucket too), so a walk of files holds the rows of a walk of pages. Its next
        // cursor goes in the headers, sent before the body, so where the file ends is known first; and so is its first
        // step, read (a heavy one's slot taken) before the status line: a refusal is still a problem document.
        const fileLimit = rowLimit
        // A walk's next file has its first step read as this one ends (as JSON pages are read ahead), under a key of its
        // own: one cursor continues a listing in either format, and a file's step is not a page.
        const stepKey = (fileCursor: string) => `csv\u0000${accountId}\u0000${fileLimit}\u0000${fileCursor}`
        // A light query's file (its rows are at most READINGS_HEAVY_ROWS) is read in steps of a JSON page's most, as its
        // pages would be; a heavy one in steps of CSV_STEP_ROWS, one read at a time.
        const stepLimit = deps.config.readingsQueries.csvStepRows ?? (heavy ? CSV_STEP_ROWS : JSON_LIMIT.max)
        const firstStepRows = Math.min(stepLimit, fileLimit)
        // Measured before the first step is read: its garbage counts towards the next collection (measured after it, a
        // PGlite export of 300,000 readings grew 49.9 MB over idle against 35.8 MB).
        const collectAbove = process.memoryUsage.rss() + CSV_GC_SLACK_BYTES
        // One row more than the step: whether the listing goes on past it.
        const firstStep = (cursor ? await readAhead.take(stepKey(cursor)) : undefined) ?? await fetchRows(firstStepRows + 1, after)
        /** The file's last row, where more rows follow it: the next file's cursor. */
        let next: BucketPosition | undefined
        if (firstStep.length > firstStepRows) {
          if (fileLimit === firstStepRows) next = positionKey(firstStep[fileLimit - 1]!, groupBy)
          // Buckets the catalogue says cannot fill the file (bound: a row per series per bucket of the window) end with
          // the listing: looking for the file's last row would read the whole listing once more, in one read, before a
          // byte is sent (issue 57's export, 676,000 hourly rows in a file of 1,000,000, ran out of its 5 s there).
          else if (!(spec && bound <= fileLimit)) {
            // A file of several steps: its last row and the one after it, found first (the store skips to them).
            const edge = await fetchRows(2, after, fileLimit - 1)
            if (edge.length === 2) next = positionKey(edge[0]!, groupBy)
          }
        }
        const fileRows = firstStep.slice(0, firstStepRows)
        /** Where a row lies against the file's end: readings stored while the file is read do not move it. */
        const placeOf = (row: Row): 'in' | 'last' | 'past' => {
          if (!next) return 'in'
          const order = comparePositions(positionKey(row, groupBy), next)
          return order < 0 ? 'in' : order === 0 ? 'last' : 'past'
        }
        const headers: Record<string, string> = {
          ...(set.headers as Record<string, string>),
          'content-type': 'text/csv; charset=utf-8; header=present',
          'content-disposition': 'attachment; filename="readings.csv"',
        }
        let nextCursor: string | undefined
        if (next) {
          const cursor = (nextCursor = encodePosition(next))
          const query = new URLSearchParams(queryOf(request.url))
          query.set('cursor', cursor)
          headers['link'] = `<${pathOf(request.url)}?${query}>; rel="next"`
          headers['next-cursor'] = cursor
        }
        const identity = spec?.groupBy === 'metric' ? ['ts', 'metric', 'environment_id'] : ['ts', 'device_id', 'channel', 'metric', 'environment_id']
        const columns = [...identity, ...(spec ? spec.aggregates : ['value'] as const)]
        const encoder = new TextEncoder()
        let headerSent = false
        const isoOf = instantText()
        const identityOf = identityText(identity.slice(1) as IdentityField[])
        const values = columns.slice(identity.length) as ('value' | Aggregate)[]
        const lineOf = (row: Row) => {
          let line = `${isoOf(row.ts)},${identityOf(row)}`
          // Numbers, or nothing for an aggregate an empty bucket lacks.
          for (const field of values) {
            const value = row[field]
            line += value === undefined || value === null ? ',' : `,${value}`
          }
          return `${line}\r\n`
        }
        let sent = 0
        let pending: Row[] | undefined = fileRows
        let finished = false
        /**
         * The rows of this file in the step `rows`, and whether the file ends with them: at its last row (the next
         * file's cursor), or where the listing ends. Not at a count: a reading stored while the file is read, before
         * its last row, makes the file a row longer rather than fall between it and the next.
         */
        const take = (rows: Row[], asked: number): Row[] => {
          let taken = 0
          while (taken < rows.length) {
            const place = placeOf(rows[taken]!)
            if (place === 'past') { finished = true; break }
            taken++
            if (place === 'last') { finished = true; break }
          }
          if (rows.length < asked) finished = true
          sent += taken
          return taken === rows.length ? rows : rows.slice(0, taken)
        }
        let nextStep: Promise<Row[]> | undefined
        const readStep = (resumeAfter: BucketPosition) => {
          // Never more than the file can still hold, as far as it was known when its end was found.
          const wanted = sent < fileLimit ? Math.min(stepLimit, fileLimit - sent) : stepLimit
          const rows = fetchRows(wanted, resumeAfter, 0, true).then((rows) => take(rows, wanted))
          // A step the client never asks for (it went away) fails with nobody waiting for it.
          rows.catch(() => {})
          return rows
        }
        // The first step's rows: the whole of it unless the listing ended within it.
        const firstRows = take(fileRows, firstStep.length > firstStepRows ? firstStepRows : firstStepRows + 1)
        const body = new ReadableStream<Uint8Array>({
          // Pull: steps are sent only as fast as the client takes them, and at most one more is read meanwhile.
          async pull(controller) {
            try {
              let text = headerSent ? '' : csvLine(columns)
              headerSent = true
              const rows = pending ? firstRows : await nextStep!
              pending = undefined
              if (!finished && rows.length) {
                // The next step, read while this one is encoded and sent (it starts once the step before it has arrived).
                // Waiting for the client to ask first left the store idle while each step was encoded and travelled: a
                // year's hourly buckets as CSV (36 files of two steps) took 1,581 ms that way and 1,444 ms read ahead
                // (median of 5, interleaved on the same data).
                nextStep = readStep(positionKey(rows[rows.length - 1]!, groupBy))
              } else finished = true
              // Lines joined once: appended one by one, they made a string of thousands of pieces for the encoder to walk.
              const lines = new Array<string>(rows.length)
              for (let i = 0; i < rows.length; i++) lines[i] = lineOf(rows[i]!)
              text += lines.join('')
              if (text) controller.enqueue(encoder.encode(text))
              if (finished) {
                // Once this file's last step has been read, so that a walk has one read at a time (one of the
                // account's slots). Files are read ahead from the first: a CSV listing is an export, walked to its end.
                const from = next
                if (from && nextCursor) readAhead.start(stepKey(nextCursor), () => fetchRows(firstStepRows + 1, from, 0, false, NEVER_ABORTED))
                return controller.close()
              }
              if (process.memoryUsage.rss() > collectAbove) {
                // A collection stops every request in the process: a heavy file's waits for a lull in the light ones too.
                if (heavy) deps.metrics.readingsHeavyYields.observe([], await foreground.lull())
                collectGarbage(kept.size, (kind, seconds) => deps.metrics.readingsCsvCollections.observe([kind], seconds))
              }
            } catch (error) {
              // The status line and part of the file are gone: the file is ended without its chunked terminator, so a
              // client sees a transfer error, never a short file that looks whole.
              deps.metrics.readingsCsvBroken.inc()
              deps.log.warn('readings_csv_broken', { account_id: accountId, rows_sent: sent, error: error instanceof Error ? error.message : String(error) })
              // Errored without a reason: Bun writes an errored body's reason to stderr as if it were uncaught, and
              // this one is logged above, once, as a line of our log.
              controller.error(undefined)
            }
          },
          cancel() { nextStep = undefined },
        }, { highWaterMark: 0 })
        // Elysia types a handler's answer as one shape; a Response is sent as it is, outside the JSON schema.
        return new Response(body, { status: 200, headers }) as unknown as Page<PresentedRow>
      } finally {
        leave?.()
      }
    }, {
      principal: true,
      query: Query,
      response: { 200: ReadingsPage },
      detail: op({
        operationId: 'queryReadings',
        summary: 'Query sensor readings',
        description: `Raw readings in time order (default: the last 24 hours); with \`interval\` and \`agg\` one row per bucket per series (\`fill\` adds the empty buckets); with \`latest=true\` the newest reading per series. As JSON, \`limit\` 1–${JSON_LIMIT.max} (default ${JSON_LIMIT.default}). As CSV (\`format=csv\` or \`Accept: text/csv\`): ${CSV_DESCRIPTION} Errors are problem+json whatever the format.\n\n${COST_DESCRIPTION}`,
        tags: ['Environment'], scopes: ['environment:read'], errors: [422, 429],
        produces: { 'text/csv': { schema: { type: 'string', description: 'RFC 4180 CSV; see the operation description for the columns.' }, headers: ['Link', 'Next-Cursor', 'Content-Disposition'] } },
      }),
    })
}

/**
 * Instants as RFC 3339 text, remembering the last one: rows come in time order, and every series of a bucket (or
 * every channel read at one instant) shares its time, so most rows reuse the text of the row before.
 */
function instantText(): (ms: number) => string {
  let lastMs = NaN
  let lastText = ''
  return (ms) => (ms === lastMs ? lastText : (lastText = new Date((lastMs = ms)).toISOString()))
}

/**
 * A row as the API shows it, `ts` as text: one presenter per page. Its fields come in one order whatever the row's
 * source (the order of ReadingRow), and only those the row has: JSON leaves an undefined field out anyway, but
 * objects without them stringify faster (a page of 10,000 5-minute averages: 0.95 against 1.54 ms, Bun 1.4.5), and
 * JSON.stringify was the largest part of the server's CPU as the dense bench's dashboards first asked (issue 57).
 */
type PresentedRow = Omit<Row, 'ts'> & { ts: string }
function presenter(): (row: Row) => PresentedRow {
  const isoOf = instantText()
  return (row: Row) => {
    const out = { ts: isoOf(row.ts) } as PresentedRow
    if (row.device_id !== undefined) out.device_id = row.device_id
    if (row.channel !== undefined) out.channel = row.channel
    out.metric = row.metric
    out.environment_id = row.environment_id
    if (row.value !== undefined) out.value = row.value
    if (row.avg !== undefined) out.avg = row.avg
    if (row.min !== undefined) out.min = row.min
    if (row.max !== undefined) out.max = row.max
    if (row.last !== undefined) out.last = row.last
    if (row.count !== undefined) out.count = row.count
    return out
  }
}

/**
 * A page sent as it is: its rows are ours, typed against ReadingRow here and checked against the published schema by
 * the tests (test/http/readings-*.test.ts), so Elysia's check of every field of every row (a quarter of the CPU of a
 * 10,000-row page, most of it the date-time pattern) is not run per request. It leaves as every JSON answer does
 * (src/http/compression.ts): gzipped where the client takes it, its headers in the Response. Before, Elysia copied a
 * page into a new Response around its body as a stream, 6.9 % of the server's CPU samples in the dense bench's phase
 * (SQL store, a profile), and sent it whole: 2.0 MB for 10,000 rows of 5-minute averages, 218 KB gzipped (level 1,
 * 2.2 ms of CPU against JSON.stringify's 2.8 ms for that page).
 */
function jsonPage(page: Page<PresentedRow>, request: Request, set: ResponseSet): Page<PresentedRow> {
  const response = jsonTextResponse(request, set, JSON.stringify(page))
  // Elysia types a handler's answer as one shape; a Response is sent as it is, outside the JSON schema.
  return response as unknown as Page<PresentedRow>
}
