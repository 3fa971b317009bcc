// Ingest with 1,000 active alert rules ÷ the same ingest with none, in the same run (issue 16: within 10%).
// The ingest-postgres load (128 devices × 100 readings per request, closed loop, SQL store on Postgres) runs
// alternately without and with rules, twice each, each run on a fresh database. The rules watch 1,000 of the
// 1,280 device channels the load writes; 990 keep a range the load never leaves (pure evaluation cost, and a
// stale watch the timer walks), 10 a range it is always outside, so exactly 10 alerts must open and none more
// (hysteresis: no storm), which proves the rules were evaluated.
import { join } from 'node:path'
import postgres from 'postgres'
import type { EvaluatorConfig, EvaluatorResult } from '../baselines/alert-evaluator.ts'
import { newId } from '../../src/ids.ts'
import { pidsNamed } from '../lib/load.ts'
import { BUN, ROOT, runForResult } from '../lib/processes.ts'
import { line, needsLocalServer, type Scenario } from '../lib/report.ts'
import { cleanRedis, freshDatabase, METRICS, metricOf, serverEnv } from '../lib/setup.ts'
import { CHANNELS, driveIngest, ingestSettings, type IngestRun } from './ingest-postgres.ts'

const NAME = 'ingest-alerts'
const RULES = 1000
const FIRING = 10
const EVALUATOR_SCRIPT = join(ROOT, 'bench', 'baselines', 'alert-evaluator.ts')

interface Measured { rules: number; readingsPerSecond: number; cpuPerReading: number; alerts: number; triggered: number }

/** 999 rules written straight into the database, then one through the API, whose reload makes the server read them all. */
async function addRules(databaseUrl: string, setup: { baseUrl: string; token: string; accountId: string; devices: { id: string }[] }) {
  const series = setup.devices.flatMap((device) => Array.from({ length: CHANNELS }, (_, c) => ({ deviceId: device.id, c }))).slice(0, RULES)
  if (series.length < RULES) throw new Error(`${NAME} needs ${RULES} device channels; --concurrency gives ${series.length}`)
  const rule = ({ deviceId, c }: { deviceId: string; c: number }, i: number) => {
    // The load's values lie in [0, 100).
    const firing = i >= RULES - FIRING
    return { device_id: deviceId, channel: `c${c}`, metric: metricOf(c), min: firing ? 200 : -50, max: firing ? null : 150, hysteresis: 0.5, for_seconds: firing ? 0 : 60, stale_after_seconds: 3600 }
  }
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const rows = series.slice(0, RULES - 1).map((s, i) => ({ id: newId('alertRule'), account_id: setup.accountId, ...rule(s, i) }))
    await sql`insert into alert_rules ${sql(rows)}`
  } finally {
    await sql.end()
  }
  const res = await fetch(`${setup.baseUrl}/api/v1/environment/alert-rules`, {
    method: 'POST', headers: { authorization: `Bearer ${setup.token}`, 'content-type': 'application/json' }, body: JSON.stringify(rule(series[RULES - 1]!, RULES - 1)),
  })
  if (res.status !== 201) throw new Error(`creating an alert rule answered ${res.status}: ${await res.text()}`)
}

async function alertCounts(databaseUrl: string): Promise<{ alerts: number; triggered: number }> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql<{ alerts: number; triggered: number }[]>`select (select count(*)::int from alerts) as alerts,
      (select count(*)::int from outbox_events where type = 'environment.alert.triggered') as triggered`
    return row!
  } finally {
    await sql.end()
  }
}

export const ingestAlerts: Scenario = async (ctx) => {
  if (ctx.options.target) return needsLocalServer()
  const runs: Measured[] = []
  // Alternating, so load from other work on the machine falls on both sides alike.
  for (const rules of [0, RULES, 0, RULES]) {
    const database = await freshDatabase(`alerts_${rules}`)
    const env = serverEnv(database, ingestSettings())
    let run: IngestRun | undefined
    try {
      run = await driveIngest(ctx, env, { postgres: () => pidsNamed('postgres') }, `${NAME} (${rules} rules)`,
        rules ? (setup) => addRules(database.url, setup) : undefined)
      await run.server.stop()
      // Transitions are written when the server drains, so they are counted after it stopped.
      const counts = await alertCounts(database.url)
      const { load } = run
      runs.push({ rules, readingsPerSecond: load.readingsPerSecond, cpuPerReading: (load.watched.server! * 1e6) / load.readingsPerSecond, ...counts })
      ctx.log(`${NAME}: ${rules} rules: ${load.readingsPerSecond.toFixed(0)} readings/s, ${counts.alerts} alerts`)
    } finally {
      await run?.server.stop()
      await database.drop()
      await cleanRedis(env.REDIS_PREFIX!)
    }
  }
  ctx.log(`${NAME}: the evaluator alone, in one process, judging 2,000,000 of the same readings…`)
  const lanes = ctx.options.concurrency ?? 128
  const alone = await runForResult<EvaluatorResult>('evaluator alone', [BUN, EVALUATOR_SCRIPT, JSON.stringify({
    devices: lanes, channels: CHANNELS, rules: RULES, firing: FIRING, readings: 2_000_000, metrics: METRICS,
  } satisfies EvaluatorConfig)])
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
  const without = runs.filter((r) => r.rules === 0)
  const withRules = runs.filter((r) => r.rules === RULES)
  const verified = withRules.every((r) => r.alerts === FIRING && r.triggered === FIRING) && without.every((r) => r.alerts === 0)
  const each = runs.map((r) => `${r.rules} rules ${r.readingsPerSecond.toFixed(0)}/s ${r.cpuPerReading.toFixed(1)} µs CPU/reading, ${r.alerts} alerts`).join('; ')
  const note = `${verified ? `each run with rules opened exactly ${FIRING} alerts (the always-out rules) and none more` : `ALERTS NOT AS EXPECTED (${FIRING} per run with rules)`}; runs in order: ${each}`
  return {
    lines: [
      line(NAME, `readings/s with ${RULES} alert rules ÷ without (${withRules.length} runs each, alternating)`, mean(withRules.map((r) => r.readingsPerSecond)), mean(without.map((r) => r.readingsPerSecond)), 'rows/s', 0.9, 'target', note),
      line(NAME, `server CPU per reading with ${RULES} rules ÷ without`, mean(withRules.map((r) => r.cpuPerReading)), mean(without.map((r) => r.cpuPerReading)), 'µs'),
      line(NAME, `evaluator alone (${alone.rules} rules): CPU per reading ÷ the server's without rules`, alone.nsPerReading / 1000, mean(without.map((r) => r.cpuPerReading)), 'µs', undefined, 'target',
        `${alone.readings} readings in batches of 10,000 judged in ${alone.ms.toFixed(0)} ms, ${alone.opened} alerts opened (expected ${FIRING}); the share of a reading's server CPU that rules add, free of the load's noise`),
    ],
    details: { runs, verified, evaluatorAlone: alone, settings: ingestSettings() },
  }
}
