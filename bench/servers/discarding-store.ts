// A readings store that takes every write and keeps nothing: what the HTTP-layer benches put behind our app, so that
// they measure the request path (pipeline, auth, parse, validate, group commit) without a store's cost. Injected
// through createDeps's `readings` option, as tests do; nothing in src/ knows about it.
import type { ReadingsStore } from '../../ingest/stores/interface.ts'

/** The store, and how many readings and batches it was given. */
export function discardingStore(): { store: ReadingsStore; discarded: { readings: number; batches: number } } {
  const discarded = { readings: 0, batches: 0 }
  const store: ReadingsStore = {
    kind: 'sql',
    rollupLevels: [],
    maintain: async () => ({ dropped: [], created: [] }),
    async write(readings) { discarded.readings += readings.length; discarded.batches++ },
    async raw() { return [] },
    async buckets() { return [] },
    async latest() { return [] },
    async caughtUp() { return true },
    async settling() { return [] },
    async ping() {},
    async close() {},
  }
  return { store, discarded }
}
