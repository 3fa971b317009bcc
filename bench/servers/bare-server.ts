// The baseline for the HTTP layer: a bare Bun.serve that does the least an ingest endpoint can do. POST parses
// the JSON body and answers 202 with a small JSON document; GET answers 204. Started by the bench with PORT.
const port = Number(process.env.PORT ?? 0)
const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  async fetch(request) {
    if (request.method === 'POST') {
      const body = (await request.json()) as { readings?: unknown[] }
      const accepted = Array.isArray(body?.readings) ? body.readings.length : 0
      return Response.json({ accepted, rejected: [] }, { status: 202 })
    }
    return new Response(null, { status: 204 })
  },
})
console.log(`listening on http://127.0.0.1:${server.port}`)
process.on('SIGTERM', () => { server.stop(true); process.exit(0) })
