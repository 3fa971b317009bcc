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
import { createServer as createTcpServer, type Server } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'
import { readFileSync } from 'node:fs'
import { Aedes, type Client, type PublishPacket } from 'aedes'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { Authenticator, Principal } from '../src/auth/authenticator.ts'
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

const TOPIC = /^devices\/([^/]+)\/(readings|ping|config|errors)$/

/** What a connection is: the device key it authenticated with. */
interface Session { token: string; tokenHash: string; principal: Principal; deviceId: string }

type Refusal = 'bad_key' | 'not_a_device_key' | 'plan' | 'topic' | 'subscription' | 'rate_limited' | 'payload' | 'unavailable'

const checkBatch = TypeCompiler.Compile(ReadingsBatch)

/** A refusal the device can read on its errors topic: the HTTP API's error code, and per-reading rejections. */
interface ErrorReport { topic: string; code: string; message: string; errors?: FieldError[]; accepted?: number; rejected?: Rejection[] }

export async function startMqttListener(deps: MqttDeps): Promise<MqttListener> {
  const { config, log, metrics } = deps
  const sessions = new WeakMap<Client, Session>()
  const connected = new Set<Client>()
  /** Publishes whose readings are being stored; close() waits for them so their acknowledgements go out. */
  const storing = new Set<Promise<void>>()
  const windowMs = config.rateLimitWindowSeconds * 1000

  const broker = await Aedes.createBroker({ maximumPacketSize: MQTT_MAX_PACKET_BYTES, heartbeatInterval: 60_000 })
  const refuse = (reason: Refusal) => metrics.mqttRefusals.inc([reason])

  /** Publishes to a device's own topic (config, errors); retained for its configuration. */
  const publishTo = (deviceId: string, leaf: 'config' | 'errors', body: unknown, retain: boolean) =>
    new Promise<void>((resolve) => broker.publish({ cmd: 'publish', topic: `devices/${deviceId}/${leaf}`, payload: Buffer.from(JSON.stringify(body)), qos: 1, retain, dup: false }, () => resolve()))
  const publishConfiguration = (device: DeviceInfo) => publishTo(device.id, 'config', { device_id: device.id, channels: device.configuration }, true)
  const report = (deviceId: string, body: ErrorReport) => void publishTo(deviceId, 'errors', body, false)

  const deviceOf = async (deviceId: string) => deps.ingest.devices.get(deviceId)

  broker.authenticate = (client, _username, password, done) => {
    const refuseWith = (returnCode: number, reason: Refusal, message: string) => {
      refuse(reason)
      done(Object.assign(new Error(message), { returnCode }) as any, false)
    }
    const token = password?.toString('utf8') ?? ''
    const settle = async (principal: Principal | undefined) => {
      if (!principal) return refuseWith(BAD_USERNAME_OR_PASSWORD, 'bad_key', 'The password must be a device key that is neither revoked nor expired.')
      if (principal.kind !== 'device' || !principal.deviceId) return refuseWith(CONNECT_NOT_AUTHORIZED, 'not_a_device_key', 'Only device keys connect over MQTT; a personal key is for the HTTP API.')
      if (!planHasAccess(principal.plan, principal.liveTestAllowlisted, deps.platform.current())) return refuseWith(CONNECT_NOT_AUTHORIZED, 'plan', 'This account\'s plan does not include API access.')
      const device = await deviceOf(principal.deviceId)
      if (!device) return refuseWith(BAD_USERNAME_OR_PASSWORD, 'bad_key', 'This device no longer exists.')
      sessions.set(client, { token, tokenHash: hashToken(token), principal, deviceId: device.id })
      // Retained before the CONNACK, so the device's first SUBSCRIBE finds its configuration waiting.
      await publishConfiguration(device)
      done(null, true)
    }
    Promise.resolve().then(() => deps.authenticator.verify(token)).then(settle).catch((error) => {
      log.warn('mqtt: could not check a device key', { error: String(error) })
      done(Object.assign(new Error('The service cannot check keys right now; try again.'), { returnCode: 3 }) as any, false)
    })
  }

  broker.authorizeSubscribe = (client, subscription, done) => {
    const session = sessions.get(client)
    const match = TOPIC.exec(subscription.topic)
    if (session && match && match[1] === session.deviceId && (match[2] === 'config' || match[2] === 'errors')) return done(null, subscription)
    refuse('subscription')
    // A refused subscription is a failure in the SUBACK: 0x87 Not authorized in MQTT 5, 0x80 in MQTT 3.1.1, which
    // has a failure code for SUBACK (unlike PUBACK), so the connection stays up.
    done(null, null)
  }

  // Nothing a device publishes is delivered to anyone: readings go to the store, not to subscribers.
  broker.authorizeForward = (_client, packet) => (packet.topic.endsWith('/readings') || packet.topic.endsWith('/ping') ? null : packet)

  broker.authorizePublish = (client, packet, done) => {
    const session = client && sessions.get(client)
    if (!client || !session) return done(null) // the broker's own publishes (configuration, errors)
    const match = TOPIC.exec(packet.topic)
    if (!match || match[1] !== session.deviceId || (match[2] !== 'readings' && match[2] !== 'ping')) {
      refuse('topic')
      return done(new Error(`A device may publish only to devices/${session.deviceId}/readings and devices/${session.deviceId}/ping.`))
    }
    // Readings are never kept as retained messages.
    packet.retain = false
    const limit = rateLimitFor(config as Config, session.principal.plan, 'device')
    const { count, resetMs } = deps.rateLimiter.local(session.principal.keyId, windowMs)
    if (count > limit) {
      refuse('rate_limited')
      const { code, detail } = rateLimited(limit, config.rateLimitWindowSeconds, Math.max(1, Math.ceil(resetMs / 1000)))
      report(session.deviceId, { topic: packet.topic, code, message: detail })
      return done(new Error(detail))
    }
    const work = store(client, session, packet, match[2] as 'readings' | 'ping', done)
    storing.add(work)
    void work.finally(() => storing.delete(work))
  }

  async function store(client: Client, session: Session, packet: PublishPacket, kind: 'readings' | 'ping', done: (error?: Error | null) => void) {
    const device = await deviceOf(session.deviceId).catch(() => undefined)
    if (!device) {
      refuse('unavailable')
      return client.disconnect({ reasonCode: SERVER_BUSY })
    }
    const payload = typeof packet.payload === 'string' ? packet.payload : packet.payload.toString('utf8')
    const outcome = kind === 'readings' ? readingsOf(payload, device) : pingOf(payload, device)
    if ('code' in outcome) {
      refuse('payload')
      report(device.id, { topic: packet.topic, ...outcome })
      metrics.mqttPublishes.inc([String(packet.qos), 'refused'])
      // MQTT 5 refuses it in the PUBACK (0x87, with the message as reason string). MQTT 3.1.1 has no negative
      // acknowledgement: closing would make the client send the same payload again forever, so it is acknowledged
      // and the refusal is on the errors topic.
      return client.version === 5 ? done(new Error(outcome.message)) : done(null)
    }
    try {
      await deps.ingest.accept(device, outcome)
    } catch (error) {
      if (!(error instanceof IngestUnavailable)) log.error('mqtt: storing readings failed', { error: String(error) })
      refuse('unavailable')
      metrics.mqttPublishes.inc([String(packet.qos), 'unavailable'])
      // No acknowledgement: the client sends the publish again once it has reconnected.
      return client.disconnect({ reasonCode: SERVER_BUSY })
    }
    if (outcome.rejected.length) report(device.id, { topic: packet.topic, code: 'rejected_readings', message: `${outcome.rejected.length} of the readings were refused; the others were stored.`, accepted: outcome.readings.length, rejected: outcome.rejected })
    metrics.mqttPublishes.inc([String(packet.qos), 'stored'])
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

  broker.on('clientReady', (client) => { connected.add(client) })
  broker.on('clientDisconnect', (client) => { connected.delete(client) })
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

/** The readings of a `devices/{id}/readings` payload, or what is wrong with it (as POST /sensors/readings says). */
function readingsOf(payload: string, device: DeviceInfo): Parsed | Omit<ErrorReport, 'topic'> {
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
  return parseBatch((body as { readings: unknown[] }).readings, device, Date.now())
}

/** The readings of a `devices/{id}/ping` payload (`t1=27.5&h1=61`), or what is wrong with it. */
function pingOf(payload: string, device: DeviceInfo): Parsed | Omit<ErrorReport, 'topic'> {
  const fields = Object.fromEntries(new URLSearchParams(payload))
  const { parsed, problems } = parsePing(fields, device, Date.now(), '/payload')
  return parsed ?? { code: 'validation_failed', message: PING_REFUSED, errors: problems }
}
