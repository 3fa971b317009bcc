// GET /environment/readings: raw readings, per-bucket aggregates, or the latest reading per channel, from
// whichever readings store is configured (CONTRACT §7).
import { Elysia, t } from 'elysia'
import { toPage, type CursorCodec, type CursorScope } from '../src/http/cursor.ts'
import { ApiError } from '../src/http/errors.ts'
import { op } from '../src/http/operation.ts'
import { API_PREFIX } from '../src/http/pipeline.ts'
import { principalOf } from '../src/http/request.ts'
import { JsonInteger, PageOf, pageQuery } from '../src/http/schemas.ts'
import { Instant, nullable, oneOf } from '../src/records/fields.ts'
import { AGGREGATES, type Aggregate, type BucketRow, type ReadingsFilter, type ReadingsStore } from './stores/interface.ts'

export const INTERVALS = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '30m': 1_800_000, '1h': 3_600_000, '6h': 21_600_000, '12h': 43_200_000, '1d': 86_400_000 } as const
const DEFAULT_WINDOW_MS = 24 * 3600 * 1000

const ReadingRow = t.Object({
  ts: Instant,
  device_id: t.String(),
  channel: t.String(),
  metric: nullable(t.String(), 'Mapped at ingest; null for an unmapped channel.'),
  environment_id: nullable(t.String()),
  value: t.Optional(t.Number({ description: 'Raw and latest rows.' })),
  avg: t.Optional(t.Number()), min: t.Optional(t.Number()), max: t.Optional(t.Number()), last: t.Optional(t.Number()),
  count: t.Optional(JsonInteger()),
}, { $id: '#/components/schemas/ReadingRow', description: 'A reading, or with `interval` one bucket of a series (its `ts` is the bucket start) carrying the requested aggregates.' })

const Query = t.Object({
  ...pageQuery(1000, 10_000),
  environment_id: t.Optional(t.String({ maxLength: 40 })),
  device_id: t.Optional(t.String({ maxLength: 40 })),
  channel: t.Optional(t.String({ maxLength: 32 })),
  metric: t.Optional(t.String({ maxLength: 50 })),
  from: t.Optional(t.String({ format: 'date-time', description: 'Inclusive; default 24 hours before `to`.' })),
  to: t.Optional(t.String({ format: 'date-time', description: 'Exclusive; default now.' })),
  interval: t.Optional(oneOf(Object.keys(INTERVALS) as [keyof typeof INTERVALS], 'Bucket width: one row per bucket per series (device, channel), aligned to UTC.')),
  agg: t.Optional(t.String({ pattern: `^(${AGGREGATES.join('|')})(,(${AGGREGATES.join('|')}))*$`, description: 'With `interval`: comma-separated aggregates (default avg).' })),
  latest: t.Optional(t.Boolean({ description: 'The newest reading per series in the window (default window: all time).' })),
})

export function readingsRoutes(deps: { readings: ReadingsStore; cursors: CursorCodec }) {
  return new Elysia({ name: 'readings', prefix: API_PREFIX })
    .get('/environment/readings', async ({ request, query }) => {
      const { limit = 1000, cursor, ...filters } = query
      const accountId = principalOf(request).accountId
      const scope: CursorScope = { list: 'readings', accountId, filters }
      const position = cursor ? deps.cursors.decode(scope, cursor) : undefined
      if (query.interval && query.latest) throw new ApiError('invalid_parameter', 'Use either interval or latest.', { errors: [{ path: '/query/latest', message: 'cannot be combined with interval' }] })
      if (query.agg && !query.interval) throw new ApiError('invalid_parameter', 'agg needs an interval.', { errors: [{ path: '/query/agg', message: 'needs interval' }] })
      // The window is fixed by the first page (carried in the cursor), so "now" does not slide under a paging client.
      const to = position ? Number(position[0]) : query.to ? Date.parse(query.to) : query.latest ? Date.now() + 366 * 86_400_000 : Date.now()
      const from = position ? Number(position[1]) : query.from ? Date.parse(query.from) : query.latest ? 0 : to - DEFAULT_WINDOW_MS
      if (from >= to) throw new ApiError('invalid_parameter', 'from must be before to.', { errors: [{ path: '/query/from', message: 'must be before to' }] })
      const filter: ReadingsFilter = { accountId, environmentId: query.environment_id, deviceId: query.device_id, channel: query.channel, metric: query.metric, from, to }
      const store = deps.readings
      const window = [to, from] as const
      const present = (row: BucketRow & { value?: number }) => ({ ...row, ts: new Date(row.ts).toISOString() })
      let rows: (BucketRow & { value?: number })[]
      let positionOf: (row: BucketRow) => (string | number)[]
      if (query.latest) {
        rows = await store.latest(filter, limit + 1, position ? [String(position[2]), String(position[3])] : undefined)
        positionOf = (r) => [...window, r.device_id, r.channel]
      } else {
        const after = position ? [Number(position[2]), String(position[3]), String(position[4])] as [number, string, string] : undefined
        rows = query.interval
          ? await store.buckets(filter, INTERVALS[query.interval], (query.agg?.split(',') ?? ['avg']) as Aggregate[], limit + 1, after)
          : await store.raw(filter, limit + 1, after)
        positionOf = (r) => [...window, r.ts, r.device_id, r.channel]
      }
      return toPage(rows, limit, deps.cursors, scope, positionOf, present)
    }, {
      query: Query,
      response: { 200: PageOf(ReadingRow) },
      detail: op({
        summary: 'Query sensor readings',
        description: 'Raw readings in time order (default: the last 24 hours); with `interval` and `agg` one row per bucket per series; with `latest=true` the newest reading per series. `limit` 1–10000 (default 1000).',
        tags: ['Environment'], scopes: ['environment:read'],
      }),
    })
}
