// An integrator's workload in one run: N lanes each take a weighted mix of requests on a demo account (40% a
// page of GET /animals, walking the list; 20% GET /animals/{id}; 10% PATCH /animals/{id} with If-Match from the
// lane's last GET; 15% POST /activities with an Idempotency-Key; 10% GET /activities?animal_id=…; 5% GET
// /environment/readings?latest=true). Total req/s and each operation's ÷ a bare Bun.serve giving real answers of
// the same operations for the same methods and paths (bodies parsed). A 412 from a PATCH that lost a race is
// expected and counted apart; anything else unexpected fails the run.
import { planStatsOf, type LoadResult } from '../lib/load.ts'
import { peakRssMiB } from '../lib/processes.ts'
import { ANIMAL_MARKER, API, benchAnimals, call, checkPlan, countRows, cpuNote, deleteAnimals, FEEDING, lanesOf, ms, onRecordsServer, pageSizeOf, runPlan, serveFixed, walkList, type Api } from '../lib/records.ts'
import { line, type Line, type Scenario } from '../lib/report.ts'
import { createDevices } from '../lib/setup.ts'
import type { PlanStep } from '../load/generator.ts'
import { writesPerSecond } from './activities.ts'

const NAME = 'mixed'
const REMOTE_ANIMALS = 10
const PATCH_BODY = JSON.stringify({ metadata: { bench: 'mixed' } })

const OPS = {
  listAnimals: 'GET /animals (walk)',
  getAnimal: 'GET /animals/{id}',
  patchAnimal: 'PATCH /animals/{id} (If-Match)',
  recordActivity: 'POST /activities (Idempotency-Key)',
  listActivities: 'GET /activities?animal_id=',
  latestReadings: 'GET /environment/readings?latest=true',
}

function mix(animals: string[], pageSize: number, replayHeader: boolean): PlanStep[] {
  return [
    { name: OPS.listAnimals, weight: 40, method: 'GET', path: `${API}/animals?limit=${pageSize}`, walk: { itemMarker: ANIMAL_MARKER } },
    { name: OPS.getAnimal, weight: 20, method: 'GET', path: `${API}/animals/{id}`, ids: animals, keepEtag: true },
    { name: OPS.patchAnimal, weight: 10, method: 'PATCH', path: `${API}/animals/{id}`, body: PATCH_BODY, ifMatch: true, tolerated: [412] },
    { name: OPS.recordActivity, weight: 15, method: 'POST', path: `${API}/activities`, ids: animals, body: FEEDING, ok: [201], idempotency: { replayShare: 0, replayHeader } },
    { name: OPS.listActivities, weight: 10, method: 'GET', path: `${API}/activities?animal_id={id}`, ids: animals },
    { name: OPS.latestReadings, weight: 5, method: 'GET', path: `${API}/environment/readings?latest=true` },
  ]
}

/** One real answer of each operation, for the bare server to give back (and proof that each request works). */
async function sampleAnswers(api: Api, animalId: string, pageSize: number) {
  const animal = await call(api, 'GET', `${API}/animals/${animalId}`)
  const patched = await call(api, 'PATCH', `${API}/animals/${animalId}`, { body: JSON.parse(PATCH_BODY), headers: { 'if-match': animal.headers.get('etag')! } })
  const recorded = await call(api, 'POST', `${API}/activities`, { body: JSON.parse(FEEDING.replace('{id}', animalId)), headers: { 'idempotency-key': `bench-sample-${Date.now()}` } })
  const answers = [
    { method: 'GET', path: `${API}/animals`, status: 200, body: (await call(api, 'GET', `${API}/animals?limit=${pageSize}`)).text },
    { method: 'GET', path: `${API}/animals/`, status: 200, headers: { etag: animal.headers.get('etag')! }, body: animal.text },
    { method: 'PATCH', path: `${API}/animals/`, status: 200, headers: { etag: patched.headers.get('etag')! }, body: patched.text },
    { method: 'POST', path: `${API}/activities`, status: 201, body: recorded.text },
    { method: 'GET', path: `${API}/activities`, status: 200, body: (await call(api, 'GET', `${API}/activities?animal_id=${animalId}`)).text },
    { method: 'GET', path: `${API}/environment/readings`, status: 200, body: (await call(api, 'GET', `${API}/environment/readings?latest=true`)).text },
  ]
  return answers
}

const perSecond = (load: LoadResult, op: string) => (load.plan!.steps[op]?.answered ?? 0) / (load.windowMs / 1000)

