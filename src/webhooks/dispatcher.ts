// Delivers webhook events (CONTRACT §8): claims due deliveries under row locks (FOR UPDATE SKIP LOCKED) with a
// lease, so several dispatchers never make the same attempt and a crashed one's claims come back when the lease
// runs out; POSTs the signed envelope; records every attempt; retries on the schedule with jitter; 410 disables
// the endpoint at once, running out of attempts disables it with the reason. Runs in every server process and
// alone (`bun run dispatcher`). It never touches the request path: a dead receiver costs its own slots only.
import { sql } from 'drizzle-orm'
import type { Config } from '../config.ts'
import type { Database } from '../../db/client.ts'
import { newId } from '../ids.ts'
import type { Logger } from '../log.ts'
import { signedHeaders } from './sign.ts'
import { checkUrl, pinnedRequest, type Resolver, systemResolver } from './url-guard.ts'

interface Target { url: string; secret: string; previous_secret: string | null; previous_secret_expires_at: Date | string | null }
interface Claimed extends Target { account_id: string; endpoint_id: string; event_id: string; event_type: string; attempts: number; locked_until: Date | string; payload: string }

// Claims, and in the same round trip reads what each attempt needs (the endpoint and the event's exact bytes).
// Raw text for the polling loop; its parameters: $1 lease (ms), $2 free slots, $3 endpoint ids that are at their
// per-endpoint limit in this process (an array), $4 the per-endpoint limit.
const CLAIM = `
with candidates as materialized (
  -- At most $4 per endpoint, oldest first, so one busy endpoint cannot take every free slot. Computed once
  -- (materialized): as a subquery the planner re-ran it for every pending row, quadratic in the backlog.
  select endpoint_id, event_id from (
    select w.endpoint_id, w.event_id, row_number() over (partition by w.endpoint_id order by w.next_attempt_at) as rank
    from webhook_deliveries w join webhook_endpoints e on e.id = w.endpoint_id and e.status = 'enabled'
    where w.status = 'pending' and w.next_attempt_at <= now() and (w.locked_until is null or w.locked_until < now())
      and not (w.endpoint_id = any($3::text[]))
  ) ranked where rank <= $4
),
claimed as (
update webhook_deliveries d set locked_until = now() + $1::int * interval '1 millisecond', attempts = d.attempts + 1
from (
  select dd.endpoint_id, dd.event_id from webhook_deliveries dd
  join candidates using (endpoint_id, event_id)
  -- Claimable is checked again on the row itself: when another dispatcher claimed and committed it after this
  -- statement's snapshot, Postgres re-checks these conditions on the newest version of the locked row (the
  -- candidates were read from the old snapshot and would let the row be claimed twice).
  where dd.status = 'pending' and dd.next_attempt_at <= now() and (dd.locked_until is null or dd.locked_until < now())
  order by dd.next_attempt_at
  limit $2
  for update of dd skip locked
) c
where d.endpoint_id = c.endpoint_id and d.event_id = c.event_id
returning d.account_id, d.endpoint_id, d.event_id, d.event_type, d.attempts, d.locked_until
)
select c.*, e.url, e.secret, e.previous_secret, e.previous_secret_expires_at, o.payload
from claimed c join webhook_endpoints e on e.id = c.endpoint_id join outbox_events o on o.id = c.event_id`

/** postgres.js (under drizzle's settings) hands timestamps back as text, PGlite as Dates. */
const toDate = (value: Date | string) => (value instanceof Date ? value : new Date(value))

export interface Outcome { statusCode: number | null; error: string | null; durationMs: number }

export class Dispatcher {
  private running = false
  private loop: Promise<void> | undefined
  private readonly inFlight = new Map<Promise<void>, { endpointId: string; abort: AbortController }>()
  private wake: (() => void) | undefined

  constructor(
    private readonly database: Database,
    private readonly config: Config,
    private readonly log: Logger,
    private readonly resolve: Resolver = systemResolver,
    private readonly options: {
      /** Extra TLS settings for deliveries (tests trust their own certificate authority here). */
      tls?: { ca?: string }
      /** Told the outcome of every attempt (metrics). */
      onAttempt?: (outcome: 'succeeded' | 'retrying' | 'failed') => void
    } = {},
  ) {}

  start(): void {
    if (this.running) return
    this.running = true
    this.loop = (async () => {
      while (this.running) {
        let claimed = 0
        try { claimed = await this.runOnce() } catch (error) { this.log.warn('webhook dispatch failed', { error: String(error) }) }
        if (claimed === 0 || this.inFlight.size >= this.config.webhookConcurrency) {
          await new Promise<void>((resolve) => { this.wake = resolve; setTimeout(resolve, this.config.webhookPollMs) })
        }
      }
    })()
  }

  /** Claims what is due (within this process's free slots) and starts each attempt; returns how many. */
  async runOnce(): Promise<number> {
    const free = this.config.webhookConcurrency - this.inFlight.size
    if (free <= 0) return 0
    const perEndpoint = new Map<string, number>()
    for (const { endpointId } of this.inFlight.values()) perEndpoint.set(endpointId, (perEndpoint.get(endpointId) ?? 0) + 1)
    const busy = [...perEndpoint].filter(([, n]) => n >= this.config.webhookConcurrencyPerEndpoint).map(([id]) => id)
    // Longer than any attempt can take (the receiver's timeout, plus resolving and recording), so a live
    // dispatcher never loses its claim; short enough that a dead one's claims come back soon.
    const lease = 2 * this.config.webhookTimeoutMs + 1000
    const claimed = await this.database.query<Claimed>(CLAIM, [lease, free, busy, this.config.webhookConcurrencyPerEndpoint])
    for (const delivery of claimed) {
      const count = (perEndpoint.get(delivery.endpoint_id) ?? 0) + 1
      perEndpoint.set(delivery.endpoint_id, count)
      if (count > this.config.webhookConcurrencyPerEndpoint) { await this.release(delivery); continue }
      const abort = new AbortController()
      const attempt: Promise<void> = this.attempt(delivery, abort.signal)
        .catch((error) => this.log.error('webhook attempt failed', { endpoint_id: delivery.endpoint_id, error: String(error) }))
        .finally(() => { this.inFlight.delete(attempt); this.wake?.() })
      this.inFlight.set(attempt, { endpointId: delivery.endpoint_id, abort })
    }
    return claimed.length
  }

