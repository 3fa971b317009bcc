// Devices over MQTT (3.1.1 and 5): an additive transport onto the same ingest service as POST /sensors/readings.
// The broker is aedes (2.0, the maintained Node broker; its 1.x refuses MQTT 5 CONNECTs), fed by node:net and
// node:tls servers. We never route devices' messages to one another: every topic is a device's own, and the only
// messages a device receives are the ones this listener publishes to it (its configuration, its refusals).
//
//   devices/{id}/readings  publish: the body of POST /sensors/readings (JSON)
//   devices/{id}/ping      publish: `t1=27.5&h1=61`, as GET /sensors/ping's query
//   devices/{id}/config    subscribe: the device's channels, retained, republished when they change
//   devices/{id}/errors    subscribe: what was refused, with the HTTP API's codes
//
// QoS 1 (and 2) are acknowledged only once the readings are durable: aedes writes PUBACK after authorizePublish
// calls back, so that callback waits for the group commit (or the ingest log). A store that cannot take them
// disconnects the device without an acknowledgement (MQTT 5: 0x89 Server busy), so its client sends them again.
// aedes handles one packet per connection at a time, so a connection has one publish in flight; devices are many.
//
// A session belongs to the device that made it: the client id a device sends is namespaced by its account and
// device (aedes' client id becomes `{account}/{device}/{client id}`), so another device sending the same client id
// gets a session of its own, never the first one's messages, and never takes the first one's connection over.
//
// Sent again is stored once. Readings are unique on (device, channel, ts), so a publish sent again adds nothing
// when its readings carry their own ts; a reading without ts gets the time the publish was first received, which
// the session remembers by packet id (Receipt) and gives a resend again. QoS 2 is exactly once: a publish whose
// packet id is awaiting PUBREL is acknowledged again without being stored again. A QoS 1/2 resend (DUP=1) whose
// first delivery this process never saw (it went to another node or worker, or before a restart) cannot be told
// apart from a stored one: its readings without ts are refused (reported on the errors topic, code
// `redelivery_without_ts`), those with ts are stored (a second copy adds nothing).
import { createServer as createTcpServer, type Server } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'
import { readFileSync } from 'node:fs'
import { Aedes, type Client, type PublishPacket } from 'aedes'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { Authenticator, Principal } from '../src/auth/authenticator.ts'
import { patiently } from '../src/auth/patience.ts'
import type { Config, MqttConfig } from '../src/config.ts'
import { MAX_BODY_BYTES } from '../src/http/checks/body-limits.ts'
import { rateLimited } from '../src/http/checks/rate-limit.ts'
import { ApiError, type FieldError } from '../src/http/errors.ts'
import { schemaErrors } from '../src/http/field-errors.ts'
import { parseJsonBody } from '../src/http/json-body.ts'
import type { RateLimiter } from '../src/http/rate-limit.ts'
import { AUTH_CHANNEL, DEVICE_CHANNEL } from '../src/kv/channels.ts'
import type { SharedStore } from '../src/kv/interface.ts'
import type { Logger } from '../src/log.ts'
import type { CounterSeries } from '../src/metrics.ts'
import type { Metrics } from '../src/observability.ts'
import { planHasAccess, rateLimitFor } from '../src/plans.ts'
import type { PlatformStatusSource } from '../src/platform.ts'
import { hashToken } from '../src/tokens.ts'
import { IngestUnavailable } from './batcher.ts'
import type { DeviceInfo } from './devices.ts'
import type { Ingest } from './index.ts'
import { MAX_READINGS_PER_BATCH, parseBatch, parsePing, PING_REFUSED, ReadingsBatch, type Parsed, type Rejection } from './parse.ts'

export interface MqttDeps {
  readonly config: Pick<Config, 'host' | 'deviceRateLimitPerMinute' | 'rateLimitPerMinute' | 'rateLimitWindowSeconds'> & { readonly mqtt: MqttConfig }
  readonly authenticator: Pick<Authenticator, 'verify'>
  readonly platform: Pick<PlatformStatusSource, 'current'>
  readonly rateLimiter: Pick<RateLimiter, 'local'>
  readonly shared: Pick<SharedStore, 'subscribe'>
  readonly ingest: Pick<Ingest, 'accept' | 'devices'>
  readonly metrics: Pick<Metrics, 'registry' | 'mqttPublishes' | 'mqttRefusals'>
  readonly log: Logger
}

