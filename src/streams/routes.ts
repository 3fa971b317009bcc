// GET /environment/readings/stream and GET /events/stream: Server-Sent Events (text/event-stream) with resume.
import { Elysia, t } from 'elysia'
import { AGGREGATES, type Aggregate, type BucketPosition, type BucketRow, type IntervalName, type Reading, type RawRow } from '../../ingest/stores/interface.ts'
import { bucketNumber, bucketStart, INTERVALS } from '../../ingest/planner.ts'
import type { Deps } from '../deps.ts'
import { tokenOf } from '../http/checks/authenticate.ts'
import { ApiError } from '../http/errors.ts'
import { op } from '../http/operation.ts'
import { API_PREFIX } from '../http/pipeline.ts'
import { principalMacro } from '../http/request.ts'
import { isId } from '../ids.ts'
import { EventsFeed, eventIdFloor, type StoredEvent } from './events-feed.ts'
import type { ReadingsFilterFields, StreamHolder } from './hub.ts'
import type { Principal } from '../auth/authenticator.ts'
import { SseStream } from './sse.ts'

/** Readings replayed to a resumed stream at most; past it, one `skipped` event says from where to where. */
export const MAX_REPLAY_READINGS = 10_000
/** Events replayed to a resumed events stream at most. */
export const MAX_REPLAY_EVENTS = 1_000
const REPLAY_PAGE = 1_000
/** How long after a bucket's end its event waits for readings still on their way (group commit, the ingest log). */
const BUCKET_SETTLE_MS = 2_000
/** How many buckets back a resumed bucket stream replays at most. */
const MAX_REPLAY_BUCKETS = 60
/** Live readings held while a resumed stream replays, at most (past it the stream is dropped as slow). */
const MAX_HELD = 50_000

/** A reading's event id: its time (epoch ms), device and channel, which identify it (the store keeps one per triple). */
const readingId = (ts: number, deviceId: string, channel: string) => `${ts}:${deviceId}:${channel}`
const parseReadingId = (id: string): [number, string, string] | undefined => {
  const m = /^(\d{1,15}):(dev_[0-9a-z]{1,40}):([A-Za-z0-9_.-]{1,32})$/.exec(id)
  return m ? [Number(m[1]), m[2]!, m[3]!] : undefined
}

const presentReading = (r: Reading | RawRow) => 'deviceId' in r
  ? { ts: new Date(r.ts).toISOString(), device_id: r.deviceId, channel: r.channel, metric: r.metric, environment_id: r.environmentId, value: r.value }
  : { ts: new Date(r.ts).toISOString(), device_id: r.device_id, channel: r.channel, metric: r.metric, environment_id: r.environment_id, value: r.value }

const StreamQuery = t.Object({
  environment_id: t.Optional(t.String({ maxLength: 40 })),
  device_id: t.Optional(t.String({ maxLength: 40 })),
  channel: t.Optional(t.String({ maxLength: 32 })),
  metric: t.Optional(t.String({ maxLength: 50 })),
  interval: t.Optional(t.Union((Object.keys(INTERVALS) as IntervalName[]).map((name) => t.Literal(name)), { description: 'Buckets instead of readings: one `bucket` event per series (device and channel) when each bucket closes, with the aggregates the readings query answers for it (`GET /environment/readings?interval=…&agg=…`). Buckets as the query places them (UTC).' })),
  agg: t.Optional(t.String({ pattern: `^(${AGGREGATES.join('|')})(,(${AGGREGATES.join('|')}))*$`, description: 'With `interval`: comma-separated aggregates (default avg).', examples: ['avg,max'] })),
  last_event_id: t.Optional(t.String({ maxLength: 200, description: 'The same as the `Last-Event-ID` header, for clients that cannot set headers on a first connection; the header wins.', examples: ['1764979200000:dev_01jd0000000000000000000000:t1'] })),
})

