// The account events (the outbox webhooks deliver from) for the events stream: one query a second per process, for
// every account with a stream open here, whatever the number of streams; none while no stream is open. Every
// process reads the same table, so an event written by any process reaches the streams held by all of them.
//
// Each poll reads the last RECENT_MS of events again: an event's id is made before its transaction commits, so a
// transaction that commits late shows an id older than events already seen. Each subscriber drops what it was sent.
import { and, asc, gt, inArray } from 'drizzle-orm'
import type { Database } from '../../db/client.ts'
import { outboxEvents } from '../../db/schema/index.ts'
import { idAt } from '../ids.ts'
import type { Logger } from '../log.ts'

export interface StoredEvent { id: string; payload: string }

const POLL_MS = 1_000
/** How far back each poll looks: a change's transaction committing later than this after its event id was made is missed live. */
const RECENT_MS = 10_000
/** Rows one poll reads at most (per process): past it, the next poll goes on from the last one read. */
const POLL_ROWS = 1_000

/** The smallest event id made at `time` or later (ids sort by time: src/ids.ts). */
export const eventIdFloor = (time: number) => idAt('event', time).slice(0, 'evt_'.length + 10)

export class EventsFeed {
  private readonly subscribers = new Map<string, Set<(events: StoredEvent[]) => void>>()
  private timer: ReturnType<typeof setTimeout> | undefined
  /** The last id read, when a poll hit POLL_ROWS: the next one continues from it. */
  private continueAfter: string | undefined

  constructor(private readonly deps: { database: Database; log: Pick<Logger, 'warn'> }) {}

  subscribe(accountId: string, deliver: (events: StoredEvent[]) => void): () => void {
    let set = this.subscribers.get(accountId)
    if (!set) this.subscribers.set(accountId, (set = new Set()))
    set.add(deliver)
    this.schedule()
    return () => {
      set.delete(deliver)
      if (!set.size && this.subscribers.get(accountId) === set) this.subscribers.delete(accountId)
    }
  }

  /** The account's events after `afterId`, oldest first, at most `limit` (a resumed stream's replay). */
  async after(accountId: string, afterId: string, limit: number): Promise<StoredEvent[]> {
    return this.deps.database.db.select({ id: outboxEvents.id, payload: outboxEvents.payload }).from(outboxEvents)
      .where(and(inArray(outboxEvents.account_id, [accountId]), gt(outboxEvents.id, afterId)))
      .orderBy(asc(outboxEvents.id)).limit(limit)
  }

  private schedule() {
    if (this.timer || !this.subscribers.size) return
    this.timer = setTimeout(() => void this.poll(), POLL_MS)
    this.timer.unref?.()
  }

  private async poll() {
    const accounts = [...this.subscribers.keys()]
    try {
      const since = this.continueAfter ?? eventIdFloor(Date.now() - RECENT_MS)
      const rows = await this.deps.database.db.select({ id: outboxEvents.id, account: outboxEvents.account_id, payload: outboxEvents.payload }).from(outboxEvents)
        .where(and(inArray(outboxEvents.account_id, accounts), gt(outboxEvents.id, since)))
        .orderBy(asc(outboxEvents.id)).limit(POLL_ROWS)
      this.continueAfter = rows.length === POLL_ROWS ? rows[rows.length - 1]!.id : undefined
      const byAccount = new Map<string, StoredEvent[]>()
      for (const row of rows) {
        let list = byAccount.get(row.account)
        if (!list) byAccount.set(row.account, (list = []))
        list.push({ id: row.id, payload: row.payload })
      }
      for (const [account, events] of byAccount) for (const deliver of this.subscribers.get(account) ?? []) deliver(events)
    } catch (error) {
      this.deps.log.warn('events stream: poll failed; trying again', { error: String(error) })
    } finally {
      this.timer = undefined
      this.schedule()
    }
  }
}
