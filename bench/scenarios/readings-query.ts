// GET /environment/readings over a lot of data: 30 days of one-minute readings for one environment (one device,
// 4 channels: 4 × 43 200 rows) loaded straight into the store (COPY into Postgres, or the official client into
// QuestDB with `--store questdb`), then N lanes page through (a) hourly averages over the 30 days and (b) the raw
// rows of the last day. Queries (pages)/s ÷ the same store calls made directly from one process
// (baselines/readings-direct.ts); every full walk, ours and direct, must count the same rows.
import { join } from 'node:path'
import type { DirectConfig, DirectResult } from '../baselines/readings-direct.ts'
import { planStatsOf, type LoadResult } from '../lib/load.ts'
import { BUN, ROOT, peakRssMiB, runForResult } from '../lib/processes.ts'
import { dropTable, freshTableName, QUESTDB_HTTP, QUESTDB_ILP, QUESTDB_PG_URL, questdbAnswers, questdbJava, waitForCount } from '../lib/questdb.ts'
import { storeReadings, DAY, readingsIn, sendReadings, type Series } from '../lib/readings-data.ts'
import { API, backendsOf, call, checkPlan, lanesOf, ms, onRecordsServer, pageSizeOf, runPlan, walkList, type Api } from '../lib/records.ts'
import { line, type Line, type Scenario, type ScenarioContext } from '../lib/report.ts'
import type { PlanStep } from '../load/generator.ts'
import { newId } from '../../src/ids.ts'

const NAME = 'readings-query'
const DIRECT = join(ROOT, 'bench', 'baselines', 'readings-direct.ts')
const CHANNELS = 4
const HOUR = 3_600_000
/** Each reading row holds `"ts":"` once (its other fields are ids, names and numbers). */
const ROW_MARKER = '"ts":"'

/** The two queries: hourly averages over 30 days, and the raw rows of the last day, both ending at `to`. */
function queries(environmentId: string, to: number, limit: number) {
  const iso = (ms: number) => new Date(ms).toISOString()
  return [
    { name: 'buckets', label: '30 days, 1 h avg buckets', from: to - 30 * DAY, interval: '1h' as const, direct: { kind: 'buckets' as const, interval: '1h' as const, aggregates: ['avg' as const] } },
    { name: 'raw', label: 'raw rows of one day', from: to - DAY, interval: undefined, direct: { kind: 'raw' as const } },
  ].map((q) => ({
    ...q,
    to,
    path: `${API}/environment/readings?environment_id=${environmentId}&from=${iso(q.from)}&to=${iso(to)}${q.interval ? `&interval=${q.interval}&agg=avg` : ''}&limit=${limit}`,
  }))
}
type Query = ReturnType<typeof queries>[number]

const walkStep = (q: Query): PlanStep => ({ name: q.name, method: 'GET', path: q.path, walk: { itemMarker: ROW_MARKER } })

/** Every full walk under load counted `expected` rows. */
function checkWalks(load: LoadResult, q: Query, expected: number): string {
  const walks = load.plan!.walks[q.name]!
  if (walks.completed && (walks.itemsMin !== expected || walks.itemsMax !== expected)) throw new Error(`${NAME}: ${q.name} walks under load counted ${walks.itemsMin}…${walks.itemsMax} rows, not ${expected}`)
  return walks.completed ? `${walks.completed} full walks under load (${walks.pagesMax} pages) each counted ${expected} rows` : 'no full walk within the window'
}

