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

// SharedStore's entries (claimEntries, raiseEntries, settleEntries), one script for the three: ARGV[1] says which,
// ARGV[2] is the TTL, then each's arguments (below). Each key is read and set within the script, so atomically. An
// entry is held as "order tag value"; orders are written as given (Lua would print a large number in exponent
// form). A group is a set of keys.
const ENTRIES_SCRIPT = `
local mode, ttl = ARGV[1], ARGV[2]
local function parse(held) return string.match(held, '^(%S+) (%S+) (.*)$') end
local function join(key, group)
  redis.call('SADD', group, key)
  redis.call('PEXPIRE', group, ttl)
end
if mode == 'claim' then
  -- ARGV: claim, keep, then each key's group.
  local claim, keep = ARGV[3], ARGV[4]
  for i = 1, #KEYS do
    local held = redis.call('GET', KEYS[i])
    local tag = nil
    if held then
      local _, t = parse(held)
      tag = t
    end
    if tag ~= keep then
      redis.call('SET', KEYS[i], '-1 ' .. claim .. ' -', 'PX', ttl)
      join(KEYS[i], ARGV[i + 4])
    end
  end
elseif mode == 'raise' then
  -- ARGV: each key's order, value, group and takenFrom.
  for i = 1, #KEYS do
    local key, order, value, group = KEYS[i], ARGV[i * 4 - 1], ARGV[i * 4], ARGV[i * 4 + 1]
    local from, to = tonumber(ARGV[i * 4 + 2]), tonumber(order)
    for _, sibling in ipairs(redis.call('SMEMBERS', group)) do
      if sibling ~= key then
        local held = redis.call('GET', sibling)
        local keep = false
        if held then
          local at, tag = parse(held)
          at = tonumber(at)
          keep = string.sub(tag, 1, 1) ~= '?' and (at < from or at > to)
        end
        if not keep then
          redis.call('DEL', sibling)
          redis.call('SREM', group, sibling)
        end
      end
    end
    local held = redis.call('GET', key)
    if held then
      local at, tag = parse(held)
      if tonumber(at) <= to then
        redis.call('SET', key, order .. ' ' .. tag .. ' ' .. value, 'PX', ttl)
        join(key, group)
      end
    end
  end
else
  -- settle. ARGV: claim, tag, then each key's order ('' for none) and value.
  local claim, tag = ARGV[3], ARGV[4]
  for i = 1, #KEYS do
    local key, order, value = KEYS[i], ARGV[i * 2 + 3], ARGV[i * 2 + 4]
    local held = redis.call('GET', key)
    if held then
      local at, heldTag, heldValue = parse(held)
      if heldTag == claim then
        if order == '' then redis.call('DEL', key)
        elseif tonumber(at) >= tonumber(order) then redis.call('SET', key, at .. ' ' .. tag .. ' ' .. heldValue, 'PX', ttl)
        else redis.call('SET', key, order .. ' ' .. tag .. ' ' .. value, 'PX', ttl) end
      end
    end
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
  /** Takes the number of keys first (defined without numberOfKeys), then the keys, then ARGV as ENTRIES_SCRIPT says. */
  entries(keyCount: number, ...args: (string | number)[]): Promise<number>
}

/** Bounds on every Redis call, so a stalled or absent Redis costs a request at most this much (see kv/fallback.ts). */
export interface RedisTimeouts { commandTimeoutMs: number; connectTimeoutMs: number }

export async function redisStore(url: string, prefix: string, timeouts: RedisTimeouts): Promise<SharedStore> {
  // Loaded here, not at the top: a service without REDIS_URL never holds ioredis's modules (45 of them).
  const { default: Redis } = await import('ioredis')
  // No offline queue: while disconnected a command fails at once (and the caller falls back) instead of waiting
  // for a reconnect. The client reconnects by itself in the background, forever.
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: timeouts.connectTimeoutMs })
  // Every command (scripts and pipelines' too) under a deadline of ours rather than ioredis's commandTimeout (see armDeadline).
  const send = client.sendCommand.bind(client)
  client.sendCommand = ((command: PendingCommand, stream?: unknown) => {
    armDeadline(command, timeouts.commandTimeoutMs)
    return (send as (command: PendingCommand, stream?: unknown) => unknown)(command, stream)
  }) as unknown as typeof client.sendCommand
  // Pub/sub needs a connection of its own: a subscribed connection can issue no other commands. Its SUBSCRIBE
  // waits for a connection (offline queue, no retry limit), and ioredis subscribes again after every reconnect.
  const subscriber = new Redis(url, { maxRetriesPerRequest: null, connectTimeout: timeouts.connectTimeoutMs })
  // Every script goes by hash (EVALSHA; ioredis sends the text once when Redis answers NOSCRIPT): the rate limit's
  // script runs on every request and reconciliation adds thousands of counters at a time, so the text is not resent.
  client.defineCommand('hitWindow', { numberOfKeys: 1, lua: HIT_SCRIPT })
  client.defineCommand('releaseLock', { numberOfKeys: 1, lua: RELEASE_SCRIPT })
  client.defineCommand('takeSlot', { numberOfKeys: 1, lua: TAKE_SLOT_SCRIPT })
  client.defineCommand('addCounter', { numberOfKeys: 1, lua: ADD_SCRIPT })
  client.defineCommand('entries', { lua: ENTRIES_SCRIPT })
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
    async claimEntries(entries, claim, keep, ttlMs) {
      if (!entries.length) return
      const args: (string | number)[] = entries.map(([key]) => prefix + key)
      args.push('claim', ttlMs, claim, keep)
      for (const [, group] of entries) args.push(prefix + group)
      await scripts.entries(entries.length, ...args)
    },
    async raiseEntries(entries, ttlMs) {
      if (!entries.length) return
      const args: (string | number)[] = entries.map(([key]) => prefix + key)
      args.push('raise', ttlMs)
      for (const [, order, value, group, takenFrom] of entries) args.push(order, value, prefix + group, takenFrom)
      await scripts.entries(entries.length, ...args)
    },
    async settleEntries(entries, claim, tag, ttlMs) {
      if (!entries.length) return
      const args: (string | number)[] = entries.map(([key]) => prefix + key)
      args.push('settle', ttlMs, claim, tag)
      for (const [, order, value] of entries) args.push(order ?? '', value)
      await scripts.entries(entries.length, ...args)
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

/** A command's timer firing this much after its deadline says this process stood still, not that Redis did not answer. */
const STALL_MS = 20

/** What armDeadline needs of an ioredis command. */
interface PendingCommand { readonly isSettled: boolean; reject(error: Error): void }

/**
 * Fails `command` when Redis has not answered within `ms`, as ioredis's commandTimeout does, but not for this
 * process's own stalls. After the event loop stood still past a deadline (a long garbage collection, a large page
 * made), the deadline's timer runs before the reply that came meanwhile is read from the socket: with commandTimeout,
 * 10 of 20 commands that Redis answered at once failed as timed out behind a 300 ms stall over a 100 ms deadline
 * (Bun 1.4.5). Each such failure sends the service to its in-process stand-in (kv/fallback.ts), and the dense bench on
 * QuestDB 9.3.2 lost its kept latest values that way. A timer that fires late lets the loop read its sockets first
 * (a new timer runs after them; setImmediate ran before them and did not help), then fails the command if still unanswered.
 */
function armDeadline(command: PendingCommand, ms: number): void {
  let due = performance.now() + ms
  const check = () => {
    if (command.isSettled) return
    const now = performance.now()
    if (now - due > STALL_MS) {
      due = now
      setTimeout(check, 1)
      return
    }
    command.reject(new Error('Command timed out'))
  }
  setTimeout(check, ms)
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`redis: no answer within ${ms} ms`)), ms) })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