const SSE_BODY = { 'text/event-stream': { schema: { type: 'string', description: 'Server-Sent Events (WHATWG HTML §9.2): see the operation description for the events.' } } }
const STREAM_COMMON = `The stream opens with a \`retry:\` line, then sends events as they happen and a comment line (\`: heartbeat\`) every
15 s (\`STREAM_HEARTBEAT_MS\`) so proxies keep it open. **Bounded cost**: an account holds at most 20 streams per server process (\`STREAMS_PER_ACCOUNT\`;
beyond, 429 \`too_many_streams\`); a client that does not read has at most 1 MiB (\`STREAM_BUFFER_BYTES\`) waiting for it, then it is sent one
\`dropped\` event (\`{"reason":"slow_consumer","last_id":…}\`) and the stream ends: reconnect with \`Last-Event-ID\` to resume. The stream also
ends with one last event when the key is revoked (\`revoked\`, at once, on every server process) or the server shuts down (\`shutdown\`:
reconnect, another process takes it). Browsers' \`EventSource\` reconnects by itself and sends \`Last-Event-ID\`; it cannot send headers, so
the console's pages use their session.`

/**
 * Opens an admitted stream for `holder` (429 past the account's limit); `onEnd(cleanup)` adds what runs once when it
 * ends, however it ends (the client gone included).
 */
export function openStream(deps: Pick<Deps, 'streams' | 'config'>, holder: StreamHolder, request: Request) {
  const limits = deps.config.streams
  const cleanups: (() => void)[] = []
  const stream = deps.streams.admit(holder, (onEnd) => new SseStream({
    bufferBytes: limits.bufferBytes, heartbeatMs: limits.heartbeatMs,
    onEnd: () => { onEnd(); for (const cleanup of cleanups) cleanup() },
  }))
  // The client went away: end at once, not at the next write.
  request.signal.addEventListener('abort', () => stream.sse.close(), { once: true })
  return { sse: stream.sse, onEnd: (cleanup: () => void) => { cleanups.push(cleanup) } }
}

/** A reading as a `reading` event, as the readings stream sends it (the console's device page takes the same). */
export const readingEvent = (r: Reading | RawRow) => ({ id: readingId(r.ts, 'deviceId' in r ? r.deviceId : r.device_id, r.channel), event: 'reading', data: presentReading(r) })