export const readingsQuery: Scenario = async (ctx) => {
  const lanes = lanesOf(ctx, 4)
  const limit = pageSizeOf(ctx, 1000, 10_000)
  if (ctx.options.target) return onRecordsServer(ctx, NAME, { demo: false, bare: false }, ({ api }) => onTarget(ctx, api, lanes, limit))

  const store = ctx.options.store ?? 'sql'
  if (store === 'questdb' && !(await questdbAnswers())) return { lines: [], details: {}, skipped: `--store questdb: no QuestDB answers at ${QUESTDB_HTTP}` }
  const table = store === 'questdb' ? freshTableName('readings_query') : undefined
  try {
    const env: Record<string, string> = { READINGS_RETENTION_DAYS: '0', ...(table ? { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table } : {}) }
    return await onRecordsServer(ctx, NAME, { demo: false, bare: false, env }, async ({ api, local }) => {
      const { database, accountId, server, watch } = local!
      // Aligned to the hour, so the 30 days hold whole buckets: 720 hours × 4 series.
      const to = Math.floor(Date.now() / HOUR) * HOUR
      const series: Series = { accountId, environmentId: newId('environment'), deviceId: newId('device'), channels: CHANNELS, from: to - 30 * DAY, to }
      ctx.log(`${NAME}: loading ${readingsIn(series)} readings (30 days, 1 a minute, ${CHANNELS} channels of one environment) into ${store}…`)
      const started = performance.now()
      if (table) {
        await sendReadings(QUESTDB_ILP, QUESTDB_PG_URL, table, series, database.url)
        // QuestDB applies its WAL asynchronously: query only once every row is visible.
        const { count } = await waitForCount(table, readingsIn(series))
        if (count !== readingsIn(series)) throw new Error(`${NAME}: ${count} of ${readingsIn(series)} readings visible in ${table}`)
      } else {
        await storeReadings(database.url, series)
      }
      const loadMs = performance.now() - started
      const storeWatch = { store: table ? questdbJava : backendsOf(database.name) }
      const lines: Line[] = []
      const details: Record<string, unknown> = { store, lanes, limit, readings: readingsIn(series), loadMs, table }
      for (const q of queries(series.environmentId, to, limit)) {
        const expected = q.interval ? CHANNELS * 30 * 24 : CHANNELS * 24 * 60
        const checked = await walkList(api, q.path)
        if (checked.items.length !== expected) throw new Error(`${NAME}: ${q.name} through the API gave ${checked.items.length} rows, not ${expected}`)

        ctx.log(`${NAME}: ${lanes} lanes paging through ${q.label} (${expected} rows, ${checked.pages} pages of ≤ ${limit})…`)
        const ours = await runPlan(ctx, api.baseUrl, api.token, lanes, [walkStep(q)], { server: watch.server!, ...storeWatch })
        checkPlan(ours, `${NAME} ${q.name} (ours)`)
        const walks = checkWalks(ours, q, expected)
        ctx.log(`${NAME}: the same store calls made directly…`)
        const direct = await runForResult<DirectResult>('direct store baseline', [BUN, DIRECT, JSON.stringify({
          store: table ? { kind: 'questdb', ilp: QUESTDB_ILP, pgUrl: QUESTDB_PG_URL, table } : { kind: 'sql', databaseUrl: database.url },
          filter: { accountId, environmentId: series.environmentId, from: q.from, to: q.to }, query: q.direct, limit, lanes,
          warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, watch: table ? { store: questdbJava() } : {},
        } satisfies DirectConfig)])
        if (direct.walks.completed && (direct.walks.rowsMin !== expected || direct.walks.rowsMax !== expected)) throw new Error(`${NAME}: ${q.name} straight from the store counted ${direct.walks.rowsMin}…${direct.walks.rowsMax} rows, not ${expected}`)
        if (direct.queries === 0) throw new Error(`${NAME}: ${q.name}: no direct query finished within the window`)
        lines.push(line(NAME, `GET /environment/readings ${q.label} (${store}, pages of ${limit}, ${lanes} lanes) ÷ store direct`, ours.requestsPerSecond, direct.queriesPerSecond, 'queries/s', undefined, 'target',
          `a checked walk through the API = ${expected} rows = ${direct.walks.completed ? `each of ${direct.walks.completed} direct walks` : 'expected'}; ${walks}; ` +
          `server ${ours.watched.server!.toFixed(2)} cores, ${store} ${ours.watched.store!.toFixed(2)} / direct ${direct.watchedCores.store!.toFixed(2)}, direct process ${direct.cpu.toFixed(2)}, generator ${ours.cpu.toFixed(2)}, others ${ours.others.toFixed(2)}; ` +
          `p50 ${ms(ours.latency.p50)} / ${ms(direct.latency.p50)}, p99 ${ms(ours.latency.p99)} / ${ms(direct.latency.p99)}`,
          planStatsOf(ours, peakRssMiB(server.pid))))
        details[q.name] = { path: q.path, expected, ours, direct }
      }
      return { lines, details }
    })
  } finally {
    if (table) await dropTable(table)
  }
}

/**
 * A remote target: nothing is written there. The environment with the most series in the newest readings is
 * queried over the 30 days (and the one day) before its newest reading; no baseline (the store is not ours to reach).
 */
async function onTarget(ctx: ScenarioContext, api: Api, lanes: number, limit: number) {
  const latest = (await call(api, 'GET', `${API}/environment/readings?latest=true&limit=10000`)).json.data as { environment_id: string | null; ts: string }[]
  const perEnvironment = new Map<string, { series: number; newest: number }>()
  for (const r of latest) {
    if (!r.environment_id) continue
    const e = perEnvironment.get(r.environment_id) ?? { series: 0, newest: 0 }
    perEnvironment.set(r.environment_id, { series: e.series + 1, newest: Math.max(e.newest, Date.parse(r.ts)) })
  }
  const [environmentId, chosen] = [...perEnvironment].sort((a, b) => b[1].series - a[1].series)[0] ?? []
  if (!environmentId || !chosen) return { lines: [], details: {}, skipped: 'the target has no readings mapped to an environment (this scenario writes none to a remote target)' }
  // Up to the newest reading's minute, exclusive: later readings do not change what the walks count.
  const to = Math.floor(chosen.newest / 60_000) * 60_000
  const lines: Line[] = []
  const details: Record<string, unknown> = { target: api.baseUrl, environmentId, series: chosen.series, lanes, limit }
  for (const q of queries(environmentId, to, limit)) {
    const checked = await walkList(api, q.path)
    ctx.log(`${NAME}: ${lanes} lanes paging through ${q.label} of ${environmentId} on the target (${checked.items.length} rows, ${checked.pages} pages)…`)
    const load = await runPlan(ctx, api.baseUrl, api.token, lanes, [walkStep(q)])
    checkPlan(load, `${NAME} ${q.name} (target)`)
    lines.push(line(NAME, `GET /environment/readings ${q.label} (target, pages of ${limit}, ${lanes} lanes)`, load.requestsPerSecond, undefined, 'queries/s', undefined, 'target',
      `remote target: existing readings only (environment ${environmentId}, ${chosen.series} series, ${checked.items.length} rows), no baseline; ${checkWalks(load, q, checked.items.length)}; p99 ${ms(load.latency.p99)}`,
      planStatsOf(load)))
    details[q.name] = { path: q.path, rows: checked.items.length, load }
  }
  return { lines, details }
}
