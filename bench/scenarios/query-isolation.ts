// Queries that cannot hurt anyone (issue 28): account B's ingest acknowledgements and small reads while account A
// runs its allowance of the widest accepted readings queries, ÷ the same with A idle, on the SQL store and (when a
// QuestDB answers) on QuestDB, in one run. A's readings: 30 days of one-minute readings on 4 channels, loaded
// straight into the store and registered in the series catalogue. Also: how long a query over the limit takes to
// be refused (the request from 1970 at 1m with fill=null).
import { loadConfig } from '../../src/config.ts'
import { newId } from '../../src/ids.ts'
import { peakRssMiB } from '../lib/processes.ts'
import { dropTable, freshTableName, QUESTDB_HTTP, QUESTDB_ILP, QUESTDB_PG_URL, questdbAnswers, waitForCount } from '../lib/questdb.ts'
import { storeReadings, DAY, readingsIn, sendReadings, type Series } from '../lib/readings-data.ts'
import { API, ms, onRecordsServer, type Api } from '../lib/records.ts'
import { line, type Line, type Scenario, type ScenarioContext } from '../lib/report.ts'
import { accountAndToken, createDevices, serverEnv } from '../lib/setup.ts'

const NAME = 'query-isolation'
const CHANNELS = 4
const HOUR = 3_600_000
const limits = loadConfig({}).readingsQueries

