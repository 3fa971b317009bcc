// Webhook URLs must not reach into our own network (SSRF): https only, and no address that is private, loopback,
// link-local, metadata or on any IANA special-purpose list, after DNS resolution. Checked when an endpoint is saved
// and again before every delivery; the delivery then connects to the very address that was checked (pinned), with
// TLS SNI, certificate check and Host still on the name, so a name that re-resolves elsewhere between the check and
// the connection (DNS rebinding) cannot slip in. WEBHOOK_ALLOW_PRIVATE=1 lifts the address rule and the https rule
// for tests and local development (the address is still resolved once and pinned).
import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'

/** IANA IPv4 Special-Purpose Address Registry, plus multicast (224/4) from its own registry. */
const IPV4_SPECIAL: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.31.196.0', 24], ['192.52.193.0', 24], ['192.88.99.0', 24],
  ['192.168.0.0', 16], ['192.175.48.0', 24], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
]
/**
 * The IANA IPv6 Special-Purpose Address Registry's blocks that lie inside global unicast (2000::/3): IETF protocol
 * assignments (Teredo 2001::/32, benchmarking, ORCHID…), documentation, 6to4 (which embeds an IPv4 address) and AS112.
 * Every block outside 2000::/3 is refused by the global-unicast rule below: ::/128, ::1, IPv4-compatible ::/96,
 * IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, discard 100::/64, SRv6 5f00::/16, unique local
 * fc00::/7, link-local fe80::/10, site-local fec0::/10 and multicast ff00::/8.
 */
const IPV6_SPECIAL_IN_GLOBAL: ReadonlyArray<readonly [string, number]> = [
  ['2001::', 23], ['2001:db8::', 32], ['2002::', 16], ['2620:4f:8000::', 48], ['3fff::', 20],
]

const forbiddenV4 = new BlockList()
for (const [network, prefix] of IPV4_SPECIAL) forbiddenV4.addSubnet(network, prefix, 'ipv4')
const globalUnicastV6 = new BlockList()
globalUnicastV6.addSubnet('2000::', 3, 'ipv6')
const forbiddenV6 = new BlockList()
for (const [network, prefix] of IPV6_SPECIAL_IN_GLOBAL) forbiddenV6.addSubnet(network, prefix, 'ipv6')

/** Whether an address is one a webhook may never reach. IPv6 must be global unicast outside the special blocks. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return forbiddenV4.check(address, 'ipv4')
  if (family === 6) return !globalUnicastV6.check(address, 'ipv6') || forbiddenV6.check(address, 'ipv6')
  return true
}

export type Resolver = (host: string) => Promise<string[]>
export const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address)

/** How a developer reaches a receiver on their own machine, said where a URL is refused for being local or http. */
const LOCAL_DEVELOPMENT = ' (for local development, the service started with WEBHOOK_ALLOW_PRIVATE=1 takes http and loopback receivers)'

/** A URL that passed the guard, with the address it resolved to: deliveries connect there and nowhere else. */
export interface CheckedUrl { url: URL; address: string }

/** The checked URL and its pinned address, or why `url` may not receive webhooks. */
export async function checkUrl(url: string, allowPrivate: boolean, resolve: Resolver = systemResolver): Promise<CheckedUrl | { problem: string }> {
  let parsed: URL
  try { parsed = new URL(url) } catch { return { problem: 'is not a URL' } }
  if (parsed.username || parsed.password) return { problem: 'must not carry credentials' }
  const schemeAllowed = parsed.protocol === 'https:' || (allowPrivate && parsed.protocol === 'http:')
  if (!schemeAllowed) return { problem: `must be an https URL${LOCAL_DEVELOPMENT}` }
  const host = parsed.hostname.replace(/^\[|\]$/g, '')
  let addresses: string[]
  try {
    addresses = isIP(host) ? [host] : await resolve(host)
  } catch {
    return { problem: 'has a host name that does not resolve' }
  }
  if (!addresses.length) return { problem: 'has a host name that does not resolve' }
  // Every address the name has must be allowed, not only the one we use: the check must not depend on the order.
  if (!allowPrivate && addresses.some(isForbiddenAddress)) return { problem: `resolves to a private, loopback, link-local or reserved address${LOCAL_DEVELOPMENT}` }
  return { url: parsed, address: addresses[0]! }
}

/** Why `url` may not receive webhooks, or undefined when it may (the check made when an endpoint is saved). */
export async function urlProblem(url: string, allowPrivate: boolean, resolve: Resolver = systemResolver): Promise<string | undefined> {
  const checked = await checkUrl(url, allowPrivate, resolve)
  return 'problem' in checked ? checked.problem : undefined
}

/**
 * The request for a checked URL, aimed at its pinned address. The name stays where the receiver and TLS need it:
 * in the Host header, and as the TLS server name (SNI and the certificate check), so nothing resolves it again.
 */
export function pinnedRequest(checked: CheckedUrl): { url: string; host: string; serverName: string | undefined } {
  const target = new URL(checked.url)
  target.hostname = isIP(checked.address) === 6 ? `[${checked.address}]` : checked.address
  const name = checked.url.hostname
  const serverName = checked.url.protocol === 'https:' && isIP(name.replace(/^\[|\]$/g, '')) === 0 ? name : undefined
  return { url: target.toString(), host: checked.url.host, serverName }
}
