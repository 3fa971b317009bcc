// One Server-Sent Events response (text/event-stream, WHATWG HTML §9.2): events, heartbeat comments, and a bounded
// buffer. Bun reads the body's queue only as fast as the socket takes it, so what a slow client has not taken piles
// up in the queue; past `bufferBytes` the client is told what it missed (one `dropped` event) and the stream ends,
// rather than holding memory without end. Nothing it is sent ever waits: ingest and the fan-out never slow for it.
const encoder = new TextEncoder()

export interface SseEvent {
  /** The id a client sends back as Last-Event-ID when it reconnects. */
  id?: string
  event: string
  data: unknown
}

export interface SseOptions {
  bufferBytes: number
  heartbeatMs: number
  /** Called once, however the stream ended (client gone, dropped, closed by the server). */
  onEnd: () => void
  /** How long a browser waits before reconnecting (the `retry:` field), sent first. */
  retryMs?: number
}

/** One event as the wire carries it: `data` as one line of JSON, so it never holds a line break. */
export function formatEvent(event: SseEvent): string {
  return `${event.id !== undefined ? `id: ${event.id}\n` : ''}event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`
}

export class SseStream {
  readonly response: Response
  private controller!: ReadableStreamDefaultController<Uint8Array>
  private heartbeat: ReturnType<typeof setInterval>
  private ended = false
  /** The id of the last event queued, for the `dropped` event's `last_id`. */
  private lastId: string | undefined

  constructor(private readonly options: SseOptions, headers: Record<string, string> = {}) {
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => { this.controller = controller },
      cancel: () => this.end(),
    }, { highWaterMark: options.bufferBytes, size: (chunk) => chunk?.byteLength ?? 0 })
    this.response = new Response(body, {
      status: 200,
      headers: {
        ...headers,
        'content-type': 'text/event-stream; charset=utf-8',
        // No proxy may buffer or transform it (nginx honours X-Accel-Buffering), and no cache may keep it.
        'cache-control': 'no-store, no-transform',
        'x-accel-buffering': 'no',
      },
    })
    this.write(`retry: ${options.retryMs ?? 2_000}\n: stream open\n\n`)
    this.heartbeat = setInterval(() => this.write(': heartbeat\n\n'), options.heartbeatMs)
    this.heartbeat.unref?.()
  }

  get closed(): boolean { return this.ended }

  /**
   * Queues an event; false when the stream has ended. A client that has let the buffer fill is sent one `dropped`
   * event (what it missed from where: `last_id` is the last event it was sent, to resume from) and the stream ends.
   */
  send(event: SseEvent): boolean {
    if (this.ended) return false
    if ((this.controller.desiredSize ?? 0) <= 0) {
      this.write(formatEvent({ event: 'dropped', data: { reason: 'slow_consumer', detail: `This client did not read its stream fast enough: more than ${this.options.bufferBytes} bytes were waiting. Reconnect with Last-Event-ID to resume.`, last_id: this.lastId ?? null } }))
      this.close()
      return false
    }
    if (event.id !== undefined) this.lastId = event.id
    return this.write(formatEvent(event))
  }

  /** Ends the stream after what is queued, optionally with a last event saying why. */
  close(last?: SseEvent): void {
    if (this.ended) return
    if (last) this.write(formatEvent(last))
    try { this.controller.close() } catch { /* already closed by the client */ }
    this.end()
  }

  private write(text: string): boolean {
    if (this.ended) return false
    try {
      this.controller.enqueue(encoder.encode(text))
      return true
    } catch {
      this.end()
      return false
    }
  }

  private end() {
    if (this.ended) return
    this.ended = true
    clearInterval(this.heartbeat)
    this.options.onEnd()
  }
}