const quantile = (values: number[], q: number) => {
  if (!values.length) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

async function timed(call: () => Promise<Response>, expected: number[]): Promise<{ ms: number; ok: boolean }> {
  const started = performance.now()
  const res = await call()
  await res.arrayBuffer()
  return { ms: performance.now() - started, ok: expected.includes(res.status) }
}

/** B's traffic for `seconds`: one lane posting 10 readings at a time, one lane reading 10 raw rows; latencies of each. */
async function accountB(api: Api, b: { token: string; deviceKey: string }, seconds: number) {
  const acks: number[] = []
  const reads: number[] = []
  let failures = 0
  const until = performance.now() + seconds * 1000
  const ingest = async () => {
    for (let i = 0; performance.now() < until; i++) {
      const readings = Array.from({ length: 10 }, (_, c) => ({ channel: `c${c % CHANNELS}`, value: i % 50, ts: Date.now() - 1000 - c }))
      const r = await timed(() => fetch(`${api.baseUrl}${API}/sensors/readings`, { method: 'POST', headers: { authorization: `Bearer ${b.deviceKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings }) }), [202])
      if (r.ok) acks.push(r.ms); else failures++
      await Bun.sleep(20)
    }
  }
  const read = async () => {
    while (performance.now() < until) {
      const r = await timed(() => fetch(`${api.baseUrl}${API}/environment/readings?limit=10`, { headers: { authorization: `Bearer ${b.token}` } }), [200])
      if (r.ok) reads.push(r.ms); else failures++
      await Bun.sleep(20)
    }
  }
  await Promise.all([ingest(), read()])
  return { acks, reads, failures }
}

/** A's allowance of the widest accepted queries, walked page after page until `stop()`. */
function accountA(api: Api, path: string) {
  let stopped = false
  const statuses = new Map<number, number>()
  let pages = 0
  const lane = async () => {
    let next: string | null = path
    while (!stopped) {
      const res: Response = await fetch(`${api.baseUrl}${next ?? path}`, { headers: { authorization: `Bearer ${api.token}` } })
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      const body = await res.json() as { next_cursor?: string | null }
      pages++
      next = res.status === 200 && body.next_cursor ? `${path}&cursor=${body.next_cursor}` : null
      // As a client should: a refusal's Retry-After is waited out (in short naps, so stop() is not held up).
      if (res.status === 429) {
        const until = performance.now() + Number(res.headers.get('retry-after') ?? 1) * 1000
        while (!stopped && performance.now() < until) await Bun.sleep(50)
      }
    }
  }
  const lanes = Array.from({ length: limits.perAccount }, lane)
  return { async stop() { stopped = true; await Promise.all(lanes); return { statuses: Object.fromEntries(statuses), pages } } }
}

async function onStore(ctx: ScenarioContext, store: 'sql' | 'questdb'): Promise<{ lines: Line[]; details: Record<string, unknown> }> {
  const table = store === 'questdb' ? freshTableName('query_isolation') : undefined
  const env: Record<string, string> = { READINGS_RETENTION_DAYS: '0', ...(table ? { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table } : {}) }
  try {
    return await onRecordsServer(ctx, `${NAME}-${store}`, { demo: false, bare: false, env }, async ({ api, local }) => {
      const { database, accountId, server } = local!
      const to = Math.floor(Date.now() / HOUR) * HOUR
      const series: Series = { accountId, environmentId: newId('environment'), deviceId: newId('device'), channels: CHANNELS, from: to - 30 * DAY, to }
      ctx.log(`${NAME}: loading ${readingsIn(series)} readings of account A into ${store}…`)
      if (table) {
        await sendReadings(QUESTDB_ILP, QUESTDB_PG_URL, table, series, database.url)
        await waitForCount(table, readingsIn(series))
      } else {
        await storeReadings(database.url, series)
      }
      // B: another account with a device of its own.
      const b = await accountAndToken(serverEnv(database, env))
      const [device] = await createDevices(api.baseUrl, b.token, 1, CHANNELS)
      const accountB_ = { token: b.token, deviceKey: device!.key }

      // The request, refused before anything runs: median of 20.
      const refusals: number[] = []
      for (let i = 0; i < 20; i++) {
        const r = await timed(() => fetch(`${api.baseUrl}${API}/environment/readings?from=1970-01-01T00:00:00Z&interval=1m&fill=null&limit=10`, { headers: { authorization: `Bearer ${api.token}` } }), [422])
        if (!r.ok) throw new Error(`${NAME}: the request from 1970 at 1m was not refused with 422`)
        refusals.push(r.ms)
      }

      const seconds = Math.max(3, ctx.seconds)
      ctx.log(`${NAME} (${store}): B alone for ${seconds} s…`)
      await accountB(api, accountB_, Math.min(2, ctx.warmupSeconds + 1))
      const idle = await accountB(api, accountB_, seconds)
      // The widest accepted: every series of A at 1m over the 30 days, filled, five aggregates, pages of 10,000.
      const widest = `${API}/environment/readings?from=${new Date(series.from).toISOString()}&to=${new Date(to).toISOString()}&interval=1m&fill=previous&agg=avg,min,max,last,count&limit=10000`
      ctx.log(`${NAME} (${store}): B while A walks ${limits.perAccount} × the widest accepted query…`)
      const a = accountA(api, widest)
      await Bun.sleep(500)
      const busy = await accountB(api, accountB_, seconds)
      const aDone = await a.stop()
      const note = (what: string, idleMs: number[], busyMs: number[]) =>
        `p99 ${ms(quantile(busyMs, 0.99))} with A busy ÷ ${ms(quantile(idleMs, 0.99))} idle (busy ÷ idle ${(quantile(busyMs, 0.99) / quantile(idleMs, 0.99)).toFixed(2)}, target ≤ 1.5); ` +
        `p50 ${ms(quantile(busyMs, 0.5))} / ${ms(quantile(idleMs, 0.5))}; ${busyMs.length} / ${idleMs.length} ${what}; B failures ${busy.failures} busy, ${idle.failures} idle; ` +
        `A: ${aDone.pages} pages, statuses ${JSON.stringify(aDone.statuses)}; server peak ${peakRssMiB(server.pid)} MiB`
      // Lines carry idle ÷ busy so that higher is better, as every bench ratio: ≥ 1 ÷ 1.5.
      const lines = [
        line(NAME, `account B's ingest ack p99 (${store}): A idle ÷ A at its allowance`, quantile(idle.acks, 0.99), quantile(busy.acks, 0.99), 'ms', 1 / 1.5, 'target', note('acks', idle.acks, busy.acks)),
        line(NAME, `account B's small-read p99 (${store}): A idle ÷ A at its allowance`, quantile(idle.reads, 0.99), quantile(busy.reads, 0.99), 'ms', 1 / 1.5, 'target', note('reads', idle.reads, busy.reads)),
        line(NAME, `refusal of a query over the limit (${store}), median of 20`, quantile(refusals, 0.5), undefined, 'ms', undefined, 'target', `from=1970-01-01 at 1m with fill=null: 422 query_too_expensive; p99 ${ms(quantile(refusals, 0.99))}; target < 10 ms`),
      ]
      return { lines, details: { store, seconds, idle: { acks: idle.acks.length, reads: idle.reads.length, failures: idle.failures }, busy: { acks: busy.acks.length, reads: busy.reads.length, failures: busy.failures }, a: aDone, refusals } }
    })
  } finally {
    if (table) await dropTable(table)
  }
}

export const queryIsolation: Scenario = async (ctx) => {
  if (ctx.options.target) return { lines: [], details: {}, skipped: 'needs a local server (it loads account A\'s readings straight into the store)' }
  const stores: ('sql' | 'questdb')[] = ctx.options.store ? [ctx.options.store] : ['sql', 'questdb']
  const lines: Line[] = []
  const details: Record<string, unknown> = {}
  for (const store of stores) {
    if (store === 'questdb' && !(await questdbAnswers())) { details.questdb = `skipped: no QuestDB answers at ${QUESTDB_HTTP}`; continue }
    const out = await onStore(ctx, store)
    lines.push(...out.lines)
    details[store] = out.details
  }
  return { lines, details }
}