export const mixed: Scenario = async (ctx) => {
  const lanes = lanesOf(ctx, 16)
  const pageSize = pageSizeOf(ctx, 50, 200)
  const measure = `integrator mix (${lanes} lanes, pages of ${pageSize})`
  return onRecordsServer(ctx, NAME, { demo: true, bare: true }, async ({ api, local }) => {
    const all = await walkList<{ id: string }>(api, `${API}/animals?limit=200`)
    // Locally every demo animal; on a remote target writes go only to animals made for the run.
    const animals = local ? all.items.map((a) => a.id) : await benchAnimals(api, REMOTE_ANIMALS, NAME)
    try {
      if (local) {
        // A device with a few readings, so that latest=true has series to answer with.
        const [device] = await createDevices(api.baseUrl, api.token, 1, 4)
        const now = Date.now()
        const readings = Array.from({ length: 4 * 60 }, (_, i) => ({ channel: `c${i % 4}`, value: 20 + (i % 7), ts: now - 3_600_000 + Math.floor(i / 4) * 60_000 }))
        await call({ ...api, token: device!.key }, 'POST', `${API}/sensors/readings`, { body: { readings }, expect: 202 })
      }
      const activities = local
        ? () => countRows(local.database.url, 'select count(*)::int as n from activities where account_id = $1', [local.accountId])
        : async () => { let n = 0; for (const id of animals) n += (await walkList(api, `${API}/activities?animal_id=${id}&limit=200`)).items.length; return n }
      const samples = await sampleAnswers(api, animals[0]!, pageSize)
      const before = await activities()

      ctx.log(`${NAME}: ${lanes} lanes on the mix (${all.items.length} animals listed, ${animals.length} written to)…`)
      const ours = await runPlan(ctx, api.baseUrl, api.token, lanes, mix(animals, pageSize, true), local?.watch)
      const rss = local ? peakRssMiB(local.server.pid) : undefined
      checkPlan(ours, `${NAME} (ours)`)
      const written = (await activities()) - before
      const { acknowledged } = ours.plan!.idempotency
      if (written !== acknowledged) throw new Error(`${NAME}: ${written} activities written for ${acknowledged} keys acknowledged`)
      const walks = ours.plan!.walks[OPS.listAnimals]!
      if (local && walks.completed && (walks.itemsMin !== all.items.length || walks.itemsMax !== all.items.length)) throw new Error(`${NAME}: list walks counted ${walks.itemsMin}…${walks.itemsMax} animals, not ${all.items.length}`)

      let bare: LoadResult | undefined
      if (local) {
        await serveFixed(local.bare!, samples)
        ctx.log(`${NAME}: the same mix on a bare Bun.serve giving fixed real answers…`)
        bare = await runPlan(ctx, local.bare!.baseUrl, api.token, lanes, mix(animals, pageSize, false), { server: () => [local.bare!.pid] })
        checkPlan(bare, `${NAME} (bare)`)
      }

      const conflicts = ours.plan!.steps[OPS.patchAnimal]?.tolerated ?? 0
      const verified = `${written} activities stored = ${acknowledged} keys acknowledged; ${walks.completed} full list walks${walks.completed ? ` each of ${walks.itemsMax} animals` : ''}; ${conflicts} PATCH answered 412 (a lost race, expected)`
      const lines: Line[] = [line(NAME, `${measure} total req/s${bare ? ' ÷ bare, same mix' : ''}`, ours.requestsPerSecond, bare?.requestsPerSecond, 'req/s', undefined, 'target',
        `${local ? '' : 'remote target: no baseline; '}${verified}; ${cpuNote(ours, bare)}${local ? `; postgres ${ours.watched.postgres!.toFixed(2)} cores` : ''}; p99 ${ms(ours.latency.p99)}${bare ? ` / ${ms(bare.latency.p99)}` : ''}`,
        planStatsOf(ours, rss))]
      for (const op of Object.values(OPS)) {
        const step = ours.plan!.steps[op]!
        lines.push(line(NAME, `  ${op}`, perSecond(ours, op), bare && perSecond(bare, op), 'req/s', undefined, 'target',
          op === OPS.patchAnimal ? `${step.tolerated} of ${step.answered} answered 412 (counted apart, not errors)` : undefined, planStatsOf(ours, rss, op)))
      }
      return {
        lines,
        details: { target: local ? undefined : api.baseUrl, lanes, pageSize, animals: all.items.length, writtenTo: animals.length, written, acknowledged, conflicts, writesPerSecond: writesPerSecond(ours, [OPS.recordActivity]), ours, bare, oursPeakRssMiB: rss },
      }
    } finally {
      if (!local) await deleteAnimals(api, animals)
    }
  })
}
