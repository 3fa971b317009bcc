// The webhook SSRF guard: every IPv6 form that embeds IPv4 and every IANA special-purpose range is refused, and a
// delivery connects to the address that was checked (DNS pinned) with Host, SNI and the certificate check on the name.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLogger } from '../../src/log.ts'
import { Dispatcher } from '../../src/webhooks/dispatcher.ts'
import { isForbiddenAddress, urlProblem, type Resolver } from '../../src/webhooks/url-guard.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

describe('forbidden addresses', () => {
  test('IPv6 forms that embed an IPv4 address are refused, whatever the IPv4 address', () => {
    const embedding = [
      '::127.0.0.1', '::7f00:1', '::8.8.8.8', // IPv4-compatible ::/96
      '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:8.8.8.8', // IPv4-mapped ::ffff:0:0/96, dotted and hex
      '64:ff9b::7f00:1', '64:ff9b::808:808', '64:ff9b:1::a00:1', // NAT64, well-known and local-use
      '2002:7f00:1::1', '2002:808:808::1', // 6to4
      '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    ]
    for (const address of embedding) expect({ address, forbidden: isForbiddenAddress(address) }).toEqual({ address, forbidden: true })
  })

  test('every IANA special-purpose range is refused; global unicast is allowed', () => {
    const special = [
      '0.1.2.3', '10.0.0.1', '100.64.0.1', '127.0.0.1', '169.254.169.254', '172.16.0.1', '192.0.0.9', '192.0.2.1', '192.31.196.1',
      '192.52.193.1', '192.88.99.1', '192.168.0.1', '192.175.48.1', '198.18.0.1', '198.51.100.1', '203.0.113.1', '224.0.0.1',
      '240.0.0.1', '255.255.255.255',
      '::', '::1', '100::1', '100:0:0:1::1', '2001:2::1', '2001:10::1', '2001:20::1', '2001:db8::1', '2620:4f:8000::1', '3fff::1',
      '5f00::1', 'fc00::1', 'fd00:ec2::254', 'fe80::1', 'fec0::1', 'ff02::1',
      'not-an-address',
    ]
    for (const address of special) expect({ address, forbidden: isForbiddenAddress(address) }).toEqual({ address, forbidden: true })
    for (const address of ['1.1.1.1', '8.8.8.8', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e']) {
      expect({ address, forbidden: isForbiddenAddress(address) }).toEqual({ address, forbidden: false })
    }
  })

  test('URL spellings of loopback are refused, not only the dotted form', async () => {
    const urls = ['https://[::127.0.0.1]/h', 'https://[::ffff:7f00:1]/h', 'https://[64:ff9b::7f00:1]/h', 'https://[2002:7f00:1::]/h',
      'https://2130706433/h', 'https://0x7f.1/h', 'https://017700000001/h']
    for (const url of urls) expect({ url, problem: await urlProblem(url, false) }).toEqual({ url, problem: expect.stringContaining('private') })
  })
})

describe('the API refuses such URLs', () => {
  let strict: TestEnv
  beforeAll(async () => { strict = await createTestEnv({ webhookAllowPrivate: false }) })
  afterAll(async () => { await strict.close() })

  test('an IPv4-compatible IPv6 URL is a 422 on /body/url and creates nothing', async () => {
    const key = await strict.account({ scopes: ['webhooks:read', 'webhooks:write'] })
    for (const url of ['https://[::127.0.0.1]/h', 'https://[::ffff:a00:1]/h', 'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/h']) {
      const refused = await problem(await strict.request('POST', '/api/v1/webhooks/endpoints', { token: key.token, body: { url, enabled_events: ['*'] } }), 422, 'validation_failed')
      expect(refused.errors[0].path).toBe('/body/url')
    }
    const list = await (await strict.request('GET', '/api/v1/webhooks/endpoints', { token: key.token })).json()
    expect(list.data).toEqual([])
  })
})

describe('deliveries connect to the checked address', () => {
  let env: TestEnv
  let certDir: string
  beforeAll(async () => {
    env = await createTestEnv({ webhookAllowPrivate: true })
    certDir = mkdtempSync(join(tmpdir(), 'hrs-ssrf-'))
  })
  afterAll(async () => { await env.close(); rmSync(certDir, { recursive: true, force: true }) })

  /** A resolver that answers `address` for `name` and counts how often it was asked. */
  function pinnedName(name: string, address: string) {
    const asked: string[] = []
    const resolve: Resolver = async (host) => { asked.push(host); if (host !== name) throw new Error(`unknown ${host}`); return [address] }
    return { resolve, asked }
  }

  /** A self-signed certificate for `name`, made with openssl. */
  function certificateFor(name: string): { cert: string; key: string } {
    const base = join(certDir, name)
    const made = Bun.spawnSync(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name}`,
      '-addext', `subjectAltName=DNS:${name}`, '-keyout', `${base}.key`, '-out', `${base}.crt`], { stderr: 'pipe' })
    if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`)
    return { cert: readFileSync(`${base}.crt`, 'utf8'), key: readFileSync(`${base}.key`, 'utf8') }
  }

  function receiver(tls?: { cert: string; key: string }) {
    const hosts: string[] = []
    const server = Bun.serve({ port: 0, hostname: '127.0.0.1', tls, fetch(request) { hosts.push(request.headers.get('host') ?? ''); return new Response(null, { status: 204 }) } })
    return { server, hosts }
  }

  const target = (url: string) => ({ url, secret: 'whsec_' + Buffer.from('k'.repeat(32)).toString('base64'), previous_secret: null, previous_secret_expires_at: null })

  test('a name that the system cannot resolve is reached at the address the guard checked, with Host on the name', async () => {
    const { server, hosts } = receiver()
    try {
      const names = pinnedName('hooks.invalid', '127.0.0.1')
      const dispatcher = new Dispatcher(env.deps.database, env.config, createLogger('error'), names.resolve)
      const outcome = await dispatcher.send(target(`http://hooks.invalid:${server.port}/h`), 'evt_pinned', '{}')
      expect(outcome).toMatchObject({ statusCode: 204, error: null })
      expect(hosts).toEqual([`hooks.invalid:${server.port}`])
      // Resolved once, by the guard: nothing resolved the name a second time to connect.
      expect(names.asked).toEqual(['hooks.invalid'])
    } finally { server.stop(true) }
  })

  test('over TLS the server name and the certificate check stay on the name', async () => {
    const good = certificateFor('hooks.test')
    const { server, hosts } = receiver(good)
    try {
      const names = pinnedName('hooks.test', '127.0.0.1')
      const dispatcher = new Dispatcher(env.deps.database, env.config, createLogger('error'), names.resolve, { tls: { ca: good.cert } })
      const outcome = await dispatcher.send(target(`https://hooks.test:${server.port}/h`), 'evt_tls', '{}')
      expect(outcome).toMatchObject({ statusCode: 204, error: null })
      expect(hosts).toEqual([`hooks.test:${server.port}`])
    } finally { server.stop(true) }

    // A certificate for another name fails the check although the address is the same.
    const other = certificateFor('other.test')
    const wrong = receiver(other)
    try {
      const names = pinnedName('hooks.test', '127.0.0.1')
      const dispatcher = new Dispatcher(env.deps.database, env.config, createLogger('error'), names.resolve, { tls: { ca: other.cert } })
      const outcome = await dispatcher.send(target(`https://hooks.test:${wrong.server.port}/h`), 'evt_tls_wrong', '{}')
      expect(outcome.statusCode).toBeNull()
      expect(wrong.hosts).toEqual([])
    } finally { wrong.server.stop(true) }
  })

  test('without WEBHOOK_ALLOW_PRIVATE a name that now resolves to a private address is refused before connecting', async () => {
    const { server, hosts } = receiver()
    try {
      const names = pinnedName('rebind.test', '127.0.0.1')
      const dispatcher = new Dispatcher(env.deps.database, { ...env.config, webhookAllowPrivate: false }, createLogger('error'), names.resolve)
      const outcome = await dispatcher.send(target(`https://rebind.test:${server.port}/h`), 'evt_rebind', '{}')
      expect(outcome.statusCode).toBeNull()
      expect(outcome.error).toContain('private')
      expect(hosts).toEqual([])
    } finally { server.stop(true) }
  })
})
