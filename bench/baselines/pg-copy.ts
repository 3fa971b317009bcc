// The Postgres baseline: the same readings our API stored (same devices, channels, metrics, timestamps, count),
// streamed by one process into the same indexed readings table (compact: channel and series ids, registered and
// partitioned before the clock starts) with one `COPY … FROM STDIN` (CSV) on postgres.js. It keeps no rollups. Prints `result {rows, ms, cpu, backendCpu}`; `ms` covers making the CSV text too, as our
// server's time covers building its INSERT.
import { once } from 'node:events'
import postgres from 'postgres'
import { openPostgres } from '../../db/client.ts'
import { SeriesCatalogue, type SeriesIds } from '../../ingest/series.ts'
import { ensurePartitions } from '../../ingest/stores/sql-layout.ts'
import { cpuWindow } from '../lib/proc.ts'
import { makeRows, type Row, type RowsSpec } from './rows.ts'

export interface CopyConfig { databaseUrl: string; spec: RowsSpec }

/** CSV text of `rows`, about `chunk` rows at a time: each row's channel and series ids, time and value. */
function* csv(rows: Row[], ids: SeriesIds, chunk = 2000): Generator<string> {
  for (let from = 0; from < rows.length; from += chunk) {
    let text = ''
    for (let i = from; i < Math.min(rows.length, from + chunk); i++) {
      const r = rows[i]!
      text += `${ids.channels[i]},${ids.series[i]},${new Date(r.ts).toISOString()},${r.value}\n`
    }
    yield text
  }
}

if (import.meta.main) {
  const config = JSON.parse(process.argv[2]!) as CopyConfig
  const rows = makeRows(config.spec)
  // Untimed: the ids the rows' series and channels have (environment_id NULL, as the API run stores it), and the partitions.
  const database = await openPostgres(config.databaseUrl)
  const ids = await new SeriesCatalogue(database).idsOf(rows.map((r) => ({ ...r, environmentId: null })))
  await ensurePartitions(database, rows.map((r) => r.ts))
  await database.close()
  const sql = postgres(config.databaseUrl, { max: 1, onnotice: () => {} })
  // The backend's CPU is read from /proc before the connection (and so the backend) goes away.
  const backend = (await sql<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid
  const window = cpuWindow({ backend: [backend] })
  const cpu0 = process.cpuUsage()
  const started = performance.now()
  const stream = await sql`copy readings (channel_id, series_id, ts, value) from stdin with (format csv)`.writable()
  const finished = new Promise<void>((resolve, reject) => { stream.on('finish', resolve); stream.on('error', reject) })
  for (const chunk of csv(rows, ids)) if (!stream.write(chunk)) await once(stream, 'drain')
  stream.end()
  await finished
  const ms = performance.now() - started
  const cpu = process.cpuUsage(cpu0)
  const machine = window()
  const stored = (await sql<{ count: number }[]>`select count(*)::int as count from readings`)[0]!.count
  await sql.end()
  console.log(`result ${JSON.stringify({ rows: rows.length, stored, ms, rowsPerSecond: (rows.length / ms) * 1000, cpu: (cpu.user + cpu.system) / 1000 / ms, backendCpu: machine.cores.backend, machineCores: machine.machineCores })}`)
  process.exit(0)
}
