// The process's one fan-out for Server-Sent Event streams (src/streams/): every open stream is registered here
// (the per-account limit, revocation, drain), and every reading this process hears of is handed to the streams
// of its account once, whichever process accepted it.
//
// How readings reach every process: with the ingest log on, each process subscribes (core NATS, no consumer) to
// the log's subjects, so it sees every message JetStream stores, its own included; publishing costs ingest
// nothing more. Without the log, the batcher's written batches are delivered here directly and, when the shared
// store is Redis, published on READINGS_CHANNEL once per batch (the batch in the ingest log's binary encoding,
// base64), never once per reading or per subscriber. Each process then fans out once to its own streams.
//
// Publishing costs the ingest path (a 10-reading POST cost 6.7 µs more CPU per request in `bun bench/hot-path-ab.ts`
// when every batch was published), so a batch is published only while some process holds a readings stream: such a
// process says so on LISTENING_CHANNEL at once when its first stream opens and every LISTEN_EVERY_MS while it has
// any (and a minute after its last, so a reconnecting client finds it still heard); the others publish until
// LISTEN_HEARD_MS after the last word. A process that has just started asks (ASK) and publishes every batch for
// LISTEN_STARTUP_MS, until the answers have come. What is left: a process's first stream misses readings other processes wrote in the
// moment (milliseconds, one pub/sub hop) before they heard it.
import { randomUUID } from 'node:crypto'
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node'
import { decodeMessage, encodeBatch } from '../../ingest/log/codec.ts'
import type { Reading } from '../../ingest/stores/interface.ts'
import type { Principal } from '../auth/authenticator.ts'
import type { StreamLimits } from '../config.ts'
import { ApiError } from '../http/errors.ts'
import { AUTH_CHANNEL, LISTENING_CHANNEL, READINGS_CHANNEL } from '../kv/channels.ts'
import type { SharedStore } from '../kv/interface.ts'
import type { Logger } from '../log.ts'
import { hashToken } from '../tokens.ts'
import type { SseEvent, SseStream } from './sse.ts'

/** What a readings stream filters on (as the readings query does). */
export interface ReadingsFilterFields { environmentId?: string; deviceId?: string; channel?: string; metric?: string }

export interface ReadingsSubscriber {
  readonly accountId: string
  readonly filter: ReadingsFilterFields
  /** The readings of this subscriber's account in one delivery (already filtered), in acceptance order. */
  deliver(readings: Reading[]): void
}

/** Who holds a stream: its account, the hash of its key (what revocations name), and whether that key still holds. */
export interface StreamHolder {
  readonly accountId: string
  readonly tokenHash: string
  stillValid(): Promise<boolean>
}

/** An open stream as the hub knows it: whose it is, and how to end it. */
export interface OpenStream {
  readonly holder: StreamHolder
  readonly sse: SseStream
}

export interface StreamHubDeps {
  shared: SharedStore
  authenticator: { verify(token: string): Principal | undefined | Promise<Principal | undefined> }
  config: { streams: StreamLimits }
  log: Pick<Logger, 'warn'>
}

export const matches = (filter: ReadingsFilterFields, r: Reading) =>
  (filter.deviceId === undefined || r.deviceId === filter.deviceId) && (filter.channel === undefined || r.channel === filter.channel)
  && (filter.metric === undefined || r.metric === filter.metric) && (filter.environmentId === undefined || r.environmentId === filter.environmentId)

/** An account's readings subscribers, each under the field it filters on most narrowly (`all`: no filter). */
interface SubscriberIndex {
  size: number
  device: Map<string, Set<ReadingsSubscriber>>
  channel: Map<string, Set<ReadingsSubscriber>>
  environment: Map<string, Set<ReadingsSubscriber>>
  metric: Map<string, Set<ReadingsSubscriber>>
  all: Set<ReadingsSubscriber>
}

const LISTEN_EVERY_MS = 5_000
const LISTEN_HEARD_MS = 15_000
const LISTEN_AFTER_LAST_MS = 60_000
/** A process that has just started publishes every batch this long, while the processes holding streams answer its ASK. */
const LISTEN_STARTUP_MS = 2_000
/** Asks the processes holding readings streams to say so now (a process that has just started). */
const ASK = '?'

export class StreamHub {
  /** Until when some other process is known to hold readings streams (epoch ms). */
  private othersListenUntil = Date.now() + LISTEN_STARTUP_MS
  /** Until when this process tells the others it listens (its streams, and a minute after the last). */
  private listeningUntil = 0
  private listenTimer: ReturnType<typeof setInterval> | undefined
  /** Tells this process's own messages on READINGS_CHANNEL apart: they were delivered here before publishing. */
  private readonly origin = randomUUID()
  private readonly subscribers = new Map<string, SubscriberIndex>()
  private readonly open = new Map<string, Set<OpenStream>>()
  private logSubscription: Subscription | undefined
  private draining = false

