// Diagnosis for ingest-postgres: the same rows written by our SQL store's own write() (ingest/stores/sql.ts:
// one INSERT … SELECT FROM unnest … ON CONFLICT DO NOTHING per batch), with the batch size our server used on
// average and as many batches in flight as INGEST_FLUSH_CONCURRENCY allows, but no HTTP and no group commit.
// Splits the API's gap to COPY into "the store's statement" and "everything in front of it".
import { openPostgres } from '../../db/client.ts'
import type { Reading } from '../../ingest/stores/interface.ts'
import { sqlStore } from '../../ingest/stores/sql.ts'
import { cpuWindow } from '../lib/proc.ts'
import { makeRows, type RowsSpec } from './rows.ts'

export interface StoreConfig { databaseUrl: string; spec: RowsSpec; batch: number; inFlight: number }

if (import.meta.main) {
  const config = JSON.parse(process.argv[2]!) as StoreConfig
  const readings: Reading[] = makeRows(config.spec).map((r) => ({ accountId: r.accountId, deviceId: r.deviceId, channel: r.channel, ts: r.ts, value: r.value, metric: r.metric, environmentId: null }))
  const database = await openPostgres(config.databaseUrl)
  await database.migrate()
  const store = sqlStore(database)
  // Postgres's side: this database's backends, opened before the clock starts (as many as batches in flight).
  await Promise.all(Array.from({ length: config.inFlight }, () => database.query('select pg_sleep(0.05)')))
  const pids = (await database.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()')).map((r) => Number(r.pid))
  const window = cpuWindow({ backends: pids })
  const cpu0 = process.cpuUsage()
  const started = performance.now()
  let next = 0
  await Promise.all(Array.from({ length: config.inFlight }, async () => {
    for (;;) {
      const from = next
      if (from >= readings.length) return
      next = Math.min(readings.length, from + config.batch)
      await store.write(readings.slice(from, next))
    }
  }))
  const ms = performance.now() - started
  const cpu = process.cpuUsage(cpu0)
  const machine = window()
  const stored = (await database.query<{ n: number }>('select count(*)::int as n from readings'))[0]!.n
  await database.close()
  console.log(`result ${JSON.stringify({ rows: readings.length, stored, ms, rowsPerSecond: (readings.length / ms) * 1000, cpu: (cpu.user + cpu.system) / 1000 / ms, backendCpu: machine.cores.backends, machineCores: machine.machineCores })}`)
  process.exit(0)
}