export interface MqttListener {
  /** The bound ports (a configured 0 becomes the port the system picked). */
  readonly port: number | undefined
  readonly tlsPort: number | undefined
  /** Stops accepting connections, lets publishes being stored finish (and be acknowledged), then closes every client. */
  close(): Promise<void>
}

/** The HTTP API's body limit, plus room for the topic and MQTT's own header. */
const MQTT_MAX_PACKET_BYTES = MAX_BODY_BYTES + 1024

/** MQTT 5 reason codes we send ourselves (aedes sends the rest). */
const SERVER_BUSY = 0x89
const NOT_AUTHORIZED = 0x87
/** MQTT 3.1.1 CONNACK return codes; aedes maps them to MQTT 5's 0x86 and 0x87. */
const BAD_USERNAME_OR_PASSWORD = 4
const CONNECT_NOT_AUTHORIZED = 5
const SERVER_UNAVAILABLE = 3
/**
 * How long a CONNECT waits for its key and device to be read while the database fails to answer, before CONNACK 3:
 * a reconnect storm after a restart queues rather than being refused (src/auth/patience.ts).
 */
const CONNECT_PATIENCE_MS = 10_000
/**
 * Device reads for CONNECTs in flight at once. After a restart every device is read once; a storm's reads wait
 * here rather than in the database pool, where a query no connection takes within a second is cancelled.
 */
const CONNECT_DEVICE_READS = 6

const TOPIC = /^devices\/([^/]+)\/(readings|ping|config|errors)$/
/** The topics devices publish to (their own, checked by authorizePublish before anything is stored). */
const DEVICE_PUBLISH_TOPIC = /^devices\/[^/]+\/(readings|ping)$/

/**
 * The receipts a session keeps (per packet id, most recent first out): a device resends what was in flight when
 * its connection dropped, a few packets at most (aedes takes one publish per connection at a time).
 */
const RECEIPTS_PER_SESSION = 8
/**
 * A subscription restored into a persistent session that has a QoS 2 publish awaiting PUBREL but no subscriptions:
 * aedes says "session present" only when it restores subscriptions, and the device must learn that its session
 * (with that packet) is still here [MQTT-3.2.2-2]. authorizeSubscribe refuses it, so it subscribes to nothing.
 */
const SESSION_MARKER_TOPIC = '$hrs/session-present'

/** What a connection is: the device key it authenticated with. */
interface Session { token: string; tokenHash: string; principal: Principal; deviceId: string }

type Refusal = 'bad_key' | 'not_a_device_key' | 'plan' | 'topic' | 'subscription' | 'rate_limited' | 'payload' | 'unavailable' | 'malformed_connect'

/**
 * A QoS 1/2 publish a session has received: when (the ts of its readings without one) and whether its readings were
 * stored. A QoS 2 receipt lives until PUBREL; a QoS 1 one (kept only when some reading took the receive time) until
 * the packet id is used again or RECEIPTS_PER_SESSION newer ones push it out.
 */
interface Receipt { qos: number; receivedAt: number; stored: Promise<boolean> }

/** What aedes keeps of the CONNECT that the typings leave out: the will, and Clean Start (MQTT 5 splits it from expiry). */
interface ConnectingClient { _will?: { topic: string }; _cleanStart?: boolean }

/** The reason a readings payload gives when a resend's readings without ts cannot be stored once for sure. */
const REDELIVERY_WITHOUT_TS = 'this publish was sent again (DUP) and this server did not see its first delivery, so a reading without ts may already be stored under another time: send ts with readings to have them stored exactly once'

const checkBatch = TypeCompiler.Compile(ReadingsBatch)

/** A refusal the device can read on its errors topic: the HTTP API's error code, and per-reading rejections. */
interface ErrorReport { topic: string; code: string; message: string; errors?: FieldError[]; accepted?: number; rejected?: ReportedRejection[] }
type ReportedRejection = Rejection | { index: number; code: 'redelivery_without_ts'; message: string }

