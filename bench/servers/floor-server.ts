// Rungs of the ladder between a bare Bun.serve and our server (the `http-floor` scenario): each does the least
// an ingest endpoint can do, as bench/servers/bare-server.ts does (POST parses the JSON body and answers 202
// with a small document; GET answers 204), and adds one thing. FLOOR picks the rung:
//   bare-headers    bare Bun.serve, plus the seven headers CONTRACT puts on every authenticated response
//   bare-headers-commit  that server, answering only once a shared promise settles after FLUSH_MS (default 0: at
//                   the end of the event loop's turn): the group commit's wait (CONTRACT §7), nothing stored
//   elysia          an Elysia app with the two routes and nothing else
//   elysia-headers  that app, plus the seven headers set from an onRequest hook, as our app sets them
// The header values change per request as ours do: a new request id, a rate-limit count going down.
import { Elysia } from 'elysia'
import { contractHeaders } from './contract-headers.ts'

const FLOOR = process.env.FLOOR
const port = Number(process.env.PORT ?? 0)
let stop: () => void
if (FLOOR === 'bare-headers' || FLOOR === 'bare-headers-commit') {
  // The requests of one flush interval await one promise, as a group commit's do (ingest/batcher.ts).
  const flushMs = Number(process.env.FLUSH_MS ?? 0)
  let flush: Promise<void> | undefined
  // At 0, as ingest/batcher.ts does: settled once this turn of the event loop has run the requests it read.
  const settleLater = (resolve: () => void) => (flushMs > 0 ? setTimeout(resolve, flushMs) : setImmediate(resolve))
  const commit = FLOOR === 'bare-headers' ? undefined : () => (flush ??= new Promise<void>((resolve) => settleLater(() => { flush = undefined; resolve() })))
  const server = Bun.serve({
    hostname: '127.0.0.1', port,
    async fetch(request) {
      if (request.method === 'POST') {
        const body = (await request.json()) as { readings?: unknown[] }
        if (commit) await commit()
        return Response.json({ accepted: Array.isArray(body?.readings) ? body.readings.length : 0, rejected: [] }, { status: 202, headers: contractHeaders() })
      }
      if (commit) await commit()
      return new Response(null, { status: 204, headers: contractHeaders() })
    },
  })
  stop = () => server.stop(true)
} else if (FLOOR === 'elysia' || FLOOR === 'elysia-headers') {
  const app = new Elysia({ normalize: false })
  if (FLOOR === 'elysia-headers') app.onRequest(({ set }) => { Object.assign(set.headers, contractHeaders()) })
  app.post('/readings', ({ body, set }) => {
    set.status = 202
    const readings = (body as { readings?: unknown[] } | undefined)?.readings
    return { accepted: Array.isArray(readings) ? readings.length : 0, rejected: [] }
  })
    .get('/ping', ({ set }) => { set.status = 204 })
    .listen({ hostname: '127.0.0.1', port, reusePort: false })
  stop = () => void app.stop(true)
} else {
  console.error(`FLOOR must be bare-headers, bare-headers-commit, elysia or elysia-headers, not ${FLOOR}`)
  process.exit(2)
}
console.log(`listening on http://127.0.0.1:${port} (floor: ${FLOOR})`)
process.on('SIGTERM', () => { stop(); process.exit(0) })
