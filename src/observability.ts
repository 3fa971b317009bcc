// What the service tells its operator about itself: the metrics behind GET /metrics, recorded where things happen
// (requests here, flushes in ingest, delivery outcomes in the dispatcher), and the access log line per request.
import { LATENCY_BUCKETS, MetricsRegistry, SIZE_BUCKETS } from './metrics.ts'

/** How often watchEventLoop's timer is due. */
const LAG_SAMPLE_MS = 20

export function createMetrics() {
  const registry = new MetricsRegistry()
  return {
    registry,
    httpRequests: registry.counter('hrs_http_requests_total', 'Requests answered, by method, route template and status.', ['method', 'route', 'status']),
    httpDuration: registry.histogram('hrs_http_request_duration_seconds', 'Time from receiving a request to handing back its response.', ['method', 'route'], LATENCY_BUCKETS),
    ingestFlushReadings: registry.histogram('hrs_ingest_flush_readings', 'Readings per write to the readings store (group commit).', [], SIZE_BUCKETS),
    ingestFlushDuration: registry.histogram('hrs_ingest_flush_duration_seconds', 'Time one write to the readings store took.', ['outcome'], LATENCY_BUCKETS),
    ingestStoreErrors: registry.counter('hrs_ingest_store_errors_total', 'Writes to the readings store that failed or timed out (their requests were answered 503).'),
    ingestLogPublished: registry.counter('hrs_ingest_log_published_messages_total', 'Messages this process published to the ingest log (one per account per group commit).'),
    ingestLogAppends: registry.counter('hrs_ingest_log_appends_total', 'Messages the ingest log acknowledged to this process, by lane (stream): with INGEST_LOG_LANES above 1, spread over the lanes that answer.', ['lane']),
    ingestLogFailovers: registry.counter('hrs_ingest_log_failovers_total', 'Appends that failed or did not answer within INGEST_LOG_LANE_TIMEOUT_MS on this lane and were made to another lane instead.', ['lane']),
    ingestLogWriterBatches: registry.counter('hrs_ingest_log_writer_batches_total', 'Batches this process\'s writer took from the ingest log, by outcome (stored, or failed and left for redelivery).', ['outcome']),
    ingestLogLag: registry.histogram('hrs_ingest_log_lag_seconds', 'From the log\'s acknowledgement of a message to its readings being stored (visible to queries), per message written by this process.', [], LATENCY_BUCKETS),
    lineProtocolStringFields: registry.counter('hrs_line_protocol_string_fields_total', 'String fields in InfluxDB line-protocol writes (/write, /api/v2/write): not readings, skipped (Home Assistant sends attributes as strings).'),
    lineProtocolRejectedLines: registry.counter('hrs_line_protocol_rejected_lines_total', 'Line-protocol lines refused (grammar, or a timestamp out of range); the rest of their bodies were stored.'),
    mqttPublishes: registry.counter('hrs_mqtt_publishes_total', 'Publishes from devices over MQTT, by QoS and outcome (stored; refused: a bad payload; unavailable: not acknowledged, the device was disconnected to send again).', ['qos', 'outcome']),
    mqttRefusals: registry.counter('hrs_mqtt_refusals_total', 'What the MQTT listener refused, by reason (a bad or revoked key, a personal key, a topic or subscription not the device\'s own, rate limit, payload, store unavailable).', ['reason']),
    readingsPagesResent: registry.counter('hrs_readings_pages_resent_total', 'JSON pages of buckets sent again as they were sent before (the same page of the same question, made from the same kept rows), rather than made anew.'),
    readingsSharedReads: registry.counter('hrs_readings_shared_reads_total', 'Readings requests answered from a read another identical request (same account, question and page position) already had in flight, instead of a read of their own.'),
    readingsBucketRows: registry.counter('hrs_readings_bucket_rows_total', 'Bucket rows of readings JSON pages, by where they came from: the store, or buckets kept from an earlier read (ingest/kept-buckets.ts).', ['source']),
    readingsLatest: registry.counter('hrs_readings_latest_total', 'Latest-readings answers, by where they came from: each series\' newest reading kept in the shared store as it was written (QuestDB; ingest/kept-latest.ts), or the store.', ['source']),
    readingsCsvCollections: registry.histogram('hrs_readings_csv_collections_seconds', 'Garbage collections readings CSV files asked for between their steps (ingest/query.ts collectGarbage), by kind (full, young): the whole process stops for each, every request waiting.', ['kind'], LATENCY_BUCKETS),
    readingsHeavyYields: registry.histogram('hrs_readings_heavy_yield_seconds', 'How long heavy readings work (a CSV export\'s steps and the garbage collections its file asks for, heavy pages) waited for the light requests in flight in this process to finish before starting (ingest/foreground.ts; 0 when none were).', [], LATENCY_BUCKETS),
    readingsCsvBroken: registry.counter('hrs_readings_csv_broken_total', 'Readings CSV files that broke off after their status line (the store failed, a deadline passed): ended without the chunked terminator, so the client sees a transfer error.'),
    eventLoopLag: registry.histogram('hrs_event_loop_lag_seconds', `How late a timer due every ${LAG_SAMPLE_MS} ms fired in this process (watchEventLoop): how long work ready to run (a request just read, a store's answer) waited behind the work in front of it.`, [], LATENCY_BUCKETS),
    webhookAttempts: registry.counter('hrs_webhook_attempts_total', 'Webhook delivery attempts made by this process, by outcome.', ['outcome']),
  }
}

export type Metrics = ReturnType<typeof createMetrics>

/**
 * Samples how late this process's event loop runs a timer (hrs_event_loop_lag_seconds): the wait every request and
 * every store answer shares, whatever its route. Issue 57's dense site answered a room's latest values in 18 ms at p50
 * and 328 ms at p99 while Postgres and Redis were nearly idle; this is where such a wait shows. Returns what stops it.
 */
export function watchEventLoop(metrics: Metrics): () => void {
  const lag = metrics.eventLoopLag.series([])
  let due = performance.now() + LAG_SAMPLE_MS
  const timer = setInterval(() => {
    const now = performance.now()
    lag.observe(Math.max(0, now - due) / 1000)
    due = now + LAG_SAMPLE_MS
  }, LAG_SAMPLE_MS)
  timer.unref()
  return () => clearInterval(timer)
}

/** The route a request is counted under: its template, so ids do not make a series each. */
export function routeLabel(route: string | undefined): string {
  return route || 'unmatched'
}
