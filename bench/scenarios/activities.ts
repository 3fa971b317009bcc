// POST /activities with Idempotency-Key: N lanes record feedings and weighings for the animals of a demo account,
// each with a new key, and a tenth of the requests replay one of the lane's earlier keys with the same body (which
// must answer the first status again with `Idempotent-Replayed: true`). Writes/s ÷ a bare Bun.serve parsing the
// same JSON bodies. Afterwards the activities stored must equal the keys acknowledged: no double write, none lost.
import { planStatsOf, type LoadResult } from '../lib/load.ts'
import { peakRssMiB } from '../lib/processes.ts'
import { API, benchAnimals, call, checkPlan, countRows, cpuNote, deleteAnimals, FEEDING, lanesOf, ms, onRecordsServer, runPlan, serveFixed, walkList, WEIGHING, type Api } from '../lib/records.ts'
import { line, type Scenario } from '../lib/report.ts'
import type { PlanStep } from '../load/generator.ts'

const NAME = 'activities'
const REPLAY_SHARE = 0.1
/** Animals made for the run on a remote target (the account's own are not the bench's to write to). */
const REMOTE_ANIMALS = 10

/** Three feedings to one weighing (a weighing also updates the animal's latest weight), each with its own key. */
export function activitySteps(animals: string[], replayHeader: boolean, weight = 1): PlanStep[] {
  const post = { method: 'POST' as const, path: `${API}/activities`, ids: animals, ok: [201], idempotency: { replayShare: REPLAY_SHARE, replayHeader } }
  return [
    { ...post, name: 'feeding', weight: 3 * weight, body: FEEDING },
    { ...post, name: 'weight', weight, body: WEIGHING },
  ]
}

/** New keys acknowledged per second of the window (replays, which write nothing, excluded). */
export const writesPerSecond = (load: LoadResult, steps: string[]) =>
  steps.reduce((n, name) => n + Number(load.plan!.steps[name]?.statuses['201'] ?? 0), 0) / (load.windowMs / 1000)

/** Activities of the given animals, through the API (a remote target has no database to count in). */
async function activitiesOf(api: Api, animals: string[]): Promise<number> {
  let n = 0
  for (const id of animals) n += (await walkList(api, `${API}/activities?animal_id=${id}&limit=200`)).items.length
  return n
}

export const activities: Scenario = async (ctx) => {
  const lanes = lanesOf(ctx, 16)
  return onRecordsServer(ctx, NAME, { demo: true, bare: true }, async ({ api, local }) => {
    const animals = local
      ? (await walkList<{ id: string }>(api, `${API}/animals?status=active&limit=200`)).items.map((a) => a.id)
      : await benchAnimals(api, REMOTE_ANIMALS, NAME)
    try {
      const stored = local
        ? () => countRows(local.database.url, 'select count(*)::int as n from activities where account_id = $1', [local.accountId])
        : () => activitiesOf(api, animals)
      const before = await stored()
      // One real answer, for the bare server to give back (and proof that the body is one the API takes).
      const sample = await call(api, 'POST', `${API}/activities`, { body: JSON.parse(FEEDING.replace('{id}', animals[0]!)), headers: { 'idempotency-key': `bench-sample-${Date.now()}` } })

      ctx.log(`${NAME}: ${lanes} lanes recording activities for ${animals.length} animals, a new Idempotency-Key each, ${REPLAY_SHARE * 100}% replays…`)
      const ours = await runPlan(ctx, api.baseUrl, api.token, lanes, activitySteps(animals, true), local?.watch)
      const rss = local ? peakRssMiB(local.server.pid) : undefined
      checkPlan(ours, `${NAME} (ours)`)
      // Every new key acknowledged wrote one activity; replays wrote nothing; the sample wrote one.
      const written = (await stored()) - before - 1
      const { acknowledged, replays } = ours.plan!.idempotency
      if (written !== acknowledged) throw new Error(`${NAME}: ${written} activities written for ${acknowledged} keys acknowledged (${replays} replays)`)
      if (local) {
        // Each key stored once, with its response (the sample's key included).
        const keys = await countRows(local.database.url, 'select count(*)::int as n from idempotency_keys where account_id = $1', [local.accountId])
        if (keys !== acknowledged + 1) throw new Error(`${NAME}: ${keys} idempotency keys stored for ${acknowledged + 1} acknowledged`)
      }
      const verified = `${written} activities stored = ${acknowledged} keys acknowledged, ${replays} replays answered with Idempotent-Replayed: true and no write`
      const measure = `POST /activities writes/s (new Idempotency-Key each, ${lanes} lanes; + ${REPLAY_SHARE * 100}% replays)`
      const oursWrites = writesPerSecond(ours, ['feeding', 'weight'])

      if (!local) {
        return {
          lines: [line(NAME, measure, oursWrites, undefined, 'writes/s', undefined, 'target', `remote target: no baseline; ${verified} (on ${animals.length} animals made for the run, deleted afterwards); p99 ${ms(ours.latency.p99)}`, planStatsOf(ours))],
          details: { target: api.baseUrl, lanes, replayShare: REPLAY_SHARE, animals: animals.length, written, acknowledged, replays, ours },
        }
      }

      await serveFixed(local.bare!, [{ method: 'POST', path: `${API}/activities`, status: 201, body: sample.text }])
      ctx.log(`${NAME}: the same requests on a bare Bun.serve that parses the body…`)
      const bare = await runPlan(ctx, local.bare!.baseUrl, api.token, lanes, activitySteps(animals, false), { server: () => [local.bare!.pid] })
      checkPlan(bare, `${NAME} (bare)`)
      return {
        lines: [line(NAME, `${measure} ÷ bare`, oursWrites, writesPerSecond(bare, ['feeding', 'weight']), 'writes/s', undefined, 'target',
          `${verified}; ${cpuNote(ours, bare)}; postgres ${ours.watched.postgres!.toFixed(2)} cores; p99 feeding ${ms(ours.plan!.steps.feeding!.latency.p99)}, weight ${ms(ours.plan!.steps.weight!.latency.p99)} (bare ${ms(bare.latency.p99)})`,
          planStatsOf(ours, rss))],
        details: { lanes, replayShare: REPLAY_SHARE, animals: animals.length, written, acknowledged, replays, ours, bare, oursPeakRssMiB: rss },
      }
    } finally {
      if (!local) await deleteAnimals(api, animals)
    }
  })
}
