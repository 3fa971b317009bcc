// Who opens a write's transaction: the service that writes. Idempotency (src/http/idempotency.ts) does not open one
// of its own around the service; it hands the service a way to open it that also claims the Idempotency-Key and
// stores the answer inside the same transaction, so a retry can never see the write without its stored answer.
import type { Database } from './client.ts'
import type { Executor } from './prepared.ts'

/** Runs `work` in a database transaction and returns what it returned. */
export type InTransaction<R> = (work: (tx: Executor) => Promise<R>) => Promise<R>

/** A plain transaction on `database`: what a service uses when nothing wraps it. */
export const ownTransaction = <R>(database: Database): InTransaction<R> => (work) => database.db.transaction(work)