export async function startMqttListener(deps: MqttDeps): Promise<MqttListener> {
  const { config, log, metrics } = deps
  const sessions = new WeakMap<Client, Session>()
  const connected = new Set<Client>()
  /** Publishes whose readings are being stored; close() waits for them so their acknowledgements go out. */
  const storing = new Set<Promise<void>>()
  /** By aedes client id (namespaced by device): the session's recent QoS 1/2 publishes, by packet id. */
  const receipts = new Map<string, Map<number, Receipt>>()
  const windowMs = config.rateLimitWindowSeconds * 1000

  const broker = await Aedes.createBroker({ maximumPacketSize: MQTT_MAX_PACKET_BYTES, heartbeatInterval: 60_000 })
  const refuse = (reason: Refusal) => metrics.mqttRefusals.inc([reason])
  /** The count of stored publishes by QoS, each taken at its first count (one per publish: no label key built). */
  const storedPublishes: CounterSeries[] = []
  const brokerClients = (broker as unknown as { clients: Record<string, Client | undefined> }).clients

  // The in-memory persistence, watched at two points: PUBREL ends a QoS 2 receipt, and a persistent session with a
  // QoS 2 publish in flight is "present" at CONNECT even with no subscriptions (see SESSION_MARKER_TOPIC).
  const persistence = (broker as unknown as { persistence: {
    incomingDelPacket(client: { id: string }, packet: { messageId?: number }): Promise<void>
    subscriptionsByClient(client: { id: string }): Promise<unknown[]>
  } }).persistence
  const incomingDelPacket = persistence.incomingDelPacket.bind(persistence)
  persistence.incomingDelPacket = (client, packet) => {
    const held = receipts.get(client.id)
    if (held && packet.messageId !== undefined && held.get(packet.messageId)?.qos === 2) held.delete(packet.messageId)
    return incomingDelPacket(client, packet)
  }
  const subscriptionsByClient = persistence.subscriptionsByClient.bind(persistence)
  persistence.subscriptionsByClient = async (client) => {
    const subscriptions = await subscriptionsByClient(client)
    const qos2InFlight = [...(receipts.get(client.id)?.values() ?? [])].some((receipt) => receipt.qos === 2)
    return subscriptions.length === 0 && qos2InFlight ? [{ topic: SESSION_MARKER_TOPIC, qos: 0 }] : subscriptions
  }
  // A device's readings and pings are stored (authorizePublish), never delivered: no one may subscribe to them
  // (authorizeSubscribe), so aedes' delivery of each one (a copy of the packet, the offline queues' and the
  // subscribers' topic matching, the 'publish' event) finds nobody, and is skipped. Its own publishes (configuration,
  // errors) and subscription notices are delivered as before.
  // (aedes' typings give publish(packet, done); inside, it is publish(packet, client, done) as well.)
  type Publish = (packet: PublishPacket, client: Client | null | ((error?: Error) => void), done?: (error?: Error) => void) => void
  const internal = broker as unknown as { publish: Publish }
  const deliver = internal.publish.bind(broker)
  internal.publish = (packet, client, done) => {
    if (client && typeof client !== 'function' && sessions.has(client) && DEVICE_PUBLISH_TOPIC.test(packet.topic)) return done?.()
    return deliver(packet, client, done)
  }
  /** A session's state ends: a clean session's connection closed, an MQTT 5 session expired, or Clean Start. */
  const forget = (sessionId: string) => { receipts.delete(sessionId) }

  /** Publishes to a device's own topic (config, errors); retained for its configuration. */
  const publishTo = (deviceId: string, leaf: 'config' | 'errors', body: unknown, retain: boolean) =>
    new Promise<void>((resolve) => broker.publish({ cmd: 'publish', topic: `devices/${deviceId}/${leaf}`, payload: Buffer.from(JSON.stringify(body)), qos: 1, retain, dup: false }, () => resolve()))
  const publishConfiguration = (device: DeviceInfo) => publishTo(device.id, 'config', { device_id: device.id, channels: device.configuration }, true)
  const report = (deviceId: string, body: ErrorReport) => void publishTo(deviceId, 'errors', body, false)

  const deviceOf = async (deviceId: string) => deps.ingest.devices.get(deviceId)
  let deviceReads = 0
  const waitingForRead: (() => void)[] = []
  const deviceForConnect = async (deviceId: string) => {
    if (deviceReads >= CONNECT_DEVICE_READS) await new Promise<void>((resolve) => waitingForRead.push(resolve))
    deviceReads++
    try {
      return await deviceOf(deviceId)
    } finally {
      deviceReads--
      waitingForRead.shift()?.()
    }
  }

  broker.authenticate = (client, username, password, done) => {
    const refuseWith = (returnCode: number, reason: Refusal, message: string) => {
      refuse(reason)
      done(Object.assign(new Error(message), { returnCode }) as any, false)
    }
    // MQTT 3.1.1 [MQTT-3.1.2-22]: a password without a username is a malformed CONNECT (and the README asks for one).
    if (client.version !== 5 && username === undefined) return refuseWith(BAD_USERNAME_OR_PASSWORD, 'malformed_connect', 'MQTT 3.1.1 sends the device key as password with a username (any).')
    const token = password?.toString('utf8') ?? ''
    const settle = async (principal: Principal | undefined) => {
      if (!principal) return refuseWith(BAD_USERNAME_OR_PASSWORD, 'bad_key', 'The password must be a device key that is neither revoked nor expired.')
      if (principal.kind !== 'device' || !principal.deviceId) return refuseWith(CONNECT_NOT_AUTHORIZED, 'not_a_device_key', 'Only device keys connect over MQTT; a personal key is for the HTTP API.')
      if (!planHasAccess(principal.plan, principal.liveTestAllowlisted, deps.platform.current())) return refuseWith(CONNECT_NOT_AUTHORIZED, 'plan', 'This account\'s plan does not include API access.')
      const device = await patiently(() => deviceForConnect(principal.deviceId!), CONNECT_PATIENCE_MS)
      if (!device) return refuseWith(BAD_USERNAME_OR_PASSWORD, 'bad_key', 'This device no longer exists.')
      // A will is published as the device when its connection drops, so it must name a topic the device may publish to.
      const will = (client as unknown as ConnectingClient)._will
      if (will && !ownPublishTopic(will.topic, device.id)) return refuseWith(CONNECT_NOT_AUTHORIZED, 'topic', `A will may name only devices/${device.id}/readings or devices/${device.id}/ping.`)
      // The session is the device's own (see the top of this file). aedes reads client.id for the session, the
      // takeover of a connection with the same id and the will only after authenticate has called back.
      const sessionId = `${principal.accountId}/${device.id}/${client.id}`
      ;(client as { id: string }).id = sessionId
      if ((client as unknown as ConnectingClient)._cleanStart ?? client.clean) forget(sessionId)
      sessions.set(client, { token, tokenHash: hashToken(token), principal, deviceId: device.id })
      // Retained before the CONNACK, so the device's first SUBSCRIBE finds its configuration waiting.
      await publishConfiguration(device)
      done(null, true)
    }
    patiently(() => deps.authenticator.verify(token), CONNECT_PATIENCE_MS).then(settle).catch((error) => {
      log.warn('mqtt: could not check a device key', { error: String(error) })
      refuse('unavailable')
      done(Object.assign(new Error('The service cannot check keys right now; try again.'), { returnCode: SERVER_UNAVAILABLE }) as any, false)
    })
  }

  broker.authorizeSubscribe = (client, subscription, done) => {
    if (subscription.topic === SESSION_MARKER_TOPIC) return done(null, null)
    const session = sessions.get(client)
    const match = TOPIC.exec(subscription.topic)
    if (session && match && match[1] === session.deviceId && (match[2] === 'config' || match[2] === 'errors')) return done(null, subscription)
    refuse('subscription')
    // A refused subscription is a failure in the SUBACK: 0x87 Not authorized in MQTT 5, 0x80 in MQTT 3.1.1, which
    // has a failure code for SUBACK (unlike PUBACK), so the connection stays up.
    done(null, null)
  }

  // Nothing a device publishes is delivered to anyone: readings go to the store, not to subscribers. What is
  // delivered (configuration, errors) goes only to a connection of the device it concerns, checked on the
  // receiving connection (a queued message of a persistent session included), not on the topic's shape alone.
  broker.authorizeForward = (client, packet) => {
    const match = TOPIC.exec(packet.topic)
    const forDevice = match && (match[2] === 'config' || match[2] === 'errors') ? match[1] : undefined
    return forDevice !== undefined && client && sessions.get(client)?.deviceId === forDevice ? packet : null
  }

  broker.authorizePublish = (client, packet, done) => {
    const session = client && sessions.get(client)
    if (!client || !session) return done(null) // the broker's own publishes (configuration, errors)
    const match = TOPIC.exec(packet.topic)
    if (!match || !ownPublishTopic(packet.topic, session.deviceId)) {
      refuse('topic')
      return done(new Error(`A device may publish only to devices/${session.deviceId}/readings and devices/${session.deviceId}/ping.`))
    }
    // Readings are never kept as retained messages.
    packet.retain = false
    const work = receive(client, session, packet, match[2] as 'readings' | 'ping', done)
    storing.add(work)
    void work.finally(() => storing.delete(work))
  }

  /** The receipt of this packet id in this session if the publish is one already received (sent again). */
  function earlier(client: Client, packet: PublishPacket): Receipt | undefined {
    if (packet.qos === 0 || packet.messageId === undefined) return undefined
    const receipt = receipts.get(client.id)?.get(packet.messageId)
    if (!receipt) return undefined
    // QoS 2: the packet id stays taken until PUBREL, so a publish with it is the same message, DUP flag or not.
    // QoS 1: the id is free again once acknowledged, so only DUP says "the same message, sent again".
    return packet.qos === 2 ? (receipt.qos === 2 ? receipt : undefined) : packet.dup ? receipt : undefined
  }

  function remember(client: Client, packet: PublishPacket, receipt: Receipt) {
    // A clean session that closed while its publish was read has ended: nothing will resend into it.
    if (client.closed && client.clean) return
    let held = receipts.get(client.id)
    if (!held) receipts.set(client.id, (held = new Map()))
    held.delete(packet.messageId!)
    held.set(packet.messageId!, receipt)
    if (held.size > RECEIPTS_PER_SESSION) held.delete(held.keys().next().value!)
  }

  async function receive(client: Client, session: Session, packet: PublishPacket, kind: 'readings' | 'ping', done: (error?: Error | null) => void) {
    const previous = earlier(client, packet)
    // Stored once already (its acknowledgement was lost, or the device resent before PUBREL): acknowledged again.
    if (previous && await previous.stored) {
      metrics.mqttPublishes.inc([String(packet.qos), 'duplicate'])
      return done(null)
    }
    const limit = rateLimitFor(config as Config, session.principal.plan, 'device')
    const { count, resetMs } = deps.rateLimiter.local(session.principal.keyId, windowMs)
    if (count > limit) {
      refuse('rate_limited')
      const { code, detail } = rateLimited(limit, config.rateLimitWindowSeconds, Math.max(1, Math.ceil(resetMs / 1000)))
      report(session.deviceId, { topic: packet.topic, code, message: detail })
      return done(new Error(detail))
    }
    // A cached device is a value, not a promise: no wrapper promise per publish (MQTT's busiest line).
    const cached = deps.ingest.devices.get(session.deviceId)
    const device = cached instanceof Promise ? await cached.catch(() => undefined) : cached
    if (!device) {
      refuse('unavailable')
      return client.disconnect({ reasonCode: SERVER_BUSY })
    }
    // A resend of a publish first received here takes its first receive time; one whose first delivery this
    // process never saw may not give its readings without ts a time of its own (see the top of this file).
    const receivedAt = previous?.receivedAt ?? Date.now()
    const unseenResend = !previous && packet.qos > 0 && packet.dup
    const payload = typeof packet.payload === 'string' ? packet.payload : packet.payload.toString('utf8')
    const outcome = kind === 'readings' ? readingsOf(payload, device, receivedAt, unseenResend) : pingOf(payload, device, receivedAt, unseenResend)
    if ('code' in outcome) {
      refuse('payload')
      report(device.id, { topic: packet.topic, ...outcome })
      metrics.mqttPublishes.inc([String(packet.qos), 'refused'])
      // MQTT 5 refuses it in the PUBACK (0x87, with the message as reason string). MQTT 3.1.1 has no negative
      // acknowledgement: closing would make the client send the same payload again forever, so it is acknowledged
      // and the refusal is on the errors topic.
      return client.version === 5 ? done(new Error(outcome.message)) : done(null)
    }
    // Remembered before storing, so a resend arriving while this is being stored (the device reconnected) waits
    // for this outcome instead of storing a second time. A QoS 1 publish whose readings all carry ts needs none.
    let settled!: (stored: boolean) => void
    // (A will has no packet id: nothing resends it.)
    if (packet.messageId !== undefined && (packet.qos === 2 || (packet.qos === 1 && outcome.receivedAtUsed))) {
      remember(client, packet, { qos: packet.qos, receivedAt, stored: new Promise<boolean>((resolve) => { settled = resolve }) })
    }
    try {
      await deps.ingest.accept(device, { readings: outcome.readings, unmapped: outcome.unmapped, rejected: [] })
    } catch (error) {
      settled?.(false)
      if (!(error instanceof IngestUnavailable)) log.error('mqtt: storing readings failed', { error: String(error) })
      refuse('unavailable')
      metrics.mqttPublishes.inc([String(packet.qos), 'unavailable'])
      // No acknowledgement: the client sends the publish again once it has reconnected.
      return client.disconnect({ reasonCode: SERVER_BUSY })
    }
    settled?.(true)
    if (outcome.rejected.length) report(device.id, { topic: packet.topic, code: 'rejected_readings', message: refusedMessage(outcome.rejected.length, outcome.readings.length), accepted: outcome.readings.length, rejected: outcome.rejected })
    storedPublishes[packet.qos] ??= metrics.mqttPublishes.series([String(packet.qos), 'stored'])
    storedPublishes[packet.qos]!.inc()
    done(null)
  }

  // A revoked key's connection is closed at once: every process hears revocations (the key cache's own channel).
  await deps.shared.subscribe(AUTH_CHANNEL, (message) => {
    // After the authenticator has dropped the key from its cache (it heard the same message).
    setTimeout(() => {
      for (const client of connected) {
        const session = sessions.get(client)
        if (!session) continue
        if (message === `key:${session.tokenHash}` || message === `account:${session.principal.accountId}`) void stillValid(client, session)
      }
    }, 0)
  })
  const stillValid = async (client: Client, session: Session) => {
    const principal = await Promise.resolve(deps.authenticator.verify(session.token)).catch(() => session.principal)
    if (!principal || !planHasAccess(principal.plan, principal.liveTestAllowlisted, deps.platform.current())) {
      log.info('mqtt: closing the connection of a revoked key', { device_id: session.deviceId })
      client.disconnect({ reasonCode: NOT_AUTHORIZED })
    }
  }
  // A device's channels changed (or it was deleted): its retained configuration is published again.
  await deps.shared.subscribe(DEVICE_CHANNEL, (deviceId) => {
    setTimeout(async () => {
      for (const client of connected) {
        if (sessions.get(client)?.deviceId !== deviceId) continue
        const device = await deviceOf(deviceId).catch(() => undefined)
        if (device) await publishConfiguration(device)
        return
      }
    }, 0)
  })

  // The gauge counts open connections: a connection is counted once aedes has accepted it and uncounted when its
  // socket closes. aedes' own clientDisconnect can come before clientReady (a DISCONNECT right after CONNACK) or
  // not at all (a client closed while its takeover was pending), which left closed clients counted and held.
  broker.on('clientReady', (client) => {
    if (client.closed) return
    connected.add(client)
    // A revocation heard between authenticate and now found no connection to close (the loop above walks only
    // connected clients): the key is checked once more now that it is one. The key cache answers while the key is
    // live; a revoked key has left it, and the store says so.
    const session = sessions.get(client)
    if (session) void stillValid(client, session)
    client.conn.once('close', () => {
      connected.delete(client)
      // A clean session ends with its connection, unless a newer connection holds the same session id by now.
      const holder = brokerClients[client.id]
      if (client.clean && (holder === undefined || holder === client)) forget(client.id)
    })
  })
  broker.on('sessionExpired', (client) => forget(client.id))
  broker.on('clientError', (client, error) => log.debug('mqtt: client error', { client: client?.id, error: String(error) }))
  broker.on('connectionError', (client, error) => log.debug('mqtt: connection error', { client: client?.id, error: String(error) }))
  metrics.registry.gauge('hrs_mqtt_connected_devices', 'MQTT connections this process holds.', [], () => [{ labels: [], value: connected.size }])

  const servers: Server[] = []
  const listen = async (server: Server, port: number) => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      // Shared with the other workers (WORKERS=n): the kernel spreads connections across them, as for HTTP.
      server.listen({ port, host: config.host, reusePort: true } as Parameters<Server['listen']>[0], () => { server.off('error', reject); resolve() })
    })
    servers.push(server)
    return (server.address() as { port: number }).port
  }
  const mqtt = config.mqtt
  // No Nagle: a PUBACK is a 4-byte packet the device waits for; held back for a delayed TCP ACK it would cost ~40 ms.
  const port = mqtt.port === undefined ? undefined : await listen(createTcpServer({ noDelay: true }, broker.handle), mqtt.port)
  const tlsPort = mqtt.tlsPort === undefined ? undefined
    : await listen(createTlsServer({ noDelay: true, cert: readFileSync(mqtt.tlsCertFile!), key: readFileSync(mqtt.tlsKeyFile!) }, broker.handle), mqtt.tlsPort)

  return {
    port, tlsPort,
    async close() {
      // A server's close() resolves once its connections have ended, which closing the broker does.
      const stopped = Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))))
      await Promise.allSettled([...storing])
      await new Promise<void>((resolve) => broker.close(() => resolve()))
      await stopped
    },
  }
}

