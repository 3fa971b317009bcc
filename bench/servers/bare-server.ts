// The baseline for the HTTP layer: a bare Bun.serve that does the least an ingest endpoint can do. POST parses
// the JSON body and answers 202 with a small JSON document; GET answers 204. Started by the bench with PORT.
//
// The records scenarios also register fixed answers here (`PUT /_fixed` with a FixedAnswer as JSON): a request
// with that method whose path equals `path`, or lies under it when `path` ends with "/", gets that status,
// headers and body, after its JSON body (POST, PATCH) is parsed: the least a JSON API can do for it. A `path`
// with a query ("/a?b=1") is matched with the request's query, exactly: the pages of a recorded walk (history).
export interface FixedAnswer { method: string; path: string; status: number; headers?: Record<string, string>; body: string }

/** Registered answers by "METHOD path" (or "METHOD path?query"), with their response init built once. */
const fixed = new Map<string, { body: string; init: ResponseInit }>()
/** Whether any answer is registered with its query: only then is the query part of the lookup. */
let byQuery = false

/** Where a request URL's path begins (after the scheme and host). */
const pathStart = (url: string) => url.indexOf('/', url.indexOf('//') + 2)

/** The path of a request URL without allocating a URL object. */
function pathOf(url: string): string {
  const start = pathStart(url)
  const query = url.indexOf('?', start)
  return url.slice(start, query === -1 ? undefined : query)
}

function fixedAnswerFor(method: string, path: string, url: string) {
  // The query is looked at only once an answer was registered with one: the other scenarios' baseline pays nothing.
  const withQuery = byQuery ? fixed.get(`${method} ${url.slice(pathStart(url))}`) : undefined
  return withQuery ?? fixed.get(`${method} ${path}`) ?? fixed.get(`${method} ${path.slice(0, path.lastIndexOf('/') + 1)}`)
}

const port = Number(process.env.PORT ?? 0)
const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  async fetch(request) {
    if (fixed.size || request.method === 'PUT') {
      const path = pathOf(request.url)
      if (request.method === 'PUT' && path === '/_fixed') {
        const answer = (await request.json()) as FixedAnswer
        byQuery ||= answer.path.includes('?')
        fixed.set(`${answer.method} ${answer.path}`, { body: answer.body, init: { status: answer.status, headers: { 'content-type': 'application/json', ...answer.headers } } })
        return new Response(null, { status: 204 })
      }
      const answer = fixedAnswerFor(request.method, path, request.url)
      if (answer) {
        if (request.method === 'POST' || request.method === 'PATCH') await request.json()
        return new Response(answer.body, answer.init)
      }
    }
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
