import { randomUUID } from 'node:crypto'
import type { SharedStore } from './interface.ts'

export interface MemoryStore extends SharedStore {
  /** Forgets every value, as a Redis FLUSHALL would (tests use it to prove Postgres backs the guarantees). */
  flush(): void
}

/** The embedded twin: one process, so Maps and direct calls give the same guarantees Redis gives many. */
export function memoryStore(): MemoryStore {
  const windows = new Map<string, { count: number; resetAt: number }>()
  const values = new Map<string, { value: string; expiresAt: number }>()
  /** The groups of claimEntries and the rest: their keys, each group lasting as long as the last key set in it. */
  const groups = new Map<string, { keys: Set<string>; expiresAt: number }>()
  const handlers = new Map<string, Set<(message: string) => void>>()
  const slots = new Map<string, Map<string, number>>()
  let sweepAt = 0
  const live = (key: string, now = Date.now()) => {
    const entry = values.get(key)
    if (entry && entry.expiresAt <= now) { values.delete(key); return undefined }
    return entry
  }
  /** An entry of claimEntries and the rest, as held: `${order} ${tag} ${value}`. */
  const entryOf = (held: string) => {
    const [orderText, tag] = held.split(' ', 2) as [string, string]
    return { order: Number(orderText), orderText, tag, value: held.slice(orderText.length + tag.length + 2) }
  }
  const liveGroup = (group: string, now: number) => {
    const members = groups.get(group)
    if (members && members.expiresAt <= now) { groups.delete(group); return undefined }
    return members?.keys
  }
  const join = (key: string, group: string, now: number, ttlMs: number) => {
    const members = groups.get(group)
    if (members && members.expiresAt > now) { members.keys.add(key); members.expiresAt = now + ttlMs }
    else groups.set(group, { keys: new Set([key]), expiresAt: now + ttlMs })
  }
  return {
    kind: 'memory',
    async hit(key, windowMs) {
      const now = Date.now()
      if (now > sweepAt) {
        // Drop expired entries now and then so idle keys do not accumulate.
        for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k)
        for (const [k, v] of values) if (v.expiresAt <= now) values.delete(k)
        for (const [k, g] of groups) if (g.expiresAt <= now) groups.delete(k)
        sweepAt = now + 60_000
      }
      let w = windows.get(key)
      if (!w || w.resetAt <= now) { w = { count: 0, resetAt: now + windowMs }; windows.set(key, w) }
      w.count++
      return { count: w.count, resetMs: w.resetAt - now }
    },
    async addAll(counts, ttlMs) {
      const now = Date.now()
      return counts.map(({ key, amount }) => {
        let w = windows.get(key)
        if (!w || w.resetAt <= now) { w = { count: 0, resetAt: now + ttlMs }; windows.set(key, w) }
        w.count += amount
        return w.count
      })
    },
    async acquire(key, ttlMs) {
      if (live(key)) return null
      const token = randomUUID()
      values.set(key, { value: token, expiresAt: Date.now() + ttlMs })
      return token
    },
    async release(key, token) {
      if (live(key)?.value === token) values.delete(key)
    },
    async takeSlot(key, limit, ttlMs) {
      const now = Date.now()
      const held = slots.get(key) ?? new Map<string, number>()
      for (const [token, expiresAt] of held) if (expiresAt <= now) held.delete(token)
      if (held.size >= limit) return null
      const token = randomUUID()
      held.set(token, now + ttlMs)
      slots.set(key, held)
      return token
    },
    async giveSlot(key, token) {
      const held = slots.get(key)
      if (!held) return
      held.delete(token)
      if (!held.size) slots.delete(key)
    },
    async get(key) {
      return live(key)?.value ?? null
    },
    async set(key, value, ttlMs) {
      values.set(key, { value, expiresAt: Date.now() + ttlMs })
    },
    async getMany(keys) {
      const now = Date.now()
      return keys.map((key) => live(key, now)?.value ?? null)
    },
    async setMany(keys, value, ttlMs) {
      const expiresAt = Date.now() + ttlMs
      for (const key of keys) values.set(key, { value, expiresAt })
    },
    async claimEntries(entries, claim, keep, ttlMs) {
      const now = Date.now()
      for (const [key, group] of entries) {
        const held = live(key, now)?.value
        if (held !== undefined && entryOf(held).tag === keep) continue
        values.set(key, { value: `-1 ${claim} -`, expiresAt: now + ttlMs })
        join(key, group, now, ttlMs)
      }
    },
    async raiseEntries(entries, ttlMs) {
      const now = Date.now()
      for (const [key, order, value, group, takenFrom] of entries) {
        const members = liveGroup(group, now)
        for (const sibling of members ?? []) {
          if (sibling === key) continue
          const held = live(sibling, now)?.value
          const entry = held === undefined ? undefined : entryOf(held)
          if (entry && !entry.tag.startsWith('?') && (entry.order < takenFrom || entry.order > order)) continue
          values.delete(sibling)
          members!.delete(sibling)
        }
        const held = live(key, now)?.value
        if (held === undefined) continue
        const entry = entryOf(held)
        if (entry.order > order) continue
        values.set(key, { value: `${order} ${entry.tag} ${value}`, expiresAt: now + ttlMs })
        join(key, group, now, ttlMs)
      }
    },
    async settleEntries(entries, claim, tag, ttlMs) {
      const now = Date.now()
      for (const [key, order, value] of entries) {
        const held = live(key, now)?.value
        if (held === undefined) continue
        const entry = entryOf(held)
        if (entry.tag !== claim) continue
        if (order === undefined) values.delete(key)
        else if (entry.order >= order) values.set(key, { value: `${entry.orderText} ${tag} ${entry.value}`, expiresAt: now + ttlMs })
        else values.set(key, { value: `${order} ${tag} ${value}`, expiresAt: now + ttlMs })
      }
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
    flush() { windows.clear(); values.clear(); groups.clear() },
    async close() { handlers.clear(); windows.clear(); values.clear(); groups.clear() },
  }
}
