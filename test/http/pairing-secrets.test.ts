// Issue 55's high item, as the attacker ran it: claim ids were drawn from the monotonic ULID counter every request id
// comes from, so an observer of request ids could count to a claim id and be handed its device key. These tests run
// that exploit against a real server and check that the claim id is far from every request id around it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { pairingClaims } from '../../db/schema/index.ts'
import { newId, newSecretId, ulid } from '../../src/ids.ts'
import { CLAIM_POLLS_PER_MINUTE, claimHash, pollClaim } from '../../src/modules/sensors/pairing.ts'
import { createTestEnv, problem, type TestEnv } from '../helpers.ts'

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
/** An id's ten time digits and its 80 random bits as a number, so ids can be counted between. */
function parts(id: string): { time: string; random: bigint } {
  const body = id.slice(id.indexOf('_') + 1)
  let random = 0n
  for (const c of body.slice(10)) random = random * 32n + BigInt(ALPHABET.indexOf(c))
  return { time: body.slice(0, 10), random }
}
function withRandom(prefix: string, time: string, random: bigint): string {
  let digits = ''
  for (let i = 0; i < 16; i++) { digits = ALPHABET[Number(random % 32n)] + digits; random /= 32n }
  return `${prefix}_${time}${digits}`
}
/** How many steps of the monotonic counter lie between two ids of one millisecond (Infinity across milliseconds). */
function steps(a: string, b: string): number | bigint {
  const x = parts(a), y = parts(b)
  if (x.time !== y.time) return Infinity
  return x.random > y.random ? x.random - y.random : y.random - x.random
}
const nearest = (id: string, others: string[]) => others.reduce<number | bigint>((best, other) => { const d = steps(id, other); return d < best ? d : best }, Infinity)

