// Identical readings reads in flight share one read (issue 57): a dashboard is many people asking the same question,
// each every few seconds, and fifty of them asking for one room's last day each ran the same query in the store, a
// heavy slot each, until the account's slots ran out (429). A request whose read is already being made, for the same
// account, question and page position, waits for that read instead of making its own: the store does the work once,
// and every waiter builds its answer from the same rows, so the answers are those of a read of its own (the query
// frontends in front of Grafana, Thanos's and Cortex's, do the same).
//
// A request joins only a read begun at most JOIN_MS before it, still in flight or already answered: its answer holds
// the readings as they were at most that long before it was asked for (a read of its own holds them as they were when
// the store ran it). Answered reads are kept for the rest of that window because dashboards ask one after another, not
// at once: the dense bench's, asking the same 5-minute-grid question per room, shared 0 reads in flight alone. The
// read is the first asker's: its slot, its lane and its deadline; it is cancelled in the store only once every
// waiter's client has gone, and a client that goes away gives up its own wait alone.

/** How long after a read began a request may still join it (see above). */
export const JOIN_MS = 1_000

interface InFlight {
  rows: Promise<unknown>
  began: number
  waiting: number
  /** Aborted once every waiter's client has gone: the read's own "client gone". */
  allGone: AbortController
}

export class SharedReads {
  private readonly inFlight = new Map<string, InFlight>()

  constructor(private readonly onJoin: () => void = () => {}) {}

  /**
   * The rows of `read` under `key` (the account, the question and the page position: whatever decides the rows): a
   * read of the same key begun under JOIN_MS ago, in flight or answered, is joined, otherwise one is started, given a
   * signal that aborts once every waiter's `clientGone` has.
   */
  read<T>(key: string, clientGone: AbortSignal, read: (clientGone: AbortSignal) => Promise<T>): Promise<T> {
    if (clientGone.aborted) return Promise.reject(goneError(clientGone))
    let entry = this.inFlight.get(key)
    if (entry && Date.now() - entry.began <= JOIN_MS) this.onJoin()
    else {
      const started: InFlight = { rows: undefined as unknown as Promise<unknown>, began: Date.now(), waiting: 0, allGone: new AbortController() }
      started.rows = read(started.allGone.signal)
      // Answered, it is kept until JOIN_MS after it began; failed, it is joined no more (the next asker reads again).
      // Its failure is each waiter's, never an unhandled one.
      const forget = () => { if (this.inFlight.get(key) === started) this.inFlight.delete(key) }
      started.rows.then(() => { setTimeout(forget, Math.max(0, started.began + JOIN_MS - Date.now())).unref?.() }, forget)
      this.inFlight.set(key, (entry = started))
    }
    const joined = entry
    joined.waiting++
    return new Promise<T>((resolve, reject) => {
      let waiting = true
      const stopWaiting = () => {
        if (!waiting) return false
        waiting = false
        clientGone.removeEventListener('abort', gone)
        joined.waiting--
        return true
      }
      const gone = () => {
        if (!stopWaiting()) return
        if (joined.waiting === 0) {
          // Nobody wants it now: cancelled in the store, and a later asker starts afresh.
          if (this.inFlight.get(key) === joined) this.inFlight.delete(key)
          joined.allGone.abort(goneError(clientGone))
        }
        reject(goneError(clientGone))
      }
      clientGone.addEventListener('abort', gone, { once: true })
      joined.rows.then((rows) => { if (stopWaiting()) resolve(rows as T) }, (error) => { if (stopWaiting()) reject(error) })
    })
  }
}

/** Why a waiter stopped waiting: its signal's reason, or (Bun leaves a request's reason empty) an AbortError saying so. */
const goneError = (signal: AbortSignal): unknown => signal.reason ?? new DOMException('the client went away', 'AbortError')