  /** Waits for attempts in flight; after `graceMs` aborts the rest and hands their claims back (SIGTERM). */
  async stop(graceMs = 5000): Promise<void> {
    this.running = false
    this.wake?.()
    await this.loop
    const pending = [...this.inFlight.keys()]
    const timer = setTimeout(() => { for (const { abort } of this.inFlight.values()) abort.abort(new Error('dispatcher stopping')) }, graceMs)
    await Promise.allSettled(pending)
    clearTimeout(timer)
  }

  private async release(d: Claimed) {
    await this.database.db.execute(sql`update webhook_deliveries set locked_until = null, attempts = attempts - 1
      where endpoint_id = ${d.endpoint_id} and event_id = ${d.event_id} and locked_until = ${toDate(d.locked_until).toISOString()}::timestamptz`)
  }

  private async attempt(d: Claimed, signal: AbortSignal): Promise<void> {
    const outcome = await this.send(d, d.event_id, d.payload, signal)
    if (signal.aborted && outcome.statusCode === null) { await this.release(d); return }
    await this.record(d, outcome)
  }

  async send(target: Target, eventId: string, payload: string, signal?: AbortSignal): Promise<Outcome> {
    const started = performance.now()
    const done = (statusCode: number | null, error: string | null): Outcome => ({ statusCode, error, durationMs: Math.round(performance.now() - started) })
    // Checked again now, not only when saved: the name may resolve somewhere else today. The connection then goes
    // to the address just checked, never to a second resolution of the name.
    const checked = await checkUrl(target.url, this.config.webhookAllowPrivate, this.resolve)
    if ('problem' in checked) return done(null, `url ${checked.problem}`)
    const pinned = pinnedRequest(checked)
    const secrets = [target.secret]
    if (target.previous_secret && target.previous_secret_expires_at && toDate(target.previous_secret_expires_at) > new Date()) secrets.push(target.previous_secret)
    const timeout = AbortSignal.timeout(this.config.webhookTimeoutMs)
    try {
      const response = await fetch(pinned.url, {
        method: 'POST',
        headers: { host: pinned.host, 'content-type': 'application/json', 'user-agent': 'husbandry-webhooks/1.0', ...signedHeaders(secrets, eventId, Math.floor(Date.now() / 1000), payload) },
        body: payload,
        tls: { ...this.options.tls, serverName: pinned.serverName },
        // A redirect could lead anywhere, including inside our network: it counts as a failure.
        redirect: 'manual',
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      })
      await response.body?.cancel().catch(() => {})
      return done(response.status, response.status >= 200 && response.status < 300 ? null : `receiver answered ${response.status}`)
    } catch (error) {
      return done(null, timeout.aborted ? `no answer within ${this.config.webhookTimeoutMs} ms` : `could not deliver: ${(error as Error).message}`)
    }
  }

  private async record(d: Claimed, outcome: Outcome): Promise<void> {
    const ok = outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300
    const gone = outcome.statusCode === 410
    const schedule = this.config.webhookRetrySchedule
    const exhausted = !ok && d.attempts > schedule.length
    // ±20% jitter keeps retries of many deliveries from arriving together.
    const delayMs = ok || gone || exhausted ? 0 : schedule[d.attempts - 1]! * 1000 * (0.8 + Math.random() * 0.4)
    const status = ok ? 'succeeded' : gone || exhausted ? 'failed' : 'pending'
    this.options.onAttempt?.(status === 'pending' ? 'retrying' : status)
    const lease = toDate(d.locked_until).toISOString()
    // The attempt is recorded whatever happened; the delivery moves on only while the lease is still ours (if it
    // ran out, another dispatcher owns the delivery now). One statement, one round trip.
    await this.database.db.execute(sql`with attempt as (
        insert into webhook_attempts (id, endpoint_id, event_id, attempted_at, status_code, duration_ms, error)
        values (${newId('attempt')}, ${d.endpoint_id}, ${d.event_id}, now() - ${outcome.durationMs}::int * interval '1 millisecond',
          ${outcome.statusCode}, ${outcome.durationMs}, ${outcome.error})
      )
      update webhook_deliveries set status = ${status}, locked_until = null, last_attempt_at = now(), last_status_code = ${outcome.statusCode},
        last_error = ${outcome.error}, next_attempt_at = now() + ${Math.round(delayMs)}::int * interval '1 millisecond'
      where endpoint_id = ${d.endpoint_id} and event_id = ${d.event_id} and locked_until = ${lease}::timestamptz`)
    if (gone || exhausted) {
      const reason = gone
        ? 'The receiver answered 410 Gone.'
        : `Delivery of ${d.event_type} ${d.event_id} failed ${d.attempts} times over the whole retry schedule; last: ${outcome.error}.`
      await this.database.db.execute(sql`update webhook_endpoints set status = 'disabled', disabled_reason = ${reason}, updated_at = now()
        where id = ${d.endpoint_id} and status = 'enabled'`)
      this.log.warn('webhook endpoint disabled', { endpoint_id: d.endpoint_id, reason })
    }
  }
}