/** A device's own topics it may publish to (readings and ping), for a publish and for a will. */
function ownPublishTopic(topic: string, deviceId: string): boolean {
  return topic === `devices/${deviceId}/readings` || topic === `devices/${deviceId}/ping`
}

/**
 * What a payload holds: its readings (readings without ts at `receivedAt`, and whether any took it), or what is
 * wrong with it. `refuseUntimed`: readings without ts are refused (a resend this process cannot place).
 */
type Outcome = (Omit<Parsed, 'rejected'> & { rejected: ReportedRejection[]; receivedAtUsed: boolean }) | Omit<ErrorReport, 'topic'>

/** The readings of a `devices/{id}/readings` payload, or what is wrong with it (as POST /sensors/readings says). */
function readingsOf(payload: string, device: DeviceInfo, receivedAt: number, refuseUntimed: boolean): Outcome {
  let body: unknown
  try {
    body = parseJsonBody(payload)
  } catch (error) {
    if (error instanceof ApiError) return { code: error.code, message: error.detail.replace('The body', 'The payload'), errors: error.extra.errors }
    throw error
  }
  if (!checkBatch.Check(body)) {
    return { code: 'validation_failed', message: `The payload must be { "readings": [ … ] } with 1 to ${MAX_READINGS_PER_BATCH} readings, as POST /sensors/readings takes.`, errors: schemaErrors(checkBatch.Errors(body), '/payload') }
  }
  const items = (body as { readings: unknown[] }).readings
  const untimed = (item: unknown) => item !== null && typeof item === 'object' && (item as { ts?: unknown }).ts === undefined
  const receivedAtUsed = !refuseUntimed && items.some(untimed)
  if (!refuseUntimed || !items.some(untimed)) return { ...parseBatch(items, device, receivedAt), receivedAtUsed }
  // The readings with ts are parsed alone; their rejections keep the indexes of the whole payload.
  const kept: number[] = []
  const refused: ReportedRejection[] = []
  items.forEach((item, index) => (untimed(item) ? refused.push({ index, code: 'redelivery_without_ts', message: REDELIVERY_WITHOUT_TS }) : kept.push(index)))
  const parsed = parseBatch(kept.map((index) => items[index]), device, receivedAt)
  const rejected = [...refused, ...parsed.rejected.map((rejection) => ({ ...rejection, index: kept[rejection.index]! }))].sort((a, b) => a.index - b.index)
  return { ...parsed, rejected, receivedAtUsed }
}

/** The readings of a `devices/{id}/ping` payload (`t1=27.5&h1=61`), or what is wrong with it. */
function pingOf(payload: string, device: DeviceInfo, receivedAt: number, refuseUntimed: boolean): Outcome {
  const fields = Object.fromEntries(new URLSearchParams(payload))
  if (refuseUntimed && fields.ts === undefined) return { code: 'redelivery_without_ts', message: `The ping was refused: ${REDELIVERY_WITHOUT_TS}.` }
  const { parsed, problems } = parsePing(fields, device, receivedAt, '/payload')
  return parsed ? { ...parsed, receivedAtUsed: fields.ts === undefined } : { code: 'validation_failed', message: PING_REFUSED, errors: problems }
}

/** What a device is told of a publish some of whose readings were refused: how many, and whether any were stored. */
export function refusedMessage(refused: number, stored: number): string {
  const count = `${refused} ${refused === 1 ? 'reading was' : 'readings were'} refused`
  if (stored === 0) return `${count}; none was stored.`
  return `${count}; the other ${stored === 1 ? 'one was' : `${stored} were`} stored.`
}
