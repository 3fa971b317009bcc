// Readings in QuestDB: writes over ILP/HTTP through the official client (each flush is one HTTP request, which
// QuestDB commits as a transaction before answering; ILP/TCP could drop data silently, so it is refused), reads
// over PG wire. The table is made explicitly: designated timestamp, daily WAL partitions, and DEDUP UPSERT KEYS
// on (ts, device, channel) so a retried batch replaces rather than duplicates.
//
// QuestDB applies WAL writes asynchronously: a reading is durable when acknowledged and visible to queries a
// moment later.
import { Sender } from '@questdb/nodejs-client'
import postgres from 'postgres'
import type { Config } from '../../src/config.ts'
import { bucketWindow, firstBucket, type Aggregate, type BucketSpec, type BucketRow, type LatestPosition, type RawRow, type Reading, type ReadingsFilter, type ReadingsStore, type SeriesPosition } from './interface.ts'

const UNITS: [number, string][] = [[86_400_000, 'd'], [3_600_000, 'h'], [60_000, 'm']]
/** 3 600 000 ms → "1h": SAMPLE BY takes a count and a unit. */
function sampleUnit(intervalMs: number): string {
  for (const [ms, unit] of UNITS) if (intervalMs % ms === 0) return `${intervalMs / ms}${unit}`
  throw new Error(`unsupported interval ${intervalMs} ms`)
}

/** A SQL string literal. Values reach here already validated, but quoting keeps any text harmless. */
const literal = (value: string) => `'${value.replace(/'/g, "''")}'`
const instant = (ms: number) => `'${new Date(ms).toISOString()}'`
const AGGREGATE_SQL: Record<Aggregate, string> = { avg: 'avg(value)', min: 'min(value)', max: 'max(value)', last: 'last(value)', count: 'count()' }
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
const micros = (value: unknown) => Math.round(Number(value) / 1000)
const nullable = (value: unknown) => (value === null || value === undefined || value === '' ? null : String(value))
const rawRow = (r: Row): RawRow => ({
  ts: micros(r.ts_us), device_id: String(r.device_id), channel: String(r.channel), metric: nullable(r.metric), environment_id: nullable(r.environment_id), value: Number(r.value),
})

/**
 * SAMPLE BY over the filter. A fill covers the whole window: FILL only spans the rows sampled, and SAMPLE BY …
 * FROM/TO (8.1 on) is refused for keyed queries before 9.x, so two boundary rows without a series are sandwiched
 * around the readings (QuestDB's own recipe, which 7.4 and 9.x both run); their group is dropped by the caller
 * (`device_id is not null`). Metric and environment fill with PREV in both modes (FILL(NULL) refuses symbols),
 * count with 0.
 */
function sampled(table: string, filter: ReadingsFilter, spec: BucketSpec, after?: SeriesPosition): string {
  const selected = spec.aggregates.map((a) => `${AGGREGATE_SQL[a]} "${a}"`).join(', ')
  const window = bucketWindow(filter, spec, after)
  const head = `select ts, device_id, channel, last(metric) metric, last(environment_id) environment_id, ${selected}`
  const every = `sample by ${sampleUnit(spec.intervalMs)}`
  if (spec.fill === 'none') return `${head} from ${table} where ${where(window)} ${every} align to calendar`
  const boundary = (ms: number) => `(select cast(${instant(ms)} as timestamp) ts, cast(null as symbol) device_id, cast(null as symbol) channel,
    cast(null as symbol) metric, cast(null as symbol) environment_id, cast(null as double) value from long_sequence(1))`
  const rows = `(${boundary(firstBucket(window, spec.intervalMs))}
    union all (select ts, device_id, channel, metric, environment_id, value from ${table} where ${where(window)})
    union all ${boundary(window.to - 1)}) timestamp(ts)`
  const fills = ['prev', 'prev', ...spec.aggregates.map((a) => (a === 'count' ? '0' : spec.fill === 'previous' ? 'prev' : 'null'))]
  return `${head} from ${rows} ${every} fill(${fills.join(', ')}) align to calendar`
}

