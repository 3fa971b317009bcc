// The durable ingest log (INGEST_LOG): NATS JetStream between the ingest routes and the readings store.
//
// The batcher's group commit goes to the log instead of the store (producer.ts): a batch is acknowledged to its
// devices once JetStream has stored it, so ingest stays available while the store restarts, compacts or is slow.
// Writers (writer.ts) drain the log into the readings store through the store modules, in every server process
// and in `npm run writer`, any number at once: they share one durable pull consumer, so JetStream spreads the
// messages between them and gives a message whose writer died to another. A message is acknowledged to JetStream
// only after the store has its readings; redelivery is harmless, as readings are unique on (device, channel, ts).
//
// What an acknowledgement guarantees is the stream's: with R1, the message is written to the server's disk, which
// JetStream fsyncs every 2 minutes by default (`sync_interval`; a single node that must survive power loss needs
// `sync_interval: always`); with R3 in a cluster, a majority of the three nodes has it, so the loss of one node
// loses nothing.
//
// Lanes (INGEST_LOG_LANES, issue 60): with R3, a stream whose leader dies or is cut off takes no appends until the
// other two elect a new one, which JetStream does in 4 to 7 s (its election timeouts are fixed in the server). With
// several lanes, the log is that many streams, `<stream>` then `<stream>_1`, `<stream>_2`…, whose leaders are kept on
// different nodes (spreadLeaders): the producer appends to a lane that answers (producer.ts), and the writers
// consume every lane. Each lane publishes through a connection of its own, made to a different server first, so a
// stopped (not crashed) server, whose connections hang rather than close, holds up only the lanes that go through
// it. One lane (the default) is today's single stream on the one shared connection, at today's cost.
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { AckPolicy, DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream'
import type { IngestLogConfig } from '../../src/config.ts'
import type { Logger } from '../../src/log.ts'
import { WRITER_CONSUMER } from './consumer.ts'

const NANOS_PER_SECOND = 1_000_000_000
/** A lane whose append failed is asked for its stream's state this often until its leader answers again. */
const LANE_PROBE_MS = 250
/** A probe may take this long: an answer, however slow, says the lane has a leader that can be reached. */
const LANE_PROBE_TIMEOUT_MS = 1_000
/** How often, at random within this range, a process checks where the lanes' leaders are. */
const SPREAD_CHECK_MS = [5_000, 15_000] as const
/**
 * Pings on every connection: a server that is stopped (or cut off) rather than dead leaves its connections open and
 * silent, and with the client's default (2 minutes, two missed) they hung for minutes; this notices within 3 to 5 s.
 */
const PING_INTERVAL_MS = 1_500

/** One stream of the log, and the connection the producer appends to it through. */
export interface IngestLogLane {
  readonly index: number
  readonly stream: string
  /** Its subjects are `<subjectPrefix>.<account id>`. */
  readonly subjectPrefix: string
  readonly js: JetStreamClient
  /** False from a failed append until its stream's leader answers again through the lane's connection. */
  readonly up: boolean
  /** The producer reports a failed append: the lane is skipped (tried last) until a probe finds it answering. */
  failed(error: unknown): void
}

export interface IngestLogConnection {
  readonly config: IngestLogConfig
  readonly nc: NatsConnection
  readonly js: JetStreamClient
  readonly jsm: JetStreamManager
  /** The lanes (one, `config.stream`, unless INGEST_LOG_LANES says more). */
  readonly lanes: readonly IngestLogLane[]
  /** Whether the connection to NATS is up right now (it reconnects by itself). */
  connected(): boolean
  /** Whether some lane can take appends now (readiness): connected, and its last append did not fail since. */
  writable(): boolean
  close(): Promise<void>
}

/** Lane `index`'s stream and subject prefix: lane 0 is the stream as configured, so one lane is today's log. */
export function laneNames(config: Pick<IngestLogConfig, 'stream' | 'subjectPrefix'>, index: number): { stream: string; subjectPrefix: string } {
  return index === 0 ? { stream: config.stream, subjectPrefix: config.subjectPrefix } : { stream: `${config.stream}_${index}`, subjectPrefix: `${config.subjectPrefix}_${index}` }
}

/**
 * Connects to the NATS servers and creates the stream and the writers' consumer, or checks and updates them to the
 * configured limits. Fails the start when no server answers: the ingest routes cannot acknowledge without the log.
 */
export async function openIngestLog(config: IngestLogConfig, log: Logger): Promise<IngestLogConnection> {
  const laneCount = config.lanes ?? 1
  const nc = await connectTo(config.servers, `hrs ${process.pid}`, log)
  const jsm = await untilJetStreamAnswers(() => jetstreamManager(nc, { timeout: 5_000 }), log)
  for (let index = 0; index < laneCount; index++) await ensureLane(jsm, config, index, log)
  const js = jetstream(nc, { timeout: 5_000 })
  let closed = false
  const lanes: Lane[] = []
  for (let index = 0; index < laneCount; index++) {
    // One lane appends through the shared connection, as the log always did; several, each through its own, made to
    // a different server first.
    const laneNc = laneCount === 1 ? nc : await connectTo(rotate(config.servers, index), `hrs ${process.pid} lane ${index}`, log, { noRandomize: true })
    lanes.push(new Lane(index, laneNames(config, index), laneNc, laneCount === 1 ? js : jetstream(laneNc, { timeout: 5_000 }), log, () => closed))
  }
  const spreading = laneCount > 1 && config.replicas > 1 ? keepLeadersSpread(nc, jsm, lanes.map((l) => l.stream), log, () => closed) : undefined
  return {
    config, nc, jsm, js, lanes,
    connected: () => isUp(nc),
    writable: () => lanes.some((lane) => lane.up && isUp(lane.nc)),
    async close() {
      closed = true
      clearTimeout(spreading?.timer)
      for (const lane of lanes) if (lane.nc !== nc && !lane.nc.isClosed()) await lane.nc.drain()
      if (!nc.isClosed()) await nc.drain()
    },
  }
}

/** Connection state, kept from the status events (the client exposes no getter for it). */
const upState = new WeakMap<NatsConnection, boolean>()
const isUp = (nc: NatsConnection) => !nc.isClosed() && upState.get(nc) !== false

async function connectTo(servers: readonly string[], name: string, log: Logger, options: { noRandomize?: boolean } = {}): Promise<NatsConnection> {
  const nc = await connect({
    servers: [...servers], name,
    // Reconnect for ever, quickly: while disconnected, publishes time out and ingest answers 503 (or, with lanes,
    // appends go to another lane).
    maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2_000,
    pingInterval: PING_INTERVAL_MS, maxPingOut: 2, ...options,
  })
  upState.set(nc, true)
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') { upState.set(nc, false); log.warn('ingest log disconnected', { connection: name, server: String((status as { server?: unknown }).server ?? '') }) }
      if (status.type === 'reconnect') { upState.set(nc, true); log.info('ingest log reconnected', { connection: name, server: String((status as { server?: unknown }).server ?? '') }) }
    }
  })()
  return nc
}

