// Reference lists shared by every account: species, activity types, metrics. Shipped as data, keyset-paged
// by their slug ids like every other list.
import { Elysia, t } from 'elysia'
import { ACTIVITY_TYPES } from '../../../db/reference/activity-types.ts'
import { METRICS } from '../../../db/reference/metrics.ts'
import { SPECIES, type SpeciesRecord } from '../../../db/reference/species.ts'
import type { Deps } from '../../deps.ts'
import { toPage, type CursorScope } from '../../http/cursor.ts'
import { op } from '../../http/operation.ts'
import { API_PREFIX } from '../../http/pipeline.ts'
import { principalMacro } from '../../http/request.ts'
import type { Principal } from '../../auth/authenticator.ts'
import { PageOf, pageQuery } from '../../http/schemas.ts'

const byId = <T extends { id: string }>(items: readonly T[]) => [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
const species = byId(SPECIES)
const activityTypes = byId(ACTIVITY_TYPES).map((a) => ({ id: a.id, name: a.name, description: a.description, details_schema: JSON.parse(JSON.stringify(a.details)) }))
const metrics = byId(METRICS)

/** One page of a list sorted by id, after the cursor's id. */
function pageById<T extends { id: string }>(deps: Deps, principal: Principal, list: string, items: readonly T[], query: { limit?: number; cursor?: string }, filters: Record<string, unknown>) {
  const scope: CursorScope = { list, accountId: principal.accountId, filters }
  const limit = query.limit ?? 50
  let start = 0
  if (query.cursor) {
    const [afterId] = deps.cursors.decode(scope, query.cursor)
    start = items.findIndex((item) => item.id > String(afterId))
    if (start === -1) start = items.length
  }
  return toPage(items.slice(start, start + limit + 1), limit, deps.cursors, scope, (item) => [item.id], (item) => item)
}

const Species = t.Object({
  id: t.String({ examples: ['python-regius'] }),
  scientific_name: t.String(),
  common_name: t.String(),
  other_names: t.Array(t.String()),
  family: t.String(),
  group: t.String({ description: 'snake, lizard, gecko, turtle, tortoise, crocodilian, frog, salamander, newt, caecilian, tuatara' }),
  class: t.Union([t.Literal('reptilia'), t.Literal('amphibia')]),
  venomous: t.Boolean(),
  cites_appendix: t.Union([t.Literal('I'), t.Literal('II'), t.Literal('III'), t.Null()]),
}, { $id: '#/components/schemas/Species' })

const ActivityType = t.Object({
  id: t.String({ examples: ['feeding'] }),
  name: t.String(),
  description: t.String(),
  details_schema: t.Record(t.String(), t.Unknown(), { description: 'JSON Schema of `details` for activities of this type.' }),
}, { $id: '#/components/schemas/ActivityType' })

const Metric = t.Object({
  id: t.String({ examples: ['temperature'] }), name: t.String(), unit: t.String(), description: t.String(), min: t.Number(), max: t.Number(),
}, { $id: '#/components/schemas/Metric' })

function matchesSpecies(s: SpeciesRecord, q: string | undefined, group: string | undefined, cls: string | undefined) {
  if (group && s.group !== group) return false
  if (cls && s.class !== cls) return false
  if (!q) return true
  const needle = q.toLowerCase()
  return s.scientific_name.toLowerCase().includes(needle) || s.common_name.toLowerCase().includes(needle) || s.other_names.some((n) => n.toLowerCase().includes(needle))
}

export function referenceModule(deps: Deps) {
  return new Elysia({ name: 'reference', prefix: API_PREFIX })
    .use(principalMacro)
    .get('/species', ({ principal, query }) => {
      const filters = { q: query.q, group: query.group, class: query.class }
      const items = species.filter((s) => matchesSpecies(s, query.q, query.group, query.class))
      return pageById(deps, principal, 'species', items, query, filters)
    }, {
      principal: true,
      query: t.Object({
        ...pageQuery(),
        q: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'Case-insensitive search in scientific and common names.' })),
        group: t.Optional(t.String({ maxLength: 20 })),
        class: t.Optional(t.Union([t.Literal('reptilia'), t.Literal('amphibia')])),
      }),
      response: { 200: PageOf(Species) },
      detail: op({ operationId: 'listSpecies', summary: 'List species reference data', tags: ['Reference'] }),
    })
    .get('/activity-types', ({ principal, query }) => pageById(deps, principal, 'activity-types', activityTypes, query, {}), {
      principal: true,
      query: t.Object(pageQuery()),
      response: { 200: PageOf(ActivityType) },
      detail: op({ operationId: 'listActivityTypes', summary: 'List activity types and the details each carries', tags: ['Activities'] }),
    })
    .get('/environment/metrics', ({ principal, query }) => pageById(deps, principal, 'metrics', metrics, query, {}), {
      principal: true,
      query: t.Object(pageQuery()),
      response: { 200: PageOf(Metric) },
      detail: op({ operationId: 'listMetrics', summary: 'List available metrics', tags: ['Environment'] }),
    })
}
