// A fleet of MQTT devices in one process, for bench/scenarios/fleet.ts: N raw MQTT 3.1.1 connections (mqtt-packet,
// MQTT.js's codec, over node:net; MQTT.js itself costs too much per client to hold 10,000 of them), each publishing
// one reading at QoS 1 every cadence, then a reconnect storm: every connection dropped at once and opened again
// spread over a window. The parent reads its progress lines (`phase …`) and its `result {json}`.
//
// Input (a JSON file named by env FLEET_INPUT; ten thousand keys are too long for an environment variable): { url: 'mqtt://host:port', devices: [{ id, key }], cadenceMs, publishMs, idleMs,
// stormSpreadMs, connectParallel, tsBase }. Every reading carries its own ts (tsBase + a per-device sequence), so
// stored can be compared with acknowledged exactly.
import { readFileSync } from 'node:fs'
import { connect as tcpConnect, type Socket } from 'node:net'
import mqttPacket from 'mqtt-packet'

interface Input {
  url: string
  devices: { id: string; key: string }[]
  cadenceMs: number
  publishMs: number
  idleMs: number
  stormSpreadMs: number
  connectParallel: number
  tsBase: number
}

const input = JSON.parse(readFileSync(process.env.FLEET_INPUT!, 'utf8')) as Input
const { hostname, port } = new URL(input.url)
const say = (line: string) => process.stdout.write(`${line}\n`)

type Outcome = 'connected' | 'refused' | 'closed'

class DeviceConnection {
  socket: Socket | undefined
  private connack: ((outcome: Outcome, code?: number) => void) | undefined
  private readonly inFlight = new Map<number, number>()
  private nextId = 1
  seq = 0
  acknowledged = 0

  constructor(readonly device: { id: string; key: string }, readonly index: number, private readonly latencies: number[]) {}

  private readonly handle = (packet: any) => {
    if (packet.cmd === 'connack') this.connack?.(packet.returnCode === 0 ? 'connected' : 'refused', packet.returnCode)
    else if (packet.cmd === 'puback') {
      const sent = this.inFlight.get(packet.messageId)
      if (sent === undefined) return
      this.inFlight.delete(packet.messageId)
      this.acknowledged++
      this.latencies.push(performance.now() - sent)
    }
  }

  /** Opens the connection and sends CONNECT; resolves with the CONNACK's verdict (or 'closed' without one). */
  open(): Promise<{ outcome: Outcome; code?: number }> {
    const parser = mqttPacket.parser({ protocolVersion: 4 })
    parser.on('packet', this.handle)
    return new Promise((resolve) => {
      let settled = false
      const settle = (outcome: Outcome, code?: number) => { if (!settled) { settled = true; this.connack = undefined; resolve({ outcome, code }) } }
      this.connack = settle
      const socket = tcpConnect({ host: hostname, port: Number(port), noDelay: true })
      this.socket = socket
      socket.on('connect', () => socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, keepalive: 120, clientId: `fleet-${this.index}`, username: 'fleet', password: Buffer.from(this.device.key) } as any)))
      socket.on('data', (data: Buffer) => parser.parse(data))
      socket.on('error', () => {})
      // A publish unacknowledged when its connection closes is counted as not acknowledged (it is not resent).
      socket.on('close', () => { settle('closed'); this.inFlight.clear() })
      setTimeout(() => settle('closed'), 60_000).unref()
    })
  }

  publish() {
    if (!this.socket || this.socket.destroyed) return
    const messageId = this.nextId
    this.nextId = this.nextId === 65535 ? 1 : this.nextId + 1
    const payload = JSON.stringify({ readings: [{ channel: 'c0', value: this.seq % 1000, ts: input.tsBase + this.seq }] })
    this.seq++
    this.inFlight.set(messageId, performance.now())
    this.socket.write(mqttPacket.generate({ cmd: 'publish', topic: `devices/${this.device.id}/readings`, payload: Buffer.from(payload), qos: 1, dup: false, retain: false, messageId } as any))
  }

  /** Publishes sent and not acknowledged yet on the open connection. */
  get waiting() { return this.inFlight.size }

  drop() { this.socket?.destroy() }
}

const latencies: number[] = []
const fleet = input.devices.map((device, index) => new DeviceConnection(device, index, latencies))

/** Opens every connection, `parallel` at a time; how many were refused (CONNACK ≠ 0) or closed without CONNACK. */
async function connectAll(parallel: number, spreadMs = 0): Promise<{ ms: number; refused: number; closed: number; codes: Record<string, number> }> {
  const started = performance.now()
  let next = 0
  let refused = 0
  let closed = 0
  const codes: Record<string, number> = {}
  await Promise.all(Array.from({ length: Math.min(parallel, fleet.length) }, async () => {
    while (next < fleet.length) {
      const i = next++
      // A storm: connection i is due at its share of the spread (all within spreadMs of each other).
      if (spreadMs > 0) {
        const due = started + (i / fleet.length) * spreadMs
        const wait = due - performance.now()
        if (wait > 0) await Bun.sleep(wait)
      }
      const { outcome, code } = await fleet[i]!.open()
      if (outcome === 'refused') { refused++; codes[String(code)] = (codes[String(code)] ?? 0) + 1 }
      if (outcome === 'closed') closed++
    }
  }))
  return { ms: performance.now() - started, refused, closed, codes }
}

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN)

const first = await connectAll(input.connectParallel)
say(`phase connected ${JSON.stringify(first)}`)
// Idle, all connected: the parent samples the broker's memory now.
await Bun.sleep(input.idleMs)
say('phase publishing')
const publishStarted = performance.now()
const timers: Timer[] = []
for (const connection of fleet) {
  // Each device's first publish at a random point of the first cadence, then every cadence.
  const offset = Math.random() * input.cadenceMs
  timers.push(setTimeout(() => { connection.publish(); timers.push(setInterval(() => connection.publish(), input.cadenceMs)) }, offset))
}
await Bun.sleep(input.publishMs)
for (const timer of timers) clearTimeout(timer as any), clearInterval(timer as any)
// Acknowledgements still on the way.
const drainUntil = performance.now() + 10_000
while (fleet.some((c) => c.waiting > 0) && performance.now() < drainUntil) await Bun.sleep(50)
const publishSeconds = (performance.now() - publishStarted) / 1000
const sorted = [...latencies].sort((a, b) => a - b)
const published = fleet.reduce((n, c) => n + c.seq, 0)
const acknowledgedBeforeStorm = fleet.reduce((n, c) => n + c.acknowledged, 0)
say(`phase storm`)
for (const connection of fleet) connection.drop()
await Bun.sleep(200)
const storm = await connectAll(fleet.length, input.stormSpreadMs)
// One reading from every device after the storm: reconnected devices are served.
const stormLatencyStart = latencies.length
for (const connection of fleet) connection.publish()
const afterUntil = performance.now() + 15_000
while (fleet.some((c) => c.waiting > 0) && performance.now() < afterUntil) await Bun.sleep(50)
const afterStorm = latencies.slice(stormLatencyStart).sort((a, b) => a - b)
for (const connection of fleet) connection.drop()

say(`result ${JSON.stringify({
  devices: fleet.length,
  connect: first,
  publishSeconds,
  published: fleet.reduce((n, c) => n + c.seq, 0),
  acknowledged: fleet.reduce((n, c) => n + c.acknowledged, 0),
  publishedBeforeStorm: published,
  acknowledgedBeforeStorm,
  puback: { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? NaN, count: sorted.length },
  storm: { ...storm, pubackP99: percentile(afterStorm, 99), acknowledged: afterStorm.length },
})}`)
process.exit(0)
