// Readings maintenance, in every process that writes to the readings store: partitions made ahead, expired ones
// dropped, readings of an older layout moved (ReadingsStore.maintain). At start, then hourly; at once again while
// a run says there is more to do. Several processes may run it at once: the store makes that safe.
import type { ReadingsRetention } from '../src/config.ts'
import type { Logger } from '../src/log.ts'
import { retentionHorizons } from './planner.ts'
import type { ReadingsStore } from './stores/interface.ts'

const HOURLY_MS = 3_600_000
/** Between runs while a move is under way: room for ingest and queries between its batches. */
const AGAIN_MS = 200
/** After a failed run (the store down): soon, not at once. */
const RETRY_MS = 60_000

export class ReadingsMaintenance {
  private timer: ReturnType<typeof setTimeout> | undefined
  private running: Promise<void> | undefined
  private stopped = false

  constructor(private readonly store: ReadingsStore, private readonly retention: ReadingsRetention, private readonly log: Logger, private readonly now: () => number = Date.now) {}

  start() {
    this.schedule(0)
  }

  /** One run now (tests; the loop calls it too). */
  async runOnce(): Promise<boolean> {
    const now = this.now()
    const report = await this.store.maintain(retentionHorizons(this.retention, now), now)
    if (report.dropped.length || report.created.length || report.moved) {
      this.log.info('readings maintenance', { store: this.store.kind, dropped: report.dropped, created: report.created, moved: report.moved ?? 0, more: report.more ?? false })
    }
    return report.more ?? false
  }

  async stop() {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    await this.running
  }

  private schedule(ms: number) {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .then((more) => this.schedule(more ? AGAIN_MS : HOURLY_MS))
        .catch((error) => {
          this.log.warn('readings maintenance failed', { store: this.store.kind, error: String(error) })
          this.schedule(RETRY_MS)
        })
    }, ms)
    this.timer.unref?.()
  }
}
