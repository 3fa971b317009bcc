// GET /metrics: the Prometheus exposition of src/observability.ts's metrics, plus values read at scrape time
// (ingest queue depth, webhook backlog, backend up/down). Outside /api/v1 like /healthz: scrapers hold no API key.
// Served openly only when the service listens on loopback (HOST); elsewhere it needs METRICS_TOKEN as a bearer
// token, so a public listener never shows its traffic to strangers.
import { timingSafeEqual } from 'node:crypto'
import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import { ApiError } from '../../http/errors.ts'
import { op } from '../../http/operation.ts'
import type { BackendHealth } from './backend-health.ts'
import { WRITER_CONSUMER } from '../../../ingest/log/consumer.ts'
import { isLoopbackHost } from '../../config.ts'

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

export function metricsModule(deps: Deps, health: BackendHealth) {
  const { metrics } = deps
  metrics.registry.gauge('hrs_ingest_queued_readings', 'Readings accepted into memory and not yet written to the readings store.', [],
    () => [{ value: deps.ingest.batcher.queuedReadings }])
  metrics.registry.gauge('hrs_webhook_backlog', 'Webhook deliveries waiting for an attempt (all processes: read from the database).', [], async () => {
    const [row] = await deps.database.query<{ pending: number | string }>(`select count(*) as pending from webhook_deliveries where status = 'pending'`)
    return [{ value: Number(row?.pending ?? 0) }]
  })
  // The rollup marks (ingest/stores/questdb-rollups.ts): minutes written to a QuestDB store and not yet known to be in
  // its rollups, whose days are read raw meanwhile. A backlog that does not shrink means queries keep reading raw.
  const marks = () => deps.database.query<{ store: string; pending: number; oldest: number }>(`select store, count(*)::int as pending,
    extract(epoch from now() - min(marked_at))::float8 as oldest from reading_rollup_marks group by store`)
  metrics.registry.gauge('hrs_rollup_marks_pending', 'Minutes marked as written to a QuestDB readings store and not yet in its rollups (all processes: read from the database), by store table.', ['store'], async () =>
    (await marks()).map((r) => ({ labels: [r.store], value: Number(r.pending) })))
  metrics.registry.gauge('hrs_rollup_marks_oldest_age_seconds', 'Age of the oldest pending rollup mark (since its minute was last written), by store table.', ['store'], async () =>
    (await marks()).map((r) => ({ labels: [r.store], value: Number(r.oldest) })))
  const log = deps.ingest.log
  if (log) {
    metrics.registry.gauge('hrs_ingest_log_pending_messages', 'Messages in the ingest log not yet stored by a writer (all writers, every lane that answers: read from JetStream), waiting or being written.', [], async () => {
      // A lane without a leader does not answer (for seconds, while JetStream elects one): the others are counted.
      const infos = await Promise.allSettled(log.lanes.map((lane) => log.jsm.consumers.info(lane.stream, WRITER_CONSUMER)))
      if (!infos.some((i) => i.status === 'fulfilled')) throw (infos[0] as PromiseRejectedResult).reason
      return [{ value: infos.reduce((sum, i) => sum + (i.status === 'fulfilled' ? i.value.num_pending + i.value.num_ack_pending : 0), 0) }]
    })
    metrics.registry.gauge('hrs_ingest_log_lane_up', 'Per lane of the ingest log: 1 while this process appends to it, 0 from a failed append until its leader answers again.', ['lane'],
      () => log.lanes.map((lane) => ({ labels: [lane.stream], value: lane.up ? 1 : 0 })))
  }
  metrics.registry.gauge('hrs_backend_up', '1 when the backend answered its last ping within 2 s, 0 when it did not.', ['backend'], async () =>
    Object.entries(await health.current()).map(([backend, state]) => ({ labels: [backend], value: state === 'ok' ? 1 : 0 })))

  const open = !deps.config.metricsToken && isLoopbackHost(deps.config.host)
  return new Elysia({ name: 'metrics' })
    .get('/metrics', async ({ request, set }) => {
      if (!open) {
        const token = deps.config.metricsToken
        if (!token) throw new ApiError('not_found', 'Metrics are served without a token only when HOST is a loopback address; set METRICS_TOKEN to serve them here.')
        const given = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1]
        if (!given || !sameSecret(given, token)) {
          throw new ApiError('authentication_required', 'Send METRICS_TOKEN as "Authorization: Bearer <token>".', { headers: { 'www-authenticate': 'Bearer realm="metrics"' } })
        }
      }
      set.headers['content-type'] = 'text/plain; version=0.0.4; charset=utf-8'
      return metrics.registry.render()
    }, {
      response: { 200: t.String({ description: 'Prometheus text format 0.0.4.' }) },
      detail: op({
        operationId: 'getMetrics',
        summary: 'Metrics for Prometheus',
        description: 'Request counts and latency histograms by route template and status, ingest queue depth, flush sizes and latency, readings-store errors, rollup marks pending and the age of the oldest, webhook backlog and attempt outcomes, and whether each backend answers. Open when the service listens on a loopback address (`HOST`); otherwise it needs `METRICS_TOKEN` as a bearer token (401 without it) and is 404 when no token is configured. Counters are per process.',
        tags: ['Platform'], auth: 'public', errors: [401, 404],
      }),
    })
}
