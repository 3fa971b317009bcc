// A request's path and query, read from `request.url` as text. Bun builds that URL from the Host header, which the
// caller chooses; `new URL()` on it throws for a Host such as `a@b` or `b:99999`. Only the path and query the
// client sent are read here, so nothing depends on the Host (absolute URLs come from PUBLIC_URL).

/** The path, without the query: `/api/v1/animals`. */
export function pathOf(url: string): string {
  const start = pathStart(url)
  const end = url.indexOf('?', start)
  return end === -1 ? url.slice(start) : url.slice(start, end)
}

/** The query without its `?` (empty when there is none). */
export function queryOf(url: string): string {
  const start = url.indexOf('?', pathStart(url))
  return start === -1 ? '' : url.slice(start + 1)
}

/** The path and query: `/api/v1/animals?limit=5`. */
export function pathAndQueryOf(url: string): string {
  return url.slice(pathStart(url))
}

/** Where the path begins: after `scheme://authority`, or at once for a path-only target. */
function pathStart(url: string): number {
  const scheme = url.indexOf('//')
  if (scheme === -1) return url.startsWith('/') ? 0 : url.length
  const start = url.indexOf('/', scheme + 2)
  return start === -1 ? url.length : start
}
