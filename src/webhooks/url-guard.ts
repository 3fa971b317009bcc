// Webhook URLs must not reach into our own network (SSRF): https only, and no private, loopback, link-local,
// metadata or otherwise special address after DNS resolution. Checked when an endpoint is saved and again just
// before every delivery, so a name that later resolves somewhere private (DNS rebinding) is still refused.
// WEBHOOK_ALLOW_PRIVATE=1 lifts both rules for tests and local development.
import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'

const blocked = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['2001:db8::', 32], ['fd00:ec2::', 32],
] as const) blocked.addSubnet(network, prefix, 'ipv6')

/** Whether an address is one a webhook may never reach (private, loopback, link-local incl. cloud metadata…). */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return true
  if (family === 6) {
    // IPv4-mapped IPv6 (::ffff:10.0.0.1) is the IPv4 address in disguise.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
    if (mapped) return blocked.check(mapped[1]!, 'ipv4')
    return blocked.check(address, 'ipv6')
  }
  return blocked.check(address, 'ipv4')
}

export type Resolver = (host: string) => Promise<string[]>
export const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address)

/** Why `url` may not receive webhooks, or undefined when it may. */
export async function urlProblem(url: string, allowPrivate: boolean, resolve: Resolver = systemResolver): Promise<string | undefined> {
  let parsed: URL
  try { parsed = new URL(url) } catch { return 'is not a URL' }
  if (parsed.username || parsed.password) return 'must not carry credentials'
  if (allowPrivate) return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? undefined : 'must be an https URL'
  if (parsed.protocol !== 'https:') return 'must be an https URL'
  const host = parsed.hostname.replace(/^\[|\]$/g, '')
  let addresses: string[]
  try {
    addresses = isIP(host) ? [host] : await resolve(host)
  } catch {
    return 'has a host name that does not resolve'
  }
  if (!addresses.length) return 'has a host name that does not resolve'
  if (addresses.some(isForbiddenAddress)) return 'resolves to a private, loopback, link-local or reserved address'
  return undefined
}
