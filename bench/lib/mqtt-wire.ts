// A device's side of MQTT 5, as little of it as a load generator needs: CONNECT with a key, QoS 1 PUBLISH, PUBACK,
// on a Bun socket. What it costs per publish is encoding one packet, a write, and a few bytes parsed, as fetch costs
// the HTTP generator about a request's bytes: the side of the loop that is not being measured stays small.
// MQTT.js, the generator before, cost more CPU per publish than fetch per request, taken from the server's share of
// this 2-core box (ingest-mqtt's notes, generator cores ÷ publishes/s, QuestDB store): 172 against 121 µs in a run
// at 15:51 UTC on 2026-11-28, when the box ran at half speed; 79–83 against 70–73 µs that evening, when this client
// took 64–66. Not a general client: packets other than CONNACK and PUBACK are skipped (a bench device subscribes to
// nothing). The tests use real clients (MQTT.js, mosquitto_pub).
import type { Socket } from 'bun'

const encoder = new TextEncoder()

/** MQTT's variable byte integer (a packet's remaining length). */
function varint(value: number): number[] {
  const bytes: number[] = []
  do {
    let byte = value % 128
    value = Math.floor(value / 128)
    if (value > 0) byte |= 0x80
    bytes.push(byte)
  } while (value > 0)
  return bytes
}

const utf8 = (text: string) => { const bytes = encoder.encode(text); return [bytes.length >> 8, bytes.length & 0xff, ...bytes] }

function packet(type: number, body: Uint8Array | number[]): Uint8Array {
  const header = [type, ...varint(body.length)]
  const out = new Uint8Array(header.length + body.length)
  out.set(header)
  out.set(body, header.length)
  return out
}

/** CONNECT (MQTT 5, Clean Start, keep-alive 60 s) with a username and the device key as password. */
function connectPacket(clientId: string, username: string, password: string): Uint8Array {
  return packet(0x10, [...utf8('MQTT'), 5, 0xc2, 0, 60, 0, ...utf8(clientId), ...utf8(username), ...utf8(password)])
}

/** PUBLISH at QoS 1 with its packet id. */
function publishPacket(topic: string, packetId: number, payload: string): Uint8Array {
  const body = encoder.encode(payload)
  const head = [...utf8(topic), packetId >> 8, packetId & 0xff, 0]
  const all = new Uint8Array(head.length + body.length)
  all.set(head)
  all.set(body, head.length)
  return packet(0x32, all)
}

export interface WireConnection {
  /** Publishes at QoS 1; resolves at its PUBACK with the reason code (0 is success, -1 the connection closed). */
  publish(topic: string, payload: string): Promise<number>
  close(): void
}

/** Connects as a device and resolves once the CONNACK accepted it. */
export async function connectDevice(url: string, clientId: string, key: string): Promise<WireConnection> {
  const { hostname, port } = new URL(url)
  let pending: Buffer = Buffer.alloc(0)
  let connected!: (code: number) => void
  let failed: ((error: Error) => void) | undefined
  const connack = new Promise<number>((resolve, reject) => { connected = resolve; failed = reject })
  /** Publishes awaiting their PUBACK, by packet id. */
  const inFlight = new Map<number, (code: number) => void>()
  let lastId = 0
  /** What the socket did not take yet (a write returns the bytes it took); written on drain, before anything new. */
  const unsent: Uint8Array[] = []
  const flush = () => {
    while (unsent.length) {
      const bytes = unsent[0]!
      const written = Math.max(0, socket.write(bytes))
      if (written < bytes.length) { unsent[0] = bytes.subarray(written); return }
      unsent.shift()
    }
  }
  const send = (bytes: Uint8Array) => { unsent.push(bytes); if (unsent.length === 1) flush() }
  const onPacket = (type: number, body: Buffer) => {
    if (type === 0x20) connected(body[1] ?? 0)
    else if (type === 0x40) {
      const id = (body[0]! << 8) | body[1]!
      const done = inFlight.get(id)
      inFlight.delete(id)
      done?.(body.length > 2 ? body[2]! : 0)
    }
  }
  const socket: Socket = await Bun.connect({
    hostname, port: Number(port),
    socket: {
      data(_socket, chunk) {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk
        for (;;) {
          let length = 0, multiplier = 1, at = 1
          for (; at < pending.length && at < 5; at++) {
            length += (pending[at]! & 0x7f) * multiplier
            multiplier *= 128
            if (!(pending[at]! & 0x80)) break
          }
          if (at >= pending.length || pending.length < at + 1 + length) return
          onPacket(pending[0]! & 0xf0, pending.subarray(at + 1, at + 1 + length))
          pending = pending.subarray(at + 1 + length)
          if (!pending.length) return
        }
      },
      drain: () => flush(),
      close() {
        failed?.(new Error('connection closed'))
        for (const done of inFlight.values()) done(-1)
        inFlight.clear()
      },
    },
  })
  send(connectPacket(clientId, 'bench', key))
  const code = await connack
  failed = undefined
  if (code !== 0) { socket.end(); throw new Error(`CONNACK refused: 0x${code.toString(16)}`) }
  return {
    publish(topic, payload) {
      do lastId = lastId === 0xffff ? 1 : lastId + 1
      while (inFlight.has(lastId))
      const id = lastId
      return new Promise<number>((resolve) => { inFlight.set(id, resolve); send(publishPacket(topic, id, payload)) })
    },
    close() { socket.end() },
  }
}