export async function questdbStore(config: Config): Promise<ReadingsStore> {
  const ilp = config.questdbIlp!
  if (!/^https?::/.test(ilp)) throw new Error('QUESTDB_ILP must use the http or https transport (ILP over TCP can lose data without telling)')
  if (!config.questdbPgUrl) throw new Error('QUESTDB_PG_URL is needed with QUESTDB_ILP: queries go over PG wire')
  const table = config.questdbTable
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error('QUESTDB_TABLE must be a plain identifier')
  // One batch is one request: the store decides when to flush, never the client on its own. Under Bun the
  // client's default undici transport does not work (Bun's undici has no Agent.request), so the Node http
  // transport is used unless the configuration chooses.
  let senderConfig = ilp.replace(/;?$/, ';')
  if (!/auto_flush=/.test(senderConfig)) senderConfig += 'auto_flush=off;'
  if (!/stdlib_http=/.test(senderConfig)) senderConfig += 'stdlib_http=on;'
  const sql = postgres(config.questdbPgUrl, { max: 4, prepare: false, onnotice: () => {}, idle_timeout: 30 })
  await sql.unsafe(`create table if not exists ${table} (
    ts timestamp, account_id symbol, device_id symbol, channel symbol, metric symbol, environment_id symbol, value double
  ) timestamp(ts) partition by day wal dedup upsert keys(ts, device_id, channel)`)

  // One sender per concurrent writer: a sender's buffer belongs to the batch being written.
  const idle: Sender[] = []
  const all: Sender[] = []
  const take = async () => idle.pop() ?? (async () => { const s = await Sender.fromConfig(senderConfig); all.push(s); return s })()

  const query = (text: string) => sql.unsafe<Row[]>(text)
  const columns = `cast(ts as long) ts_us, device_id, channel, metric, environment_id`

  return {
    kind: 'questdb',
    async write(readings: readonly Reading[]) {
      if (!readings.length) return
      const sender = await take()
      try {
        for (const r of readings) {
          sender.table(table).symbol('account_id', r.accountId).symbol('device_id', r.deviceId).symbol('channel', r.channel)
          if (r.metric !== null) sender.symbol('metric', r.metric)
          if (r.environmentId !== null) sender.symbol('environment_id', r.environmentId)
          await sender.floatColumn('value', r.value).at(r.ts, 'ms')
        }
        await sender.flush()
        idle.push(sender)
      } catch (error) {
        // What the failed request carried must not ride along with the next batch.
        sender.reset()
        idle.push(sender)
        throw error
      }
    },
    async raw(filter, limit, after?: SeriesPosition, skip = 0) {
      const rows = await query(`select ${columns}, value from ${table} where ${where(filter)}${after ? ` and ${afterSeries('ts', after)}` : ''}
        order by ts, device_id, channel limit ${skip}, ${skip + limit}`)
      return rows.map(rawRow)
    },
    async buckets(filter, spec, limit, after?: SeriesPosition, skip = 0) {
      const names = spec.aggregates.map((a) => `"${a}"`).join(', ')
      const conditions = [...(spec.fill === 'none' ? [] : ['device_id is not null']), ...(after ? [afterSeries('ts', after)] : [])]
      const rows = await query(`select ${columns}, ${names} from (${sampled(table, filter, spec, after)})${conditions.length ? ` where ${conditions.join(' and ')}` : ''}
        order by ts, device_id, channel limit ${skip}, ${skip + limit}`)
      return rows.map((r) => {
        const row: BucketRow = { ts: micros(r.ts_us), device_id: String(r.device_id), channel: String(r.channel), metric: nullable(r.metric), environment_id: nullable(r.environment_id) }
        for (const a of spec.aggregates) row[a] = r[a] === null ? undefined : Number(r[a])
        return row
      })
    },
    async latest(filter, limit, after?: LatestPosition) {
      const rows = await query(`select * from (
          select ${columns}, value from ${table} where ${where(filter)} latest on ts partition by device_id, channel
        )${after ? ` where (${text('device_id')} > ${literal(after[0])} or (${text('device_id')} = ${literal(after[0])} and ${text('channel')} > ${literal(after[1])}))` : ''}
        order by device_id, channel limit ${limit}`)
      return rows.map(rawRow)
    },
    async ping() {
      await query('select 1')
    },
    async close() {
      await Promise.all(all.map((s) => s.close().catch(() => {})))
      await sql.end({ timeout: 5 })
    },
  }
}
