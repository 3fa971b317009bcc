// GET /animals page walks: N lanes each walk the list of an account the CLI's `demo` filled, page by page
// following next_cursor to the last page, then start over. Pages/s ÷ a bare Bun.serve answering every GET with
// the bytes of one real page. Every full walk under load must count the account's animals, and one walk checked
// here must see each of them exactly once.
import { peakRssMiB } from '../lib/processes.ts'
import { ANIMAL_MARKER, API, checkPlan, countRows, cpuNote, lanesOf, ms, onRecordsServer, pageSizeOf, runPlan, serveFixed, walkList, type Api } from '../lib/records.ts'
import { line, type Scenario } from '../lib/report.ts'
import { planStatsOf, type LoadResult } from '../lib/load.ts'
import type { PlanStep } from '../load/generator.ts'

const NAME = 'animals-walk'

/** Walks the list once, parsing every page: each animal must appear once, `expected` of them when known. */
async function checkedWalk(api: Api, path: string, expected?: number) {
  const walk = await walkList<{ id: string }>(api, path)
  const distinct = new Set(walk.items.map((a) => a.id)).size
  if (distinct !== walk.items.length) throw new Error(`${NAME}: a walk saw ${walk.items.length} animals but only ${distinct} distinct ones`)
  if (expected !== undefined && walk.items.length !== expected) throw new Error(`${NAME}: a walk saw ${walk.items.length} animals; the database holds ${expected}`)
  return walk
}

/** Every full walk under load counted `expected` animals (a skip or a repeat changes the count). */
function walksNote(load: LoadResult, expected: number, strict: boolean): string {
  const walks = load.plan!.walks.page!
  const whole = walks.completed === 0 || (walks.itemsMin === expected && walks.itemsMax === expected)
  if (!whole && strict) throw new Error(`${NAME}: full walks under load counted ${walks.itemsMin}…${walks.itemsMax} animals, not ${expected}`)
  return walks.completed
    ? `${walks.completed} full walks under load (${walks.pagesMax} pages each), ${whole ? `each counted all ${expected} animals` : `COUNTED ${walks.itemsMin}…${walks.itemsMax}, NOT ${expected}`}`
    : 'no walk reached the last page within the run (a bigger account or a longer window)'
}

export const animalsWalk: Scenario = async (ctx) => {
  const lanes = lanesOf(ctx, 8)
  const pageSize = pageSizeOf(ctx, 50, 200)
  const path = `${API}/animals?limit=${pageSize}`
  const step: PlanStep = { name: 'page', method: 'GET', path, walk: { itemMarker: ANIMAL_MARKER } }
  const measure = `GET /animals page walk (${pageSize}/page, ${lanes} lanes)`

  return onRecordsServer(ctx, NAME, { demo: true, bare: true }, async ({ api, local }) => {
    if (!local) {
      const walk = await checkedWalk(api, path)
      ctx.log(`${NAME}: ${lanes} lanes walking ${api.baseUrl} (${walk.items.length} animals, ${walk.pages} pages)…`)
      const load = await runPlan(ctx, api.baseUrl, api.token, lanes, [step])
      checkPlan(load, `${NAME} (target)`)
      return {
        lines: [line(NAME, measure, load.requestsPerSecond, undefined, 'pages/s', undefined, 'target',
          `remote target: no baseline (the bare server runs on this machine); ${walksNote(load, walk.items.length, false)} (the account may change meanwhile); p99 ${ms(load.latency.p99)}`, planStatsOf(load))],
        details: { target: api.baseUrl, lanes, pageSize, animals: walk.items.length, load },
      }
    }

    const stored = await countRows(local.database.url, 'select count(*)::int as n from animals where account_id = $1 and deleted_at is null', [local.accountId])
    const walk = await checkedWalk(api, path, stored)
    // The baseline answers every GET with a real page's bytes (its next_cursor never ends, so bare lanes keep going).
    await serveFixed(local.bare!, [{ method: 'GET', path: `${API}/animals`, status: 200, body: walk.firstPage }])

    ctx.log(`${NAME}: ${lanes} lanes walking ${stored} animals, ${walk.pages} pages of ${pageSize} (${walk.firstPage.length} bytes)…`)
    const ours = await runPlan(ctx, api.baseUrl, api.token, lanes, [step], local.watch)
    const rss = peakRssMiB(local.server.pid)
    ctx.log(`${NAME}: the same walk on a bare Bun.serve…`)
    const bare = await runPlan(ctx, local.bare!.baseUrl, api.token, lanes, [step], { server: () => [local.bare!.pid] })
    checkPlan(ours, `${NAME} (ours)`)
    checkPlan(bare, `${NAME} (bare)`)
    const walks = walksNote(ours, stored, true)

    return {
      lines: [line(NAME, `${measure} ÷ bare (same bytes)`, ours.requestsPerSecond, bare.requestsPerSecond, 'pages/s', undefined, 'target',
        `${walks}; a checked walk saw each of the ${stored} animals once; ${cpuNote(ours, bare)}; postgres ${ours.watched.postgres!.toFixed(2)} cores; p99 ${ms(ours.latency.p99)} / ${ms(bare.latency.p99)}`,
        planStatsOf(ours, rss))],
      details: { lanes, pageSize, animals: stored, pagesPerWalk: walk.pages, pageBytes: walk.firstPage.length, ours, bare, oursPeakRssMiB: rss },
    }
  })
}
