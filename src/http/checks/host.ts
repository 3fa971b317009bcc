// Step 0, before CONTRACT §2's steps and on every path (API, console, docs): a Host header that names no host is
// a 400, as RFC 9112 §3.2 requires. Bun builds `request.url` from it, so such a Host (`a@evil.example`,
// `evil.example:99999`) would otherwise reach code that parses that URL.
import { ApiError } from '../errors.ts'

/** A DNS name or IPv4 address, or an IPv6 literal in brackets, and an optional port. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]{2,45}\])(?::([0-9]{1,5}))?$/

export function checkHost(request: Request): void {
  const host = request.headers.get('host')
  // HTTP/1.0 may send none; Bun then names its own address in request.url.
  if (host === null) return
  const match = HOST.exec(host)
  if (match && (match[1] === undefined || Number(match[1]) <= 65_535)) return
  throw new ApiError('invalid_parameter', 'The Host header does not name a host.', {
    errors: [{ path: '/header/host', message: 'must be a host name or IP address, with an optional port from 0 to 65535' }],
  })
}

/** Any method no route of the server answers (CONNECT, TRACE, WebDAV's…) is a 405 on every path, with its Allow. */
export function refuseUnservedMethod(method: string, path: string, allow: string): never {
  throw new ApiError('method_not_allowed', `${method} is not served here${allow ? `; allowed: ${allow}` : ''}.`, { headers: { allow } })
}
