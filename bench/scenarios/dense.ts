// A dense site (issue 57): devices × 4 channels over environments, days of one reading per channel per minute loaded
// through POST /sensors/readings, then for the measured window at once: every device posting its 4 channels every
// 10 s, dashboard users each asking every 5 s for one environment's last 24 h in 5-minute averages (walked to its last
// page) and its latest values, and one integrator exporting the whole window hourly as CSV. Reports what the issue
// asks: dashboards answered and their walk p99, latest p99, the export's time and refusals, ingest ack p99 and
// acknowledged = stored, the rollup marks before and after and how long they took to drain, and one dashboard answer
// checked against the raw rows (its counts). Scaled by BENCH_DENSE_DEVICES (1000), BENCH_DENSE_ENVIRONMENTS (25),
// BENCH_DENSE_DAYS (7), BENCH_DENSE_DASHBOARDS (50) and --duration (the phase, seconds; the issue's is 120);
// --store sql|questdb; BENCH_DENSE_EXPORT=0 leaves the export out.
import { cpus } from 'node:os'
import postgres from 'postgres'
import { newId } from '../../src/ids.ts'
import { cpuWindow, peakRssMiB } from '../lib/proc.ts'
import { pidsNamed } from '../lib/load.ts'
import { dropTable, exec, freshTableName, QUESTDB_HTTP, QUESTDB_ILP, QUESTDB_PG_URL, questdbAnswers, questdbJava, questdbSetup, waitForCount } from '../lib/questdb.ts'
import { API, call, onRecordsServer } from '../lib/records.ts'
import { line, type Line, type Scenario } from '../lib/report.ts'
import { createDevices, inParallel, metricOf } from '../lib/setup.ts'

const NAME = 'dense'
const CHANNELS = 4
const MINUTE = 60_000
const DAY = 86_400_000
const FIVE_MINUTES = 5 * MINUTE
const PAGE = 10_000

const quantile = (values: number[], q: number) => {
  if (!values.length) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
const num = (name: string, fallback: number) => Number(process.env[name] || fallback)
/** The counts of a histogram's buckets (upper bound → cumulative count) in a /metrics text, for the series named with `labels`. */
const histogramOf = (text: string, name: string, labels: string) => {
  const buckets = new Map<number, number>()
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{${labels ? `${labels},` : ''}le="([^"]+)"\\} (\\S+)$`, 'gm'))) buckets.set(m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2]))
  return buckets
}
/** One sample's value in a /metrics text: the series named `name` with exactly `labels` (none: ''), 0 where absent. */
const sampleOf = (text: string, name: string, labels = '') => Number(new RegExp(`^${name}${labels ? `\\{${labels}\\}` : ''} (\\S+)$`, 'm').exec(text)?.[1] ?? 0)
/** The bucket bound at or under which `q` of the observations between two scrapes fall (a histogram's resolution). */
const histogramQuantile = (before: string, after: string, name: string, labels: string, q: number) => {
  const [start, end] = [histogramOf(before, name, labels), histogramOf(after, name, labels)]
  const total = (end.get(Infinity) ?? 0) - (start.get(Infinity) ?? 0)
  for (const [bound, count] of [...end].sort((a, b) => a[0] - b[0])) if (count - (start.get(bound) ?? 0) >= q * total) return { bound, total }
  return { bound: NaN, total }
}

/**
 * A page's `next_cursor`, read from its last bytes: the page ends with `"has_more":…,"next_cursor":…}` and its rows
 * are not looked at. The dashboards all run in this process, and parsing every 10,000-row page (50 a second, 1.8 MB
 * each) kept its event loop so busy that the latencies it timed were its own queue as much as the server's.
 */