  constructor(private readonly deps: StreamHubDeps) {}

  /** Hears revocations (and, without the log, other processes' readings). Call after the authenticator's start. */
  async start(): Promise<void> {
    await this.deps.shared.subscribe(AUTH_CHANNEL, (message) => void this.recheck(message))
    if (this.deps.shared.kind === 'redis') {
      await this.deps.shared.subscribe(READINGS_CHANNEL, (message) => this.fromChannel(message))
      await this.deps.shared.subscribe(LISTENING_CHANNEL, (message) => {
        if (message === ASK) { if (this.subscribers.size) void this.deps.shared.publish(LISTENING_CHANNEL, this.origin).catch(() => {}); return }
        if (message !== this.origin) this.othersListenUntil = Date.now() + LISTEN_HEARD_MS
      })
      // Those holding streams answer at once; until they have (one pub/sub round trip), every batch is published.
      await this.deps.shared.publish(LISTENING_CHANNEL, ASK).catch(() => {})
    }
  }

  /** With the ingest log on: readings come from the log's subjects, for every process alike (publish is then a no-op). */
  listenToLog(nc: NatsConnection, subjectPrefix: string): void {
    this.logSubscription = nc.subscribe(`${subjectPrefix}.>`, {
      callback: (error: Error | null, message: Msg) => {
        if (error) return
        try { this.deliver(decodeMessage(message.data)) } catch (e) { this.deps.log.warn('stream fan-out: log message not understood', { error: String(e) }) }
      },
    })
  }

