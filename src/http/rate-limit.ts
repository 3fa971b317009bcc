// Per-key rate limits (CONTRACT §6). Personal tokens count each request in the shared store (one Redis round
// trip, exact across processes). Device keys sit on the ingest hot path, so they count locally and reconcile
// with the shared store in the background: no round trip per request, at the cost of a bounded overshoot
// (what other processes admitted since the last reconciliation, at most a quarter second of traffic).
// Every other limit (pairing claims per client address, pairing codes per account) counts through exact().
import type { SharedStore } from '../kv/interface.ts'

export interface Hit { count: number; resetMs: number }

const RECONCILE_MS = 250

/** unsynced: counted here, not yet sent; sending: on its way to the shared store; global: every process's total as last read. */
interface LocalWindow { start: number; unsynced: number; sending: number; global: number }

export class RateLimiter {
  private readonly windows = new Map<string, LocalWindow>()
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(private readonly shared: SharedStore) {}

  /** Exact across processes: one shared-store round trip; the window starts at the key's first request. */
  exact(key: string, windowMs: number): Promise<Hit> {
    return this.shared.hit(`rl:${key}`, windowMs)
  }

  /** Local with background reconciliation; windows are aligned to the clock so every process shares them. */
  local(key: string, windowMs: number): Hit {
    const now = Date.now()
    const start = now - (now % windowMs)
    let w = this.windows.get(key)
    if (!w || w.start !== start) { w = { start, unsynced: 0, sending: 0, global: 0 }; this.windows.set(key, w) }
    w.unsynced++
    this.timer ??= setInterval(() => void this.reconcile(windowMs), RECONCILE_MS)
    this.timer.unref?.()
    // What is on its way counts too: until the shared store's total comes back, it is not in `global`.
    return { count: w.global + w.sending + w.unsynced, resetMs: start + windowMs - now }
  }

  /**
   * Pushes local counts to the shared store and learns what every process has admitted in total, for every
   * key in one round trip (a facility may hold thousands of devices, each a key).
   */
  async reconcile(windowMs: number): Promise<void> {
    const now = Date.now()
    const sending: { key: string; amount: number; window: LocalWindow }[] = []
    for (const [key, w] of this.windows) {
      if (w.start + windowMs <= now) { this.windows.delete(key); continue }
      if (w.unsynced === 0) continue
      sending.push({ key: `rlw:${key}:${w.start}`, amount: w.unsynced, window: w })
      w.sending += w.unsynced
      w.unsynced = 0
    }
    if (!sending.length) return
    try {
      const totals = await this.shared.addAll(sending, windowMs)
      sending.forEach(({ amount, window }, i) => { window.global = totals[i]!; window.sending -= amount })
    } catch {
      // The shared store is unreachable: keep counting locally and try again next time. (Should only part of
      // the round trip have landed, those counts are sent twice: the limit errs on the strict side.)
      for (const { amount, window } of sending) { window.sending -= amount; window.unsynced += amount }
    }
  }

  /**
   * Gives one request back to a key's count (a 304 costs the client nothing: it asked whether to download at all).
   * Best effort: a refund the shared store misses leaves the stricter count.
   */
  refund(key: string, kind: 'personal' | 'device', windowMs: number): void {
    if (kind === 'device') {
      const w = this.windows.get(key)
      if (w) w.unsynced--
      return
    }
    this.shared.addAll([{ key: `rl:${key}`, amount: -1 }], windowMs).catch(() => {})
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
  }
}
