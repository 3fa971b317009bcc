// Whether each configured backend answers, as /readyz, /status and /metrics report it. Probing on every call made
// those answers take the probe's full 2 s while Postgres was down (issue 20); they now answer at once from the
// last probe, and a stale answer starts the next probe in the background.
import type { Database } from '../../../db/client.ts'
import type { Ingest } from '../../../ingest/index.ts'
import type { SharedStore } from '../../kv/interface.ts'

export type BackendState = 'ok' | 'down'

/** A probe slower than this counts as down. */
const PROBE_TIMEOUT_MS = 2_000
/** An answer older than this is still given, and starts a fresh probe. */
const FRESH_MS = 500

async function probe(ping: () => Promise<void>): Promise<BackendState> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    await Promise.race([ping(), new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timeout')), PROBE_TIMEOUT_MS) })])
    return 'ok'
  } catch {
    return 'down'
  } finally {
    clearTimeout(timer)
  }
}

export class BackendHealth {
  private last: Record<string, BackendState> | undefined
  private probedAt = 0
  private probing: Promise<Record<string, BackendState>> | undefined

  constructor(private readonly backends: {
    database: Pick<Database, 'kind' | 'ping'>
    shared: Pick<SharedStore, 'kind' | 'ping'>
    /** With the ingest log: its connection, and this process's writer (down while its store writes fail or lag). */
    ingest?: Pick<Ingest, 'log' | 'writer'>
    lagBoundMs?: number
  }) {}

  /** The last probe's answer (the first call waits for one); starts a new probe when that answer is stale. */
  async current(): Promise<Record<string, BackendState>> {
    const probed = !this.last ? await this.probe() : this.last
    if (performance.now() - this.probedAt > FRESH_MS) void this.probe()
    // The ingest log's state is known in process, so it is read now rather than probed.
    const { ingest, lagBoundMs = 30_000 } = this.backends
    if (!ingest?.log) return probed
    return {
      ...probed,
      // Ready while some lane takes appends (with one lane: while connected, as it always was).
      ingest_log: ingest.log.writable() ? 'ok' : 'down',
      ...(ingest.writer ? { readings_writer: ingest.writer.state(lagBoundMs) } : {}),
    }
  }

  private probe(): Promise<Record<string, BackendState>> {
    this.probing ??= (async () => {
      const { database, shared } = this.backends
      const [db, kv] = await Promise.all([probe(() => database.ping()), probe(() => shared.ping())])
      this.last = { [database.kind]: db, [shared.kind === 'redis' ? 'redis' : 'in_process_store']: kv }
      this.probedAt = performance.now()
      this.probing = undefined
      return this.last
    })()
    return this.probing
  }
}