  /**
   * A batch the batcher has written (without the log). Delivered here at once; published for the other processes
   * only when the shared store is Redis (the in-process store has no others) and some stream exists anywhere is not
   * known here, so it is published whenever Redis is configured: one message per batch.
   */
  publish(readings: readonly Reading[]): void {
    if (this.logSubscription || !readings.length) return
    this.deliver(readings)
    if (this.deps.shared.kind !== 'redis' || Date.now() > this.othersListenUntil) return
    const parts = encodeBatch(readings, '').map((m) => Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength).toString('base64'))
    this.deps.shared.publish(READINGS_CHANNEL, `${this.origin}\t${parts.join('\t')}`).catch((error) => this.deps.log.warn('stream fan-out: publish failed', { error: String(error) }))
  }

  private fromChannel(message: string) {
    const parts = message.split('\t')
    if (parts[0] === this.origin) return
    for (const part of parts.slice(1)) {
      try { this.deliver(decodeMessage(Buffer.from(part, 'base64'))) } catch (e) { this.deps.log.warn('stream fan-out: message not understood', { error: String(e) }) }
    }
  }

  /**
   * Hands each reading to the subscribers whose filter takes it: the account's subscribers are indexed by the one
   * field each filters on most narrowly (device, else channel, else environment, else metric, else none), so a reading
   * costs a few Map lookups however many streams the account holds, not a check per subscriber (1,000 streams each
   * checking every reading cost the bench's load 4× its CPU per reading).
   */
  private deliver(readings: readonly Reading[]) {
    if (!this.subscribers.size) return
    let account: string | undefined
    let index: SubscriberIndex | undefined
    const taken = new Map<ReadingsSubscriber, Reading[]>()
    const offer = (set: Set<ReadingsSubscriber> | undefined, reading: Reading) => {
      if (set) for (const subscriber of set) if (matches(subscriber.filter, reading)) {
        const list = taken.get(subscriber)
        if (list) list.push(reading)
        else taken.set(subscriber, [reading])
      }
    }
    for (const reading of readings) {
      if (reading.accountId !== account) { account = reading.accountId; index = this.subscribers.get(account) }
      if (!index) continue
      offer(index.device.get(reading.deviceId), reading)
      offer(index.channel.get(reading.channel), reading)
      if (reading.environmentId !== null) offer(index.environment.get(reading.environmentId), reading)
      if (reading.metric !== null) offer(index.metric.get(reading.metric), reading)
      offer(index.all, reading)
    }
    for (const [subscriber, list] of taken) subscriber.deliver(list)
  }

  subscribe(subscriber: ReadingsSubscriber): () => void {
    let index = this.subscribers.get(subscriber.accountId)
    if (!index) this.subscribers.set(subscriber.accountId, (index = { size: 0, device: new Map(), channel: new Map(), environment: new Map(), metric: new Map(), all: new Set() }))
    const { deviceId, channel, environmentId, metric } = subscriber.filter
    const [map, key] = deviceId !== undefined ? [index.device, deviceId] : channel !== undefined ? [index.channel, channel]
      : environmentId !== undefined ? [index.environment, environmentId] : metric !== undefined ? [index.metric, metric] : [undefined, '']
    let set = map ? map.get(key) : index.all
    if (!set) map!.set(key, (set = new Set()))
    const held = set
    held.add(subscriber)
    index.size++
    this.listen()
    const account = index
    return () => {
      if (!held.delete(subscriber)) return
      if (map && !held.size) map.delete(key)
      if (--account.size === 0 && this.subscribers.get(subscriber.accountId) === account) this.subscribers.delete(subscriber.accountId)
    }
  }

  /** Tells the other processes this one holds readings streams: now, and every LISTEN_EVERY_MS while it does. */
  private listen() {
    if (this.deps.shared.kind !== 'redis' || this.logSubscription) return
    const say = () => void this.deps.shared.publish(LISTENING_CHANNEL, this.origin).catch(() => {})
    if (!this.listenTimer) {
      say()
      this.listenTimer = setInterval(() => {
        if (this.subscribers.size) this.listeningUntil = Date.now() + LISTEN_AFTER_LAST_MS
        if (Date.now() > this.listeningUntil) { clearInterval(this.listenTimer); this.listenTimer = undefined; return }
        say()
      }, LISTEN_EVERY_MS)
      this.listenTimer.unref?.()
    }
    this.listeningUntil = Date.now() + LISTEN_AFTER_LAST_MS
  }

  /**
   * Admits a new stream of the holder's account, or refuses it: 429 beyond the account's limit on this process,
   * 503 while the process is draining. `make` builds the stream with its end hook already wired to unregister it.
   */
  /** The holder of an API stream: the key it was opened with, checked again (the cache has forgotten it by then). */
  keyHolder(principal: Principal, token: string): StreamHolder {
    return {
      accountId: principal.accountId, tokenHash: hashToken(token),
      stillValid: async () => (await Promise.resolve(this.deps.authenticator.verify(token)).catch(() => principal)) !== undefined,
    }
  }

  admit(holder: StreamHolder, make: (onEnd: () => void) => SseStream): OpenStream {
    if (this.draining) throw new ApiError('service_unavailable', 'This server is shutting down; reconnect (another process will take the stream).', { headers: { 'retry-after': '1' } })
    const limit = this.deps.config.streams.perAccount
    const accountId = holder.accountId
    let set = this.open.get(accountId)
    if ((set?.size ?? 0) >= limit) {
      throw new ApiError('too_many_streams', `This account already holds ${limit} open streams on this server (STREAMS_PER_ACCOUNT). Close one, or share one stream between views.`, { headers: { 'retry-after': '5' } })
    }
    if (!set) this.open.set(accountId, (set = new Set()))
    const account = set
    const stream: OpenStream = {
      holder,
      sse: make(() => {
        account.delete(stream)
        if (!account.size && this.open.get(accountId) === account) this.open.delete(accountId)
      }),
    }
    account.add(stream)
    return stream
  }

  /** Streams open on this process (metrics and tests). */
  get openStreams(): number {
    let n = 0
    for (const set of this.open.values()) n += set.size
    return n
  }

  /**
   * A key or account was invalidated (revoked, deleted, plan changed): every stream it concerns checks its key again
   * (the authenticator forgot it first: it subscribed before us) and ends at once if the key no longer holds.
   */
  private async recheck(message: string) {
    const colon = message.indexOf(':')
    const kind = message.slice(0, colon)
    const value = message.slice(colon + 1)
    for (const set of this.open.values()) {
      for (const stream of set) {
        if (kind === 'key' ? stream.holder.tokenHash !== value : stream.holder.accountId !== value) continue
        if (!(await stream.holder.stillValid())) stream.sse.close({ event: 'revoked', data: { detail: 'The key this stream was opened with was revoked, deleted or expired.' } })
      }
    }
  }

  /** SIGTERM: refuses new streams and ends every open one with a `shutdown` event (clients reconnect elsewhere). */
  drain(): void {
    this.draining = true
    const last: SseEvent = { event: 'shutdown', data: { detail: 'This server is shutting down; reconnect with Last-Event-ID to resume on another.' } }
    for (const set of [...this.open.values()]) for (const stream of [...set]) stream.sse.close(last)
    this.logSubscription?.unsubscribe()
    clearInterval(this.listenTimer)
  }
}
