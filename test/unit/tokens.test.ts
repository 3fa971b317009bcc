import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { idAt, isId, newId, ulid } from '../../src/ids.ts'
import { generateToken, hashToken, parseToken } from '../../src/tokens.ts'

describe('tokens (CONTRACT §2 format)', () => {
  test('prefix, 30 base62 random chars, 6-char base62 CRC32 checksum', () => {
    const pat = generateToken('personal')
    expect(pat).toMatch(/^hrs_pat_[0-9A-Za-z]{36}$/)
    expect(generateToken('device')).toMatch(/^hrs_dev_[0-9A-Za-z]{36}$/)
    expect(parseToken(pat)).toBe('personal')
    expect(parseToken(generateToken('device'))).toBe('device')
    const body = pat.slice(0, -6)
    const crc = Bun.hash.crc32(body)
    const decoded = [...pat.slice(-6)].reduce((n, c) => n * 62 + '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'.indexOf(c), 0)
    expect(decoded).toBe(crc)
  })

  test('any single-character typo fails the checksum (property)', () => {
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'.split('')
    fc.assert(fc.property(fc.integer({ min: 8, max: 43 }), fc.constantFrom(...alphabet), (i, ch) => {
      const token = generateToken('personal')
      fc.pre(token[i] !== ch)
      expect(parseToken(token.slice(0, i) + ch + token.slice(i + 1))).toBeUndefined()
    }), { numRuns: 500 })
  })

  test('tokens are unique and only their hash is derived for storage', () => {
    const tokens = new Set(Array.from({ length: 2000 }, () => generateToken('personal')))
    expect(tokens.size).toBe(2000)
    const t = [...tokens][0]!
    expect(hashToken(t)).toMatch(/^[0-9a-f]{64}$/)
    expect(hashToken(t)).not.toContain(t.slice(8))
  })
})

describe('ids (CONTRACT §1)', () => {
  test('prefix plus 26-char time-sortable suffix, sorting in creation order', () => {
    const ids = Array.from({ length: 1000 }, () => newId('animal'))
    for (const id of ids) expect(isId('animal', id)).toBe(true)
    expect([...ids].sort()).toEqual(ids)
    expect(isId('animal', newId('activity'))).toBe(false)
    expect(isId('animal', "anm_'; drop table")).toBe(false)
    expect(ulid(0)).toHaveLength(26)
  })

  test('ids made within one millisecond keep increasing, also when the increment carries past the last four characters', () => {
    // 2^21 ids in one millisecond (a fixed `now`): the last four base-32 digits (32^4 = 2^20 values) wrap at
    // least once, so the carry into the cached part of the id is exercised whatever the random start.
    const now = Date.now()
    let previous = ulid(now)
    let carriedPastTail = false
    for (let i = 0; i < 2 ** 21; i++) {
      const id = ulid(now)
      if (id <= previous) throw new Error(`not increasing: ${previous} then ${id}`)
      if (id.slice(0, 22) !== previous.slice(0, 22)) carriedPastTail = true
      previous = id
    }
    expect(carriedPastTail).toBe(true)
  })

  test('the first ten characters encode the creation time in milliseconds', async () => {
    const decode = (id: string) => [...id.slice(0, 10)].reduce((ms, c) => ms * 32 + '0123456789abcdefghjkmnpqrstvwxyz'.indexOf(c), 0)
    const before = Date.now()
    const first = ulid()
    await Bun.sleep(5)
    const second = ulid()
    expect(decode(first)).toBeGreaterThanOrEqual(before)
    expect(decode(second)).toBeGreaterThan(decode(first))
    expect(decode(second)).toBeLessThanOrEqual(Date.now())
  })

  test('idAt makes an id for a given instant (a backdated record sorts by its own time) without disturbing ulid()', () => {
    const decode = (id: string) => [...id.slice(4, 14)].reduce((ms, c) => ms * 32 + '0123456789abcdefghjkmnpqrstvwxyz'.indexOf(c), 0)
    const before = newId('animal')
    const old = idAt('animal', Date.parse('2024-09-01T10:00:00.123Z'))
    expect(isId('animal', old)).toBe(true)
    expect(decode(old)).toBe(Date.parse('2024-09-01T10:00:00.123Z'))
    expect(old < before).toBe(true)
    expect(idAt('animal', Date.parse('2024-09-01T10:00:00.124Z')) > old).toBe(true)
    // The next fresh id still carries the present time, not the past instant.
    const after = newId('animal')
    expect(after > before).toBe(true)
    expect(decode(after)).toBeGreaterThanOrEqual(decode(before))
  })
})