describe('claim ids are not reachable from request ids', () => {
  test('a secret id made in the same millisecond as monotonic ids is not within 2^40 steps of any of them', () => {
    const now = Date.now()
    const around = [ulid(now), ulid(now), ulid(now)].map((u) => `req_${u}`)
    const secret = newSecretId('claim')
    const after = [ulid(now), ulid(now)].map((u) => `req_${u}`)
    // The monotonic ids themselves are one step apart: that is what made the old claim ids guessable.
    expect(steps(around[0]!, around[1]!)).toBe(1n)
    const distance = nearest(secret.replace('clm_', 'req_'), [...around, ...after])
    expect(distance === Infinity || (distance as bigint) > 2n ** 40n).toBe(true)
  })

  describe('the exploit against a server', () => {
    let env: TestEnv
    beforeAll(async () => { env = await createTestEnv() })
    afterAll(async () => { await env.close() })

    test('request ids observed while devices start claims lead to no claim, and the approved keys reach only their devices', async () => {
      const owner = await env.account({ scopes: ['sensors:read', 'sensors:write'] })
      // The observer: 16 loops of GET /status noting every X-Request-Id, while a device starts 5 claims among them.
      const observed: string[] = []
      let observing = true
      const observer = async () => {
        for (let i = 0; i < 250 && observing; i++) {
          const res = await fetch(`${env.baseUrl}/api/v1/status`)
          await res.arrayBuffer()
          observed.push(res.headers.get('x-request-id')!)
        }
      }
      const loops = Array.from({ length: 16 }, observer)
      const claims: { claim_id: string; user_code: string; requestId: string }[] = []
      for (let i = 0; i < 5; i++) {
        await Bun.sleep(20)
        const res = await env.request('POST', '/api/v1/sensors/claim/start', { body: { model: 'TH-1' } })
        expect(res.status).toBe(201)
        claims.push({ ...(await res.json()), requestId: res.headers.get('x-request-id')! })
      }
      observing = false
      await Promise.all(loops)
      expect(observed.length).toBeGreaterThan(500)

      // Each claim id is far from its own response's request id and from every id the observer saw.
      for (const claim of claims) {
        const asRequest = claim.claim_id.replace('clm_', 'req_')
        const distance = nearest(asRequest, [claim.requestId, ...observed])
        expect(distance === Infinity || (distance as bigint) > 2n ** 40n).toBe(true)
      }

      // The owner approves every claim, so a found claim would now hand over a device key.
      for (const claim of claims) {
        expect((await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { claim_code: claim.user_code } })).status).toBe(201)
      }

      // The attacker's candidates: every id within 16 counter steps of an observed request id, and every id between
      // two observed ids of one millisecond that are at most 64 steps apart (where the old claims were found).
      const candidates = new Set<string>()
      const byTime = new Map<string, bigint[]>()
      for (const id of observed) {
        const { time, random } = parts(id)
        byTime.set(time, [...(byTime.get(time) ?? []), random])
        for (let d = -16n; d <= 16n; d++) if (d !== 0n) candidates.add(withRandom('clm', time, random + d))
      }
      for (const [time, randoms] of byTime) {
        randoms.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
        for (let i = 1; i < randoms.length; i++) {
          if (randoms[i]! - randoms[i - 1]! > 64n) continue
          for (let r = randoms[i - 1]! + 1n; r < randoms[i]!; r++) candidates.add(withRandom('clm', time, r))
        }
      }
      expect(candidates.size).toBeGreaterThan(2_000)

      // None of them is a claim: checked against the table itself, beyond what the address limit lets through.
      const stored = new Set((await env.deps.database.db.select({ hash: pairingClaims.claim_hash }).from(pairingClaims)).map((r) => r.hash))
      expect(stored.size).toBeGreaterThanOrEqual(claims.length)
      expect([...candidates].filter((c) => stored.has(claimHash(c)))).toEqual([])

      // Over HTTP, every candidate is tried: unknown (404) until the address limit, then 429; never a claim or a key.
      const answers = new Map<number, number>()
      const list = [...candidates]
      for (let i = 0; i < list.length; i += 64) {
        const batch = await Promise.all(list.slice(i, i + 64).map(async (c) => {
          const res = await fetch(`${env.baseUrl}/api/v1/sensors/claim/status?claim_id=${c}`)
          const text = await res.text()
          expect(text).not.toContain('hrs_dev_')
          return res.status
        }))
        for (const status of batch) answers.set(status, (answers.get(status) ?? 0) + 1)
      }
      expect([...answers.keys()].sort()).toEqual([404, 429])
      expect(answers.get(404)).toBe(CLAIM_POLLS_PER_MINUTE)

      // The exploit took nothing from the real devices: each one's poll (past the address limit, through the service
      // itself) mints its key, which works as that device's key.
      for (const claim of claims) {
        const answer = await pollClaim(env.deps, claim.claim_id)
        expect(answer.status).toBe('claimed')
        const res = await env.request('GET', `/api/v1/sensors/devices/${answer.device_id}`, { token: answer.device_key })
        expect(res.status).toBe(200)
        expect((await res.json()).id).toBe(answer.device_id)
      }
    })
  })
})

describe('status polls are limited per client address and per claim', () => {
  let env: TestEnv
  beforeAll(async () => { env = await createTestEnv() })
  afterAll(async () => { await env.close() })

  test(`unknown ids count: the poll after ${CLAIM_POLLS_PER_MINUTE} in a minute is 429 with Retry-After, even for a real claim`, async () => {
    const claim = await (await env.request('POST', '/api/v1/sensors/claim/start')).json()
    expect((await (await env.request('GET', `/api/v1/sensors/claim/status?claim_id=${claim.claim_id}`)).json()).status).toBe('pending')
    // Polling again at once is the per-claim limit: slow_down (RFC 8628 §3.5).
    expect((await (await env.request('GET', `/api/v1/sensors/claim/status?claim_id=${claim.claim_id}`)).json()).status).toBe('slow_down')
    for (let i = 2; i < CLAIM_POLLS_PER_MINUTE; i++) {
      const res = await env.request('GET', `/api/v1/sensors/claim/status?claim_id=${i % 2 ? newId('claim') : 'nonsense'}`)
      expect(res.status).toBe(404)
      await res.arrayBuffer()
    }
    const limited = await env.request('GET', `/api/v1/sensors/claim/status?claim_id=${claim.claim_id}`)
    await problem(limited, 429, 'rate_limited')
    const retryAfter = Number(limited.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(60)
  })
})