const nextCursorOf = (bytes: ArrayBuffer): string | null => {
  const tail = new TextDecoder().decode(new Uint8Array(bytes, Math.max(0, bytes.byteLength - 4096)))
  const page = JSON.parse(`{${tail.slice(tail.lastIndexOf('"has_more"'))}`) as { next_cursor: string | null }
  return page.next_cursor
}
/** The lines of a CSV file's bytes (each ends with CRLF), counted without making it a string (80 MB at full size). */
const linesIn = (bytes: ArrayBuffer) => {
  const view = new Uint8Array(bytes)
  let lines = 0
  for (let at = view.indexOf(10); at !== -1; at = view.indexOf(10, at + 1)) lines++
  return lines
}

export const dense: Scenario = async (ctx) => {
  if (ctx.options.target) return { lines: [], details: {}, skipped: 'needs a local server (it loads days of readings and reads the store directly)' }
  const store = ctx.options.store ?? 'sql'
  if (store === 'questdb' && !(await questdbAnswers())) return { lines: [], details: {}, skipped: `--store questdb: no QuestDB answers at ${QUESTDB_HTTP}` }
  const devicesCount = num('BENCH_DENSE_DEVICES', 1000)
  const environmentsCount = num('BENCH_DENSE_ENVIRONMENTS', 25)
  const days = num('BENCH_DENSE_DAYS', 7)
  const dashboards = num('BENCH_DENSE_DASHBOARDS', 50)
  const seconds = ctx.seconds
  const table = store === 'questdb' ? freshTableName('dense') : undefined
  // The service's READINGS_* settings and WORKERS given to the bench reach the server, for comparing them
  // (READINGS_KEPT_ROWS=0, WORKERS=2).
  const readingsSettings = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => (e[0].startsWith('READINGS_') || e[0] === 'WORKERS') && e[1] !== undefined))
  const env: Record<string, string> = { DEVICE_RATE_LIMIT_PER_MINUTE: '1000000', RATE_LIMIT_PER_MINUTE: '1000000', READINGS_RETENTION_DAYS: '0', ...readingsSettings, ...(table ? { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table } : {}) }
  try {
    return await onRecordsServer(ctx, `${NAME}-${store}`, { demo: false, bare: false, env }, async ({ api, local }) => {
      const { database, accountId } = local!
      const records = postgres(database.url, { max: 2, onnotice: () => {} })
      try {
        const environments = Array.from({ length: environmentsCount }, () => newId('environment'))
        for (const [i, id] of environments.entries()) await records.unsafe(`insert into environments (id, account_id, name, kind) values ($1, $2, $3, 'room')`, [id, accountId, `Room ${i}`])
        ctx.log(`${NAME} (${store}): ${devicesCount} devices × ${CHANNELS} channels over ${environmentsCount} environments…`)
        const devices = await createDevices(api.baseUrl, api.token, devicesCount, CHANNELS, 8)
        await inParallel(devices.length, 8, async (i) => {
          await call(api, 'PATCH', `${API}/sensors/devices/${devices[i]!.id}`, { body: { channels: Array.from({ length: CHANNELS }, (_, c) => ({ key: `c${c}`, metric: metricOf(c), environment_id: environments[i % environmentsCount] })) }, headers: { 'content-type': 'application/merge-patch+json' } })
        })
        const now = Math.floor(Date.now() / MINUTE) * MINUTE
        const from = now - days * DAY
        const minutes = days * 1440
        const total = devicesCount * CHANNELS * minutes
        ctx.log(`${NAME} (${store}): loading ${total.toLocaleString('en-US')} readings (${days} days) through POST /sensors/readings…`)
        const loadStarted = performance.now()
        const stepsPerRequest = 1250
        const requestsPerDevice = Math.ceil(minutes / stepsPerRequest)
        await inParallel(devicesCount * requestsPerDevice, 8, async (i) => {
          const device = devices[i % devicesCount]!
          const first = Math.floor(i / devicesCount) * stepsPerRequest
          const readings = []
          for (let step = first; step < Math.min(minutes, first + stepsPerRequest); step++) {
            for (let c = 0; c < CHANNELS; c++) readings.push({ channel: `c${c}`, value: Math.round((20 + c * 10 + 5 * Math.sin(step / 360 + i)) * 100) / 100, ts: from + step * MINUTE })
          }
          const res = await fetch(`${api.baseUrl}${API}/sensors/readings`, { method: 'POST', headers: { authorization: `Bearer ${device.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings }) })
          if (res.status !== 202) throw new Error(`${NAME}: POST /sensors/readings answered ${res.status}: ${await res.text()}`)
          await res.arrayBuffer()
        })
        const loadMs = performance.now() - loadStarted
        if (table) await waitForCount(table, total, 600_000)
        const marks = async () => Number((await records.unsafe(`select count(*) n from reading_rollup_marks`))[0]!.n)
        // BENCH_DENSE_STEADY=1: the phase begins once the load's rollup marks have drained (at most 10 minutes), as at a
        // site that has been running, whose history is rolled up and whose newest minutes alone are marked.
        const steady = process.env.BENCH_DENSE_STEADY === '1'
        const settleStarted = Date.now()
        while (steady && (await marks()) > 0 && Date.now() - settleStarted < 600_000) await Bun.sleep(1000)
        const settledMs = steady ? Date.now() - settleStarted : 0
        const marksBefore = await marks()

        // The phase: everything at once for `seconds`.
        const metricsBefore = await (await fetch(`${api.baseUrl}/metrics`)).text().catch(() => '')
        // Who used the machine's cores during the phase: the latencies below are what is left of them for the server.
        const { watch } = local!
        const cpuDuringPhase = cpuWindow({ server: watch.server!(), ...(table ? { questdb: questdbJava() } : {}), postgres: watch.postgres!(), redis: pidsNamed('redis-server'), bench: [process.pid] })
        const phaseStart = Date.now()
        // With BENCH_PROFILE=1 the server's profile is named by the time it started: the phase's seconds in it follow.
        ctx.log(`${NAME} (${store}): the phase begins at ${phaseStart} (ms since the epoch)`)
        // The server's metrics 10 s in as well: its own time for the posts of the phase's first seconds, beside the devices'.
        const metricsAt10 = Bun.sleep(10_000).then(async () => (await fetch(`${api.baseUrl}/metrics`)).text()).catch(() => '')
        const phaseEnd = phaseStart + seconds * 1000
        const acks: number[] = []
        /** Acknowledgements after the phase's first 10 s: the dashboards' first asks (nothing kept yet) are behind it. */
        const acksWarm: number[] = []
        /** Acknowledgements by the 5 s of the phase their post was sent in: where in the phase the slow ones fall. */
        const acksBySlice: number[][] = []
        let acknowledged = 0
        let ingestFailures = 0
        const ingest = (async () => {
          // Every device every 10 s, spread evenly over the 10 s.
          const spacing = 10_000 / devicesCount
          const inFlight: Promise<void>[] = []
          for (let round = 0; Date.now() < phaseEnd; round++) {
            for (let d = 0; d < devicesCount && Date.now() < phaseEnd; d++) {
              const due = phaseStart + round * 10_000 + d * spacing
              const wait = due - Date.now()
              if (wait > 0) await Bun.sleep(wait)
              const ts = Date.now()
              inFlight.push((async () => {
                const sent = performance.now()
                const res = await fetch(`${api.baseUrl}${API}/sensors/readings`, { method: 'POST', headers: { authorization: `Bearer ${devices[d]!.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings: Array.from({ length: CHANNELS }, (_, c) => ({ channel: `c${c}`, value: c + 0.5, ts })) }) }).catch(() => undefined)
                if (res?.status === 202) {
                  acks.push(performance.now() - sent)
                  if (ts >= phaseStart + 10_000) acksWarm.push(performance.now() - sent)
                  ;(acksBySlice[Math.floor((ts - phaseStart) / 5_000)] ??= []).push(performance.now() - sent)
                  acknowledged += CHANNELS
                } else ingestFailures++
                await res?.arrayBuffer()
              })())
            }
          }
          await Promise.all(inFlight)
        })()
        const dashboardWalks: number[] = []
        const latestTimes: number[] = []
        /** A dashboard's asks after its first (which finds nothing kept for its question, and no latest entries). */
        const walksAgain: number[] = []
        /** A dashboard's first ask, which finds nothing kept for its question. */
        const walksFirst: number[] = []
        /**
         * The first asks by who asked: a room's first asker (users below the rooms' count) finds nothing kept for it,
         * its second asker (half the phase's first 5 s later) what the first one's walk kept.
         */
        const firstByUser: number[] = []
        const latestAgain: number[] = []
        /** Each walk asked again, by the 20 s of the phase it began in: where in the phase the slow ones fall. */
        const walksBySlice: number[][] = []
        const slice = (startedAt: number) => Math.floor((startedAt - phaseStart) / 20_000)
        const dashboardStatuses: Record<string, number> = {}
        const latestStatuses: Record<string, number> = {}
        /** Refusals by what asked and the problem's type (its last segment), beside the statuses. */
        const refusals: Record<string, number> = {}
        /** Counts a refusal under its problem type's last segment (query_timeout, service_unavailable, …). */
        const countRefusal = async (what: string, res: Response) => {
          const problem = (await res.json().catch(() => undefined)) as { type?: string } | undefined
          if (problem?.type) count(refusals, `${what} ${res.status} ${problem.type.split('/').pop()}`)
        }
        const count = (into: Record<string, number>, status: number | string) => { into[status] = (into[status] ?? 0) + 1 }
        const dashboard = async (user: number) => {
          await Bun.sleep((user * 5000) / dashboards)
          for (let ask = 0; Date.now() < phaseEnd; ask++) {
            const started = Date.now()
            const room = environments[(user + ask) % environmentsCount]!
            // As a dashboard asks: a window on the 5-minute grid, the same for everyone asking in those 5 minutes.
            const to = Math.floor(started / FIVE_MINUTES) * FIVE_MINUTES + FIVE_MINUTES
            const path = `${API}/environment/readings?environment_id=${room}&from=${new Date(to - DAY).toISOString()}&to=${new Date(to).toISOString()}&interval=5m&agg=avg&limit=${PAGE}`
            await Promise.all([
              (async () => {
                const t = performance.now()
                let cursor: string | null = null
                let status = 200
                do {
                  const res: Response | undefined = await fetch(`${api.baseUrl}${cursor ? `${path}&cursor=${encodeURIComponent(cursor)}` : path}`, { headers: { authorization: `Bearer ${api.token}` } }).catch(() => undefined)
                  status = res?.status ?? 0
                  if (res && status !== 200) await countRefusal('dashboard', res)
                  const bytes: ArrayBuffer | undefined = status === 200 ? await res?.arrayBuffer().catch(() => undefined) : undefined
                  if (status === 200 && !bytes) status = 0
                  cursor = status === 200 ? nextCursorOf(bytes!) : null
                } while (cursor && status === 200)
                count(dashboardStatuses, status)
                if (status === 200) dashboardWalks.push(performance.now() - t)
                if (status === 200 && ask === 0) walksFirst.push((firstByUser[user] = performance.now() - t))
                if (status === 200 && ask > 0) {
                  walksAgain.push(performance.now() - t)
                  ;(walksBySlice[slice(started)] ??= []).push(performance.now() - t)
                }
              })(),
              (async () => {
                const t = performance.now()
                const res = await fetch(`${api.baseUrl}${API}/environment/readings?environment_id=${room}&latest=true&limit=1000`, { headers: { authorization: `Bearer ${api.token}` } }).catch(() => undefined)
                await res?.arrayBuffer()
                count(latestStatuses, res?.status ?? 0)
                if (res?.status === 200) latestTimes.push(performance.now() - t)
                if (res?.status === 200 && ask > 0) latestAgain.push(performance.now() - t)
              })(),
            ])
            const wait = started + 5000 - Date.now()
            if (wait > 0) await Bun.sleep(wait)
          }
        }
        const exportStatuses: Record<string, number> = {}
        let exportRows = 0
        let exportMs = NaN
        // BENCH_DENSE_EXPORT=0 leaves the export out: what the dashboards and devices see without it.
        const exporting = process.env.BENCH_DENSE_EXPORT !== '0'
        const exporter = (async () => {
          if (!exporting) return
          const t = performance.now()
          const path = `${API}/environment/readings?from=${new Date(from).toISOString()}&to=${new Date(now).toISOString()}&interval=1h&agg=avg&format=csv&limit=1000000`
          let cursor: string | null = null
          // A file refused 429 is asked again after a second (counted), as an integrator's client retries.
          for (let tries = 0; tries < 600; tries++) {
            const res: Response = await fetch(`${api.baseUrl}${cursor ? `${path}&cursor=${encodeURIComponent(cursor)}` : path}`, { headers: { authorization: `Bearer ${api.token}` } })
            count(exportStatuses, res.status)
            if (res.status === 429) { await res.arrayBuffer(); await Bun.sleep(1000); continue }
            if (res.status !== 200) { await countRefusal('export', res); break }
            // A file whose later step failed (a store error, a deadline) ends without its terminator: a transfer error.
            const bytes = await res.arrayBuffer().catch(() => undefined)
            if (bytes === undefined) { count(exportStatuses, 'broken off'); break }
            exportRows += linesIn(bytes) - 1
            cursor = res.headers.get('next-cursor')
            if (!cursor) break
          }
          exportMs = performance.now() - t
        })()
        // This process's own event loop, sampled every 10 ms: how late a timer fired is how long a response that
        // arrived then waited to be timed (the figures above include it).
        const clientLags: number[] = []
        let expected = performance.now() + 10
        const lagTimer = setInterval(() => {
          const now = performance.now()
          clientLags.push(Math.max(0, now - expected))
          expected = now + 10
        }, 10)
        await Promise.all([ingest, exporter, ...Array.from({ length: dashboards }, (_, u) => dashboard(u))])
        clearInterval(lagTimer)
        const clientLag = `the bench client's event loop late by p99 ${quantile(clientLags, 0.99).toFixed(0)} ms (max ${quantile(clientLags, 1).toFixed(0)})`
        const phaseMs = Date.now() - phaseStart
        const phaseCpu = cpuDuringPhase()
        const serverPeakRss = Math.max(...watch.server!().map(peakRssMiB))
        const metricsPhase = await (await fetch(`${api.baseUrl}/metrics`)).text().catch(() => '')
        // What the store's own contention leaves: a group commit's write (readings, rollup marks, kept entries) as
        // the server timed it during the phase, beside the acknowledgement the device saw.
        const flushP99 = histogramQuantile(metricsBefore, metricsPhase, 'hrs_ingest_flush_duration_seconds', 'outcome="ok"', 0.99)
        // The server's own event loop (hrs_event_loop_lag_seconds): what every request waited behind its other work.
        const serverLag = histogramQuantile(metricsBefore, metricsPhase, 'hrs_event_loop_lag_seconds', '', 0.99)
        const serverLagMax = histogramQuantile(metricsBefore, metricsPhase, 'hrs_event_loop_lag_seconds', '', 1)
        // The posts as the server timed them (reading to response handed back), in the phase's first 10 s and after.
        const postRoute = 'method="POST",route="/api/v1/sensors/readings"'
        const serverPostFirst = histogramQuantile(metricsBefore, await metricsAt10, 'hrs_http_request_duration_seconds', postRoute, 0.99)
        const serverPostLater = histogramQuantile(await metricsAt10, metricsPhase, 'hrs_http_request_duration_seconds', postRoute, 0.99)
        const flushFirst = histogramQuantile(metricsBefore, await metricsAt10, 'hrs_ingest_flush_duration_seconds', 'outcome="ok"', 0.99)
        // The collections the export asked for between its steps (every request waits out each one): how many, in all.
        const collections = (['full', 'young'] as const).map((kind) => {
          const [count, sum] = ['_count', '_sum'].map((part) => sampleOf(metricsPhase, `hrs_readings_csv_collections_seconds${part}`, `kind="${kind}"`) - sampleOf(metricsBefore, `hrs_readings_csv_collections_seconds${part}`, `kind="${kind}"`))
          const longest = histogramQuantile(metricsBefore, metricsPhase, 'hrs_readings_csv_collections_seconds', `kind="${kind}"`, 1)
          return `${kind} ${count} (${(sum! * 1000).toFixed(0)} ms in all, each ≤ ${longest.bound * 1000} ms)`
        })
        const latestFrom = (source: string) => sampleOf(metricsPhase, 'hrs_readings_latest_total', `source="${source}"`)

        // Acknowledged = stored: the readings written during the phase.
        let stored: number
        if (table) stored = (await waitForCount(table, total + acknowledged, 120_000)).count - total
        else stored = Number((await records.unsafe(`select count(*) n from sensor_readings where account_id = $1 and ts >= $2`, [accountId, new Date(phaseStart - 1000).toISOString()]))[0]!.n)
        const marksAfterPhase = await marks()
        const drainStarted = Date.now()
        while ((await marks()) > 0 && Date.now() - drainStarted < 180_000) await Bun.sleep(1000)
        const marksLeft = await marks()
        const drainMs = Date.now() - drainStarted
        const metricsText = await (await fetch(`${api.baseUrl}/metrics`)).text().catch(() => '')
        const sharedReads = sampleOf(metricsText, 'hrs_readings_shared_reads_total')
        const pagesResent = sampleOf(metricsText, 'hrs_readings_pages_resent_total')
        const bucketRows = (source: string) => sampleOf(metricsText, 'hrs_readings_bucket_rows_total', `source="${source}"`)
        const keptRows = bucketRows('kept')
        const storeRows = bucketRows('store')

        // One environment's last day, by the API (counts) and by the raw rows: every reading counted once.
        const room = environments[0]!
        const to = Math.floor(Date.now() / FIVE_MINUTES) * FIVE_MINUTES
        let apiCount = 0
        let cursor: string | null = null
        const check = `${API}/environment/readings?environment_id=${room}&from=${new Date(to - DAY).toISOString()}&to=${new Date(to).toISOString()}&interval=5m&agg=count&limit=${PAGE}`
        do {
          const page = await call(api, 'GET', cursor ? `${check}&cursor=${encodeURIComponent(cursor)}` : check)
          for (const row of page.json.data as { count: number }[]) apiCount += row.count
          cursor = page.json.next_cursor
        } while (cursor)
        const rawCount = table
          ? Number((await exec(`select count() from ${table} where environment_id = '${room}' and ts >= '${new Date(to - DAY).toISOString()}' and ts < '${new Date(to).toISOString()}'`, 120_000)).dataset?.[0]?.[0])
          : Number((await records.unsafe(`select count(*) n from sensor_readings where environment_id = $1 and ts >= $2 and ts < $3`, [room, new Date(to - DAY).toISOString(), new Date(to).toISOString()]))[0]!.n)

        const roomFirst = firstByUser.slice(0, environmentsCount).filter((ms) => ms !== undefined)
        const roomLater = firstByUser.slice(environmentsCount).filter((ms) => ms !== undefined)
        const asked = Object.values(dashboardStatuses).reduce((a, b) => a + b, 0)
        const answered = dashboardStatuses['200'] ?? 0
        const latestAsked = Object.values(latestStatuses).reduce((a, b) => a + b, 0)
        const setup = table ? await questdbSetup() : undefined
        const scale = `${devicesCount} devices, ${environmentsCount} environments, ${days} days (${total.toLocaleString('en-US')} readings), ${dashboards} dashboards, ${seconds} s${exporting ? '' : ', no export (BENCH_DENSE_EXPORT=0)'}${steady ? `; steady: the phase began once the load's marks had drained (${(settledMs / 1000).toFixed(0)} s)` : ''}${setup ? `; ${setup}` : ''}${Object.keys(readingsSettings).length ? `; ${Object.entries(readingsSettings).map(([k, v]) => `${k}=${v}`).join(' ')}` : ''}`
        // Times the server found Redis unreachable (a command past REDIS_COMMAND_TIMEOUT_MS, say): kept entries go unused meanwhile.
        const redisLost = (local!.server.output().match(/shared store unreachable/g) ?? []).length
        // Why, as the server logged it the first time (a command past its deadline, a connection lost, …).
        const redisLostBecause = /shared store unreachable[^"]*".*?"error":"([^"]*)"/.exec(local!.server.output())?.[1]
        // Why a file broke off, as the server logged it (ingest/query.ts: readings_csv_broken).
        const brokenBecause = /"readings_csv_broken".*?"error":"([^"]*)"/.exec(local!.server.output())?.[1]
        const lines: Line[] = [
          line(NAME, `dashboards answered (${store}), %`, asked ? (100 * answered) / asked : 0, undefined, '%', undefined, 'target', `${answered} of ${asked} (${JSON.stringify(dashboardStatuses)})${Object.keys(refusals).length ? `; refusals ${JSON.stringify(refusals)}` : ''}; target ≥ 99 %; ${scale}`),
          line(NAME, `dashboard walk p99 (${store})`, quantile(dashboardWalks, 0.99), undefined, 'ms', undefined, 'target', `p50 ${quantile(dashboardWalks, 0.5).toFixed(0)} ms; first asks p50 ${quantile(walksFirst, 0.5).toFixed(0)} ms, max ${quantile(walksFirst, 1).toFixed(0)} ms (a room's first askers p50 ${quantile(roomFirst, 0.5).toFixed(0)}, max ${quantile(roomFirst, 1).toFixed(0)}; its later askers p50 ${quantile(roomLater, 0.5).toFixed(0)}, max ${quantile(roomLater, 1).toFixed(0)}); asked again (a dashboard's asks after its first) p99 ${quantile(walksAgain, 0.99).toFixed(0)} ms, by 20 s of the phase ${walksBySlice.map((times) => quantile(times ?? [], 0.99).toFixed(0)).join(' / ')} ms; target < 1000 ms; ${clientLag}; identical reads shared: ${sharedReads}; pages sent again as they were: ${pagesResent}; bucket rows from kept buckets ${keptRows.toLocaleString('en-US')}, from the store ${storeRows.toLocaleString('en-US')}`),
          line(NAME, `latest p99 (${store})`, quantile(latestTimes, 0.99), undefined, 'ms', undefined, 'target', `${latestStatuses['200'] ?? 0} of ${latestAsked} answered (${JSON.stringify(latestStatuses)}); p50 ${quantile(latestTimes, 0.5).toFixed(1)} ms; asked again p99 ${quantile(latestAgain, 0.99).toFixed(1)} ms; answers from kept entries ${latestFrom('kept')}, from the store ${latestFrom('store')}${redisLost ? ` (Redis unreachable ${redisLost} times${redisLostBecause ? `, first: ${redisLostBecause}` : ''}: kv/fallback.ts, the store answers meanwhile)` : ''}; ${clientLag}; target < 100 ms`),
          line(NAME, `export ${days} days hourly, all environments, CSV (${store})`, exportMs, undefined, 'ms', undefined, 'target', `${exportRows} rows; statuses ${JSON.stringify(exportStatuses)}${Object.keys(refusals).length ? `; refusals ${JSON.stringify(refusals)}` : ''}${brokenBecause ? ` (the server: ${brokenBecause})` : ''}; target: no 429 or timeout`),
          line(NAME, `ingest ack p99 during the phase (${store})`, quantile(acks, 0.99), undefined, 'ms', undefined, 'target', `p50 ${quantile(acks, 0.5).toFixed(1)} ms, max ${quantile(acks, 1).toFixed(0)} ms; after the first 10 s p99 ${quantile(acksWarm, 0.99).toFixed(0)} ms; by 5 s of the phase, its first 30 s: ${acksBySlice.slice(0, 6).map((times) => quantile(times ?? [], 0.99).toFixed(0)).join(' / ')} ms; the server's store writes (group commits) p99 ≤ ${flushP99.bound * 1000} ms of ${flushP99.total} (≤ ${flushFirst.bound * 1000} ms in the first 10 s); the posts as the server timed them p99 ≤ ${serverPostFirst.bound * 1000} ms in the first 10 s (${serverPostFirst.total}), ≤ ${serverPostLater.bound * 1000} ms after; ${acknowledged} acknowledged, ${stored} stored, ${ingestFailures} failed; target < 250 ms and acknowledged = stored`),
          line(NAME, `rollup marks drained after the phase (${store})`, drainMs, undefined, 'ms', undefined, 'target', `marks ${marksBefore} before the phase, ${marksAfterPhase} after it, ${marksLeft} left after ${(drainMs / 1000).toFixed(0)} s; target: drained within 120 s`),
          line(NAME, `cores busy during the phase (${store})`, phaseCpu.machineCores, undefined, 'cores', undefined, 'target', `of ${cpus().length}; ${Object.entries(phaseCpu.cores).map(([name, cores]) => `${name} ${cores.toFixed(2)}`).join(', ')}, everything else ${(phaseCpu.machineCores - Object.values(phaseCpu.cores).reduce((a, b) => a + b, 0)).toFixed(2)} (the bench counts its own process; Postgres's backends of the records database open at the phase's start); our server's peak RSS since it started ${serverPeakRss.toFixed(0)} MiB; its event loop late by p99 ≤ ${serverLag.bound * 1000} ms, at most ≤ ${serverLagMax.bound * 1000} ms (of ${serverLag.total} samples); garbage collections the export asked for: ${collections.join(', ')}`),
          line(NAME, `one environment's last day: API counts = raw rows (${store})`, apiCount === rawCount ? 1 : 0, undefined, 'bool', undefined, 'target', `API ${apiCount}, raw ${rawCount}`),
        ]
        return { lines, details: { store, ...(setup ? { questdb: setup } : {}), devices: devicesCount, environments: environmentsCount, days, dashboards, seconds, readings: total, loadMs, readingsPerSecond: total / (loadMs / 1000), phaseMs, dashboardStatuses, latestStatuses, exportStatuses, refusals, exportRows, exportMs, acknowledged, stored, ingestFailures, marksBefore, marksAfterPhase, marksLeft, drainMs, sharedReads, pagesResent, keptRows, storeRows, apiCount, rawCount, walkAgainP99: quantile(walksAgain, 0.99), latestAgainP99: quantile(latestAgain, 0.99), ackWarmP99: quantile(acksWarm, 0.99), flushP99Ms: flushP99.bound * 1000, phaseCpu, serverPeakRss, serverLagP99Ms: serverLag.bound * 1000, latestKept: latestFrom('kept'), latestStore: latestFrom('store'), firstAsksByUser: firstByUser.map((ms) => Math.round(ms)) } }
      } finally {
        await records.end()
      }
    })
  } finally {
    if (table) await dropTable(table)
  }
}