const rotate = <T>(list: readonly T[], by: number): T[] => list.map((_, i) => list[(i + by) % list.length]!)

/** Creates a lane's stream and the writers' consumer on it, or checks and updates them to the configured limits. */
async function ensureLane(jsm: JetStreamManager, config: IngestLogConfig, index: number, log: Logger): Promise<void> {
  const lane = laneNames(config, index)
  const name = lane.stream
  const stream = {
    name,
    subjects: [`${lane.subjectPrefix}.>`],
    storage: StorageType.File,
    // Each message is taken by one writer and removed once it has been acknowledged.
    retention: RetentionPolicy.Workqueue,
    // Full (bytes or age): refuse new messages rather than drop old ones the writers have not stored yet.
    discard: DiscardPolicy.New,
    max_bytes: config.maxBytes,
    max_age: config.maxAgeSeconds * NANOS_PER_SECOND,
    num_replicas: config.replicas,
  }
  await untilJetStreamAnswers(async () => {
    try {
      await jsm.streams.info(name)
      await jsm.streams.update(name, stream)
    } catch (error) {
      if (!isNotFound(error)) throw error
      await jsm.streams.add(stream)
    }
  }, log)
  const consumer = {
    durable_name: WRITER_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    ack_wait: config.ackWaitSeconds * NANOS_PER_SECOND,
    // Bounds what the writers hold in memory: past this many unacknowledged messages, JetStream waits.
    max_ack_pending: 20_000,
  }
  await untilJetStreamAnswers(async () => {
    try {
      await jsm.consumers.info(name, WRITER_CONSUMER)
      await jsm.consumers.update(name, WRITER_CONSUMER, consumer)
    } catch (error) {
      if (!isNotFound(error)) throw error
      await jsm.consumers.add(name, consumer)
    }
  }, log)
}

class Lane implements IngestLogLane {
  readonly stream: string
  readonly subjectPrefix: string
  up = true

  constructor(
    readonly index: number, names: { stream: string; subjectPrefix: string },
    readonly nc: NatsConnection, readonly js: JetStreamClient,
    private readonly log: Logger, private readonly closed: () => boolean,
  ) {
    this.stream = names.stream
    this.subjectPrefix = names.subjectPrefix
  }

  failed(error: unknown): void {
    if (!this.up) return
    this.up = false
    this.log.warn('ingest log lane not answering; appending to the others until its leader answers', { lane: this.stream, error: String(error) })
    void this.probeUntilUp()
  }

