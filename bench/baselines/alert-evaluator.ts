// Diagnosis for ingest-alerts: the alert evaluator alone, in one process, judging the rows the ingest load writes
// (128 devices × 10 channels, the generator's values and timestamps) in batches of 10,000, with the 1,000 rules the
// scenario creates. Its CPU per reading is what rules add to the server's, free of the load's noise.
import { openPglite } from '../../db/client.ts'
import type { Reading } from '../../ingest/stores/interface.ts'
import { sqlStore } from '../../ingest/stores/sql.ts'
import { createAccount } from '../../src/accounts.ts'
import { newId } from '../../src/ids.ts'
import { memoryStore } from '../../src/kv/memory.ts'
import { createLogger } from '../../src/log.ts'
import { AlertEvaluator } from '../../src/modules/alerts/evaluator.ts'

export interface EvaluatorConfig { devices: number; channels: number; rules: number; firing: number; readings: number; metrics: string[] }
export interface EvaluatorResult { readings: number; ms: number; nsPerReading: number; rules: number; opened: number }

if (import.meta.main) {
  const config = JSON.parse(process.argv[2]!) as EvaluatorConfig
  const database = await openPglite('memory://')
  await database.migrate()
  const account = await createAccount(database.db, { name: 'bench' })
  const devices = Array.from({ length: config.devices }, () => newId('device'))
  const series = devices.flatMap((deviceId) => Array.from({ length: config.channels }, (_, c) => ({ deviceId, c }))).slice(0, config.rules)
  const metricOf = (c: number) => config.metrics[c % config.metrics.length]!
  // The same rules as the scenario: the last `firing` are always out of range, the rest never.
  for (const [i, { deviceId, c }] of series.entries()) {
    const firing = i >= config.rules - config.firing
    await database.query(`insert into alert_rules (id, account_id, device_id, channel, metric, min, max, hysteresis, for_seconds, stale_after_seconds)
      values ($1, $2, $3, $4, $5, $6, $7, 0.5, $8, 3600)`, [newId('alertRule'), account.id, deviceId, `c${c}`, metricOf(c), firing ? 200 : -50, firing ? null : 150, firing ? 0 : 60])
  }
  const evaluator = new AlertEvaluator({ db: database.db, shared: memoryStore(), readings: sqlStore(database), log: createLogger('error') })
  await evaluator.start()
  // Requests of 100 readings (10 per channel) from each device in turn, as the generator sends them.
  const tsBase = Date.now() - 2 * 3_600_000
  const rows: Reading[] = []
  for (let k = 0; rows.length < config.readings; k++) {
    for (const [d, deviceId] of devices.entries()) {
      for (let j = 0; j < 100; j++) {
        const c = j % config.channels
        rows.push({ accountId: account.id, deviceId, channel: `c${c}`, ts: tsBase + k * 10 + Math.floor(j / config.channels), value: (((k * 128 + d) * 31 + j * 7) % 1000) / 10, metric: metricOf(c), environmentId: null })
      }
    }
  }
  const batches: Reading[][] = []
  for (let i = 0; i < rows.length; i += 10_000) batches.push(rows.slice(i, i + 10_000))
  const cpu0 = process.cpuUsage()
  const started = performance.now()
  for (const batch of batches) evaluator.observe(batch)
  const ms = performance.now() - started
  const cpu = process.cpuUsage(cpu0)
  await evaluator.flush()
  const opened = (await database.query<{ n: number }>('select count(*)::int as n from alerts'))[0]!.n
  await evaluator.close()
  await database.close()
  console.log(`result ${JSON.stringify({ readings: rows.length, ms, nsPerReading: ((cpu.user + cpu.system) * 1000) / rows.length, rules: evaluator.size, opened } satisfies EvaluatorResult)}`)
  process.exit(0)
}
