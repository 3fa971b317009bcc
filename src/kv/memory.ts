import type { SharedStore } from './interface.ts'

/** The embedded twin: one process, so a Map and direct calls give the same guarantees Redis gives many. */
export function memoryStore(): SharedStore {
  const windows = new Map<string, { count: number; resetAt: number }>()
  const handlers = new Map<string, Set<(message: string) => void>>()
  let sweepAt = 0
  return {
    kind: 'memory',
    async hit(key, windowMs) {
      const now = Date.now()
      if (now > sweepAt) {
        // Drop expired windows now and then so idle keys do not accumulate.
        for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k)
        sweepAt = now + 60_000
      }
      let w = windows.get(key)
      if (!w || w.resetAt <= now) { w = { count: 0, resetAt: now + windowMs }; windows.set(key, w) }
      w.count++
      return { count: w.count, resetMs: w.resetAt - now }
    },
    async publish(channel, message) {
      for (const handler of handlers.get(channel) ?? []) handler(message)
    },
    async subscribe(channel, handler) {
      let set = handlers.get(channel)
      if (!set) { set = new Set(); handlers.set(channel, set) }
      set.add(handler)
    },
    async ping() {},
    async close() { handlers.clear(); windows.clear() },
  }
}