export function streamRoutes(deps: Pick<Deps, 'streams' | 'readings' | 'config' | 'database' | 'log'>) {
  const feed = new EventsFeed(deps)
  const { streams: limits } = deps.config

  const open = (request: Request, principal: Principal) => openStream(deps, deps.streams.keyHolder(principal, tokenOf(request)!), request)

  const lastEventId = (request: Request, query: { last_event_id?: string }) => request.headers.get('last-event-id') ?? query.last_event_id

  return new Elysia({ name: 'streams', prefix: API_PREFIX })
    .use(principalMacro)
    .get('/environment/readings/stream', ({ principal, request, query }) => {
      const last = lastEventId(request, query)
      const resumeFrom = last ? parseReadingId(last) : undefined
      if (last && !resumeFrom) throw new ApiError('invalid_parameter', 'Last-Event-ID is not an event id of this stream.', { errors: [{ path: '/header/last-event-id', message: 'must be an id this stream sent (<epoch ms>:<device id>:<channel>)' }] })
      const filter: ReadingsFilterFields = { environmentId: query.environment_id, deviceId: query.device_id, channel: query.channel, metric: query.metric }
      if (query.agg && !query.interval) throw new ApiError('invalid_parameter', 'agg needs an interval.', { errors: [{ path: '/query/agg', message: 'needs interval' }] })
      const { sse, onEnd } = open(request, principal)
      if (query.interval) {
        bucketStream(principal.accountId, filter, query.interval, (query.agg?.split(',') ?? ['avg']) as Aggregate[], resumeFrom, sse, onEnd)
        return sse.response
      }
      const send = (r: Reading | RawRow) => sse.send(readingEvent(r))
      // Live readings are taken from now on; during a replay they wait here, and go out after it, less the replayed ones.
      let held: Reading[] | undefined = resumeFrom ? [] : undefined
      onEnd(deps.streams.subscribe({
        accountId: principal.accountId, filter,
        deliver(readings) {
          if (!held) { for (const r of readings) if (!send(r)) return; return }
          if (held.length + readings.length > MAX_HELD) { sse.send({ event: 'dropped', data: { reason: 'slow_consumer' } }); sse.close(); return }
          held.push(...readings)
        },
      }))
      if (resumeFrom) void replayReadings(principal.accountId, filter, resumeFrom, sse, send).then((replayed) => {
        const waiting = held!
        held = undefined
        for (const r of waiting) if (!replayed.has(readingId(r.ts, r.deviceId, r.channel)) && !send(r)) return
      }, (error) => {
        deps.log.warn('readings stream: replay failed', { error: String(error) })
        sse.close({ event: 'dropped', data: { reason: 'replay_failed', detail: 'The store did not answer the replay; reconnect with the same Last-Event-ID.', last_id: last } })
      })
      return sse.response
    }, {
      principal: true,
      query: StreamQuery,
      response: { 200: t.String() },
      detail: op({
        operationId: 'streamReadings', summary: 'Stream readings as they arrive (Server-Sent Events)', tags: ['Environment'], scopes: ['environment:read'], errors: [429, 503],
        produces: SSE_BODY,
        description: `Every reading of the account accepted after the request (by any server process), filtered as \`GET /environment/readings\` filters
(\`environment_id\`, \`device_id\`, \`channel\`, \`metric\`), one \`reading\` event each: \`data\` is the reading as the readings query shows it
(\`{"ts","device_id","channel","metric","environment_id","value"}\`), \`id\` is \`<epoch ms>:<device id>:<channel>\`, which identifies the reading
(the store keeps one per device, channel and instant). Each reading acknowledged to its device during the stream's life arrives once.

**Resume**: send the last id received as \`Last-Event-ID\` (EventSource does so by itself). The readings stored after it, in reading time, are
sent first (at least once: drop repeats by id), then live ones. The replay reaches back at most 15 minutes (\`STREAM_REPLAY_WINDOW_MS\`) and
${MAX_REPLAY_READINGS.toLocaleString('en-US')} readings; beyond either, one \`skipped\` event (\`{"from","to","detail"}\`) names the span not replayed
(read it with \`GET /environment/readings\`). Ids are reading times, so a reading whose own timestamp is older than the last id received (a
device that sends late, or whose clock lags) and that arrived while the client was away is not replayed. With the ingest log on, readings
are streamed when the log has them and replayed once a writer has stored them (normally within a second).

**Buckets**: with \`interval\` (and \`agg\`, default \`avg\`), one \`bucket\` event per series (device and channel) holding readings, 2 s
after each bucket closes (for readings still on their way), with the values \`GET /environment/readings?interval=…&agg=…\` answers for that
bucket and series (\`{"ts","device_id","channel","metric","environment_id", aggregates…}\`, \`ts\` the bucket start); \`id\` is
\`<bucket start ms>:<device id>:<channel>\`. A reading accepted later than that for a closed bucket changes what the query answers, not
what was sent. Resumed, the closed buckets after the id's are sent first, from at most ${MAX_REPLAY_BUCKETS} buckets back (beyond, a \`skipped\` event).

${STREAM_COMMON}`,
      }),
    })
    .get('/events/stream', ({ principal, request, query }) => {
      const last = lastEventId(request, query)
      if (last && !isId('event', last)) throw new ApiError('invalid_parameter', 'Last-Event-ID is not an event id.', { errors: [{ path: '/header/last-event-id', message: 'must be an event id (evt_…) this stream sent' }] })
      const { sse, onEnd } = open(request, principal)
      /** What was sent (for the feed's re-reads of recent events), and below what nothing is sent again. */
      const sent = new Set<string>()
      const floor = last ?? eventIdFloor(Date.now())
      const send = (event: StoredEvent) => {
        if (event.id <= floor || sent.has(event.id)) return true
        sent.add(event.id)
        // Only the last few seconds' ids can come again (events-feed.ts): older ones are forgotten.
        if (sent.size > 2 * MAX_REPLAY_EVENTS) { const oldest = [...sent].sort().slice(0, MAX_REPLAY_EVENTS); for (const id of oldest) sent.delete(id) }
        return sse.send({ id: event.id, event: 'event', data: JSON.parse(event.payload) })
      }
      let held: StoredEvent[] | undefined = last ? [] : undefined
      onEnd(feed.subscribe(principal.accountId, (events) => {
        if (held) { held.push(...events); return }
        for (const event of events) if (!send(event)) return
      }))
      if (last) void feed.after(principal.accountId, last, MAX_REPLAY_EVENTS + 1).then((rows) => {
        const more = rows.length > MAX_REPLAY_EVENTS
        for (const row of rows.slice(0, MAX_REPLAY_EVENTS)) if (!send(row)) return
        // Live events cover the last few seconds (events-feed.ts); what lies between is named, not sent.
        if (more) sse.send({ event: 'skipped', data: { after: rows[MAX_REPLAY_EVENTS - 1]!.id, detail: `More than ${MAX_REPLAY_EVENTS} events were missed; those after this id up to the last few seconds are not replayed. Read them with GET /events.` } })
        const waiting = held!
        held = undefined
        for (const event of waiting) if (!send(event)) return
      }, (error) => {
        deps.log.warn('events stream: replay failed', { error: String(error) })
        sse.close({ event: 'dropped', data: { reason: 'replay_failed', detail: 'The database did not answer the replay; reconnect with the same Last-Event-ID.', last_id: last } })
      })
      return sse.response
    }, {
      principal: true,
      query: t.Object({ last_event_id: t.Optional(t.String({ maxLength: 200, description: 'The same as the `Last-Event-ID` header (an event id, `evt_…`), for clients that cannot set headers on a first connection; the header wins.', examples: ['evt_01jd0000000000000000000000'] })) }),
      response: { 200: t.String() },
      detail: op({
        operationId: 'streamEvents', summary: 'Stream the account\'s events as they happen (Server-Sent Events)', tags: ['Webhooks'], scopes: ['webhooks:read'], errors: [429, 503],
        produces: SSE_BODY,
        description: `The events webhooks carry (record changes, alerts opening and closing, devices going silent and back), as they are written by
any server process, one \`event\` event each: \`data\` is the event exactly as \`GET /events/{id}\` shows it, \`id\` its event id. Events reach the
stream within about a second (each server process reads new events once a second for all its streams).

**Resume**: send the last event id received as \`Last-Event-ID\`: the events after it are sent first (up to ${MAX_REPLAY_EVENTS.toLocaleString('en-US')};
beyond, one \`skipped\` event says which span was left out, to read with \`GET /events\`), then live ones. Events are kept 30 days.

${STREAM_COMMON}`,
      }),
    })

  /**
   * Buckets: when each bucket has closed (and BUCKET_SETTLE_MS more, for readings still on their way), one `bucket`
   * event per series holding readings in it, read from the store as the readings query reads it. Resumed, the closed
   * buckets after the id's are sent first, from at most MAX_REPLAY_BUCKETS back.
   */
  function bucketStream(accountId: string, filter: ReadingsFilterFields, interval: IntervalName, aggregates: Aggregate[], resumeFrom: [number, string, string] | undefined, sse: SseStream, onEnd: (cleanup: () => void) => void) {
    let timer: ReturnType<typeof setTimeout> | undefined
    onEnd(() => clearTimeout(timer))
    const spec = { interval, aggregates, groupBy: 'series' as const }
    const present = (row: BucketRow) => ({ ts: new Date(row.ts).toISOString(), device_id: row.device_id, channel: row.channel, metric: row.metric, environment_id: row.environment_id, avg: row.avg, min: row.min, max: row.max, last: row.last, count: row.count })
    /** Sends the buckets of [from, to) after `after`; false once the stream has ended. */
    const sendBuckets = async (from: number, to: number, after?: BucketPosition): Promise<boolean> => {
      const signal = AbortSignal.timeout(deps.config.readingsQueries.timeoutMs)
      for (;;) {
        const rows = await deps.readings.buckets({ accountId, ...filter, from, to }, spec, REPLAY_PAGE, after, 0, signal)
        for (const row of rows) if (!sse.send({ id: readingId(row.ts, row.device_id!, row.channel!), event: 'bucket', data: present(row) })) return false
        if (rows.length < REPLAY_PAGE) return true
        const last = rows[rows.length - 1]!
        after = [last.ts, last.device_id!, last.channel!]
      }
    }
    /** Waits for bucket `n` to close, sends it, and goes on with the next. */
    const closeAt = (n: number) => {
      const due = bucketStart(interval, n + 1) + BUCKET_SETTLE_MS
      timer = setTimeout(() => {
        sendBuckets(bucketStart(interval, n), bucketStart(interval, n + 1)).then((open) => { if (open) closeAt(n + 1) }, (error) => {
          deps.log.warn('readings stream: bucket read failed', { error: String(error) })
          sse.close({ event: 'dropped', data: { reason: 'store_unavailable', detail: 'The store did not answer for a closed bucket; reconnect with Last-Event-ID to resume.' } })
        })
      }, Math.max(0, due - Date.now()))
      timer.unref?.()
    }
    const now = Date.now()
    const current = bucketNumber(interval, now - BUCKET_SETTLE_MS)
    if (!resumeFrom) return closeAt(current)
    // Closed buckets after the id's: [its bucket's start, the current bucket's start), from at most MAX_REPLAY_BUCKETS back.
    const oldest = bucketStart(interval, current - MAX_REPLAY_BUCKETS)
    const resumeBucket = bucketStart(interval, bucketNumber(interval, resumeFrom[0]))
    if (resumeBucket < oldest) sse.send({ event: 'skipped', data: { from: new Date(resumeBucket).toISOString(), to: new Date(oldest).toISOString(), detail: `Buckets more than ${MAX_REPLAY_BUCKETS} intervals back are not replayed; read them with GET /environment/readings.` } })
    const from = Math.max(resumeBucket, oldest)
    void sendBuckets(from, bucketStart(interval, current), resumeBucket >= oldest ? [resumeFrom[0], resumeFrom[1], resumeFrom[2]] : undefined).then((open) => { if (open) closeAt(current) }, (error) => {
      deps.log.warn('readings stream: bucket replay failed', { error: String(error) })
      sse.close({ event: 'dropped', data: { reason: 'replay_failed', detail: 'The store did not answer the replay; reconnect with the same Last-Event-ID.' } })
    })
  }

  /**
   * The account's stored readings after `from` (its keyset position), oldest first, within the replay window and
   * MAX_REPLAY_READINGS; a `skipped` event names what lies beyond either. Returns the ids it sent.
   */
  async function replayReadings(accountId: string, filter: ReadingsFilterFields, from: [number, string, string], sse: SseStream, send: (r: RawRow) => boolean): Promise<Set<string>> {
    const replayed = new Set<string>()
    const now = Date.now()
    const windowStart = now - limits.replayWindowMs
    let after: [number, string, string] | undefined = from
    if (from[0] < windowStart) {
      sse.send({ event: 'skipped', data: { from: new Date(from[0]).toISOString(), to: new Date(windowStart).toISOString(), detail: `Readings older than the replay window (${Math.round(limits.replayWindowMs / 1000)} s) are not replayed; read them with GET /environment/readings.` } })
      after = undefined
    }
    // Up to a day ahead: devices' clocks may run ahead of ours within what ingest accepts.
    const range = { accountId, ...filter, from: after ? after[0] : windowStart, to: now + 86_400_000 }
    const signal = AbortSignal.timeout(deps.config.readingsQueries.timeoutMs)
    while (replayed.size < MAX_REPLAY_READINGS && !sse.closed) {
      const rows = await deps.readings.raw(range, Math.min(REPLAY_PAGE, MAX_REPLAY_READINGS - replayed.size), after, 0, signal)
      for (const row of rows) {
        replayed.add(readingId(row.ts, row.device_id, row.channel))
        if (!send(row)) return replayed
      }
      if (rows.length < REPLAY_PAGE) return replayed
      const lastRow = rows[rows.length - 1]!
      after = [lastRow.ts, lastRow.device_id, lastRow.channel]
    }
    if (after && !sse.closed) sse.send({ event: 'skipped', data: { from: new Date(after[0]).toISOString(), to: new Date(now).toISOString(), detail: `More than ${MAX_REPLAY_READINGS} readings were missed; the rest of this span is not replayed. Read it with GET /environment/readings.` } })
    return replayed
  }
}
