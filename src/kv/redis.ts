import { randomUUID } from 'node:crypto'
import type { SharedStore } from './interface.ts'

// INCR and PEXPIRE in one script so two processes can never both start a window or lose a count.
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}
`

// Delete only if the value is still our token: never release a lock that expired and passed to another holder.
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`

// A sorted set of slot tokens scored by their expiry, on Redis's own clock (processes' clocks may disagree):
// expired slots are dropped before counting, so a crashed holder frees its slot after the TTL.
const TAKE_SLOT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`

const ADD_SCRIPT = `
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return total
`

// One key at a time within one script: each is compared and set atomically (ARGV: the TTL, whether only keys held
// are set, then order and value per key). The order is the stored value's first word.
const KEEP_NEWEST_SCRIPT = `
local ttl = ARGV[1]
local onlyHeld = ARGV[2] == '1'
for i = 1, #KEYS do
  local order = ARGV[i * 2 + 1]
  local held = redis.call('GET', KEYS[i])
  if (held and tonumber(string.match(held, '^%S+')) <= tonumber(order)) or (not held and not onlyHeld) then
    redis.call('SET', KEYS[i], order .. ' ' .. ARGV[i * 2 + 2], 'PX', ttl)
  end
end
return 0
`

/** The scripts above as commands of the client (defineCommand adds them at run time, so the types say them here). */
interface Scripts {
  hitWindow(key: string, windowMs: number): Promise<[number, number]>
  releaseLock(key: string, token: string): Promise<number>
  takeSlot(key: string, limit: number, ttlMs: number, token: string): Promise<number>
  addCounter(key: string, amount: number, ttlMs: number): unknown
  /** Takes the number of keys first (defined without numberOfKeys), then the keys, the TTL, onlyHeld (1 or 0), order and value per key. */
  keepNewest(keyCount: number, ...args: (string | number)[]): Promise<number>
}

/** Bounds on every Redis call, so a stalled or absent Redis costs a request at most this much (see kv/fallback.ts). */
export interface RedisTimeouts { commandTimeoutMs: number; connectTimeoutMs: number }

export async function redisStore(url: string, prefix: string, timeouts: RedisTimeouts): Promise<SharedStore> {
  // Loaded here, not at the top: a service without REDIS_URL never holds ioredis's modules (45 of them).
  const { default: Redis } = await import('ioredis')
  // No offline queue: while disconnected a command fails at once (and the caller falls back) instead of waiting
  // for a reconnect. The client reconnects by itself in the background, forever.
  const client = new Redis(url, {
    enableOfflineQueue: false, maxRetriesPerRequest: 1,
    commandTimeout: timeouts.commandTimeoutMs, connectTimeout: timeouts.connectTimeoutMs,
  })
  // Pub/sub needs a connection of its own: a subscribed connection can issue no other commands. Its SUBSCRIBE
  // waits for a connection (offline queue, no retry limit), and ioredis subscribes again after every reconnect.
  const subscriber = new Redis(url, { maxRetriesPerRequest: null, connectTimeout: timeouts.connectTimeoutMs })
  // Every script goes by hash (EVALSHA; ioredis sends the text once when Redis answers NOSCRIPT): the rate limit's
  // script runs on every request and reconciliation adds thousands of counters at a time, so the text is not resent.
  client.defineCommand('hitWindow', { numberOfKeys: 1, lua: HIT_SCRIPT })
  client.defineCommand('releaseLock', { numberOfKeys: 1, lua: RELEASE_SCRIPT })
  client.defineCommand('takeSlot', { numberOfKeys: 1, lua: TAKE_SLOT_SCRIPT })
  client.defineCommand('addCounter', { numberOfKeys: 1, lua: ADD_SCRIPT })
  client.defineCommand('keepNewest', { lua: KEEP_NEWEST_SCRIPT })
  const scripts = client as unknown as Scripts
  // Start even when Redis is down: the first command fails and the service runs on its fallback until Redis answers.
  await withTimeout(new Promise<void>((resolve) => client.once('ready', resolve)), timeouts.connectTimeoutMs).catch(() => {})
  const handlers = new Map<string, Set<(message: string) => void>>()
  subscriber.on('message', (channel: string, message: string) => {
    for (const handler of handlers.get(channel) ?? []) handler(message)
  })
  // Errors surface on the commands that fail; without a listener ioredis would print every reconnect attempt.
  client.on('error', () => {})
  subscriber.on('error', () => {})
  return {
    kind: 'redis',
    async hit(key, windowMs) {
      const [count, ttl] = await scripts.hitWindow(prefix + key, windowMs)
      return { count, resetMs: ttl }
    },
    async addAll(counts, ttlMs) {
      if (!counts.length) return []
      const pipeline = client.pipeline() as ReturnType<typeof client.pipeline> & Pick<Scripts, 'addCounter'>
      for (const { key, amount } of counts) pipeline.addCounter(prefix + key, amount, ttlMs)
      const results = (await pipeline.exec()) ?? []
      return results.map(([error, total]) => {
        if (error) throw error
        return total as number
      })
    },
    async acquire(key, ttlMs) {
      const token = randomUUID()
      return (await client.set(prefix + key, token, 'PX', ttlMs, 'NX')) === 'OK' ? token : null
    },
    async release(key, token) {
      await scripts.releaseLock(prefix + key, token)
    },
    async takeSlot(key, limit, ttlMs) {
      const token = randomUUID()
      return (await scripts.takeSlot(prefix + key, limit, ttlMs, token)) === 1 ? token : null
    },
    async giveSlot(key, token) {
      await client.zrem(prefix + key, token)
    },
    get: (key) => client.get(prefix + key),
    async set(key, value, ttlMs) {
      await client.set(prefix + key, value, 'PX', ttlMs)
    },
    async getMany(keys) {
      return keys.length ? client.mget(keys.map((key) => prefix + key)) : []
    },
    async setMany(keys, value, ttlMs) {
      if (!keys.length) return
      const pipeline = client.pipeline()
      for (const key of keys) pipeline.set(prefix + key, value, 'PX', ttlMs)
      for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error
    },
    async keepNewest(entries, ttlMs, onlyHeld = false) {
      if (!entries.length) return
      const args: (string | number)[] = entries.map(([key]) => prefix + key)
      args.push(ttlMs, onlyHeld ? 1 : 0)
      for (const [, order, value] of entries) args.push(order, value)
      await scripts.keepNewest(entries.length, ...args)
    },
    async publish(channel, message) {
      // This process's handlers run before the call returns, so a caller reads its own invalidation at
      // once; they run again when Redis echoes the message back, which is why handlers must be idempotent.
      for (const handler of handlers.get(prefix + channel) ?? []) handler(message)
      await client.publish(prefix + channel, message)
    },
    async subscribe(channel, handler) {
      const full = prefix + channel
      let set = handlers.get(full)
      if (!set) { set = new Set(); handlers.set(full, set) }
      set.add(handler)
      // Registered above either way: when Redis is down the queued SUBSCRIBE goes out once it is back.
      if (set.size === 1) await withTimeout(subscriber.subscribe(full), timeouts.connectTimeoutMs)
    },
    async ping() {
      await client.ping()
    },
    async close() {
      client.disconnect()
      subscriber.disconnect()
    },
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`redis: no answer within ${ms} ms`)), ms) })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
