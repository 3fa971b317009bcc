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
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { AckPolicy, DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream'
import type { IngestLogConfig } from '../../src/config.ts'
import type { Logger } from '../../src/log.ts'
import { WRITER_CONSUMER } from './consumer.ts'

const NANOS_PER_SECOND = 1_000_000_000

export interface IngestLogConnection {
  readonly config: IngestLogConfig
  readonly nc: NatsConnection
  readonly js: JetStreamClient
  readonly jsm: JetStreamManager
  /** Whether the connection to NATS is up right now (it reconnects by itself). */
  connected(): boolean
  close(): Promise<void>
}

/**
 * Connects to the NATS servers and creates the stream and the writers' consumer, or checks and updates them to the
 * configured limits. Fails the start when no server answers: the ingest routes cannot acknowledge without the log.
 */
export async function openIngestLog(config: IngestLogConfig, log: Logger): Promise<IngestLogConnection> {
  const nc = await connect({
    servers: [...config.servers], name: `hrs ${process.pid}`,
    // Reconnect for ever, quickly: while disconnected, publishes time out and ingest answers 503.
    maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2_000,
  })
  let up = true
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') { up = false; log.warn('ingest log disconnected', { server: String((status as { server?: unknown }).server ?? '') }) }
      if (status.type === 'reconnect') { up = true; log.info('ingest log reconnected', { server: String((status as { server?: unknown }).server ?? '') }) }
    }
  })()
  const jsm = await untilJetStreamAnswers(() => jetstreamManager(nc, { timeout: 5_000 }), log)
  const stream = {
    name: config.stream,
    subjects: [`${config.subjectPrefix}.>`],
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
      await jsm.streams.info(config.stream)
      await jsm.streams.update(config.stream, stream)
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
  try {
    await jsm.consumers.info(config.stream, WRITER_CONSUMER)
    await jsm.consumers.update(config.stream, WRITER_CONSUMER, consumer)
  } catch (error) {
    if (!isNotFound(error)) throw error
    await jsm.consumers.add(config.stream, consumer)
  }
  return {
    config, nc, jsm,
    js: jetstream(nc, { timeout: 5_000 }),
    connected: () => up && !nc.isClosed(),
    async close() { if (!nc.isClosed()) await nc.drain() },
  }
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