  /**
   * Asks the lane's stream for its state through the lane's own connection: the stream's leader answers, so an
   * answer naming a leader says both the connection and the leader work.
   */
  private async probeUntilUp(): Promise<void> {
    const downSince = Date.now()
    while (!this.closed()) {
      await Bun.sleep(LANE_PROBE_MS)
      try {
        const answer = await this.nc.request(`$JS.API.STREAM.INFO.${this.stream}`, undefined, { timeout: LANE_PROBE_TIMEOUT_MS })
        const info = answer.json<StreamInfo & { error?: unknown }>()
        if (!info.error && (info.cluster?.leader || !info.cluster?.replicas?.length)) {
          this.up = true
          this.log.info('ingest log lane answering again', { lane: this.stream, leader: info.cluster?.leader ?? '', down_ms: Date.now() - downSince })
          return
        }
      } catch { /* still away */ }
    }
  }
}

/**
 * Keeps the lanes' leaders on different nodes: JetStream elects each stream's leader by itself, and two lanes led
 * from one node would both stop at its loss. Now and then (at random times, so that the processes sharing the log
 * rarely act at once) this looks where the leaders are and, when a node leads more lanes than its share while a
 * node holding a current replica of one of them leads fewer, asks that lane's leader to step down (JetStream then
 * elects another replica, within a second; nats-server 2.9 takes no preferred peer, so it may take a few rounds).
 * A step-down makes the lane's appends fail over for that moment, nothing more.
 */
function keepLeadersSpread(nc: NatsConnection, jsm: JetStreamManager, streams: string[], log: Logger, closed: () => boolean): { timer: ReturnType<typeof setTimeout> | undefined } {
  const state: { timer: ReturnType<typeof setTimeout> | undefined } = { timer: undefined }
  const schedule = (ms: number) => { if (!closed()) state.timer = setTimeout(check, ms) }
  const check = async () => {
    try {
      const stepdown = await laneToStepDown(jsm, streams)
      if (stepdown) {
        log.info('ingest log: lanes led from one node; asking one to elect another leader', { lane: stepdown.stream, leader: stepdown.leader })
        await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stepdown.stream}`, undefined, { timeout: 2_000 })
        // Soon again: the new leader may be on a crowded node too.
        return schedule(2_000 + Math.random() * 2_000)
      }
    } catch (error) {
      log.warn('ingest log: could not check where the lanes are led', { error: String(error) })
    }
    schedule(SPREAD_CHECK_MS[0] + Math.random() * (SPREAD_CHECK_MS[1] - SPREAD_CHECK_MS[0]))
  }
  schedule(500 + Math.random() * 1_500)
  return state
}

/** The lane to step down, if the leaders are not spread: see keepLeadersSpread. */
export async function laneToStepDown(jsm: JetStreamManager, streams: string[]): Promise<{ stream: string; leader: string } | undefined> {
  const infos = await Promise.all(streams.map((name) => jsm.streams.info(name)))
  const leaders = new Map<string, number>()
  const nodes = new Set<string>()
  for (const { cluster } of infos) {
    if (cluster?.leader) { nodes.add(cluster.leader); leaders.set(cluster.leader, (leaders.get(cluster.leader) ?? 0) + 1) }
    for (const peer of cluster?.replicas ?? []) if (peer.current && !peer.offline) nodes.add(peer.name)
  }
  const share = Math.ceil(streams.length / Math.max(1, nodes.size))
  for (const info of infos) {
    const leader = info.cluster?.leader
    if (!leader || (leaders.get(leader) ?? 0) <= share) continue
    const elsewhere = (info.cluster?.replicas ?? []).some((peer) => peer.current && !peer.offline && (leaders.get(peer.name) ?? 0) < share)
    if (elsewhere) return { stream: info.config.name, leader }
  }
  return undefined
}

/**
 * Runs `step`, again while JetStream does not answer yet (a cluster that has just started is still electing its
 * leaders), for up to half a minute.
 */
async function untilJetStreamAnswers<T>(step: () => Promise<T>, log: Logger): Promise<T> {
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      return await step()
    } catch (error) {
      const text = `${(error as Error)?.name} ${(error as Error)?.message}`
      if (Date.now() > deadline || !/timeout|no responders|temporarily unavailable|not current|no suitable peers/i.test(text)) throw error
      log.warn('ingest log: JetStream not answering yet; trying again', { error: text })
      await Bun.sleep(500)
    }
  }
}

function isNotFound(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown; api_error?: { err_code?: number } }
  return e?.api_error?.err_code === 10059 || e?.api_error?.err_code === 10014 || /not found/i.test(String(e?.message ?? ''))
}
