import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import Redis from 'ioredis'
import { activities, idempotencyKeys, outboxEvents } from '../../db/schema/index.ts'
import { IDEMPOTENCY_RETENTION_MS, purgeExpiredIdempotencyKeys, runIdempotent } from '../../src/http/idempotency.ts'
import type { MemoryStore } from '../../src/kv/memory.ts'
import { recordActivity } from '../../src/modules/activities/service.ts'
import type { Executor } from '../../src/webhooks/outbox.ts'
import { createTestEnv, problem, REAL_REDIS_URL, type TestEnv } from '../helpers.ts'

let env: TestEnv
beforeAll(async () => { env = await createTestEnv() })
afterAll(async () => { await env.close() })

const SCOPES = ['animals:read', 'animals:write', 'activities:read', 'activities:write'] as const
type Key = Awaited<ReturnType<TestEnv['account']>>

async function animalOf(key: Key, species = 'python-regius') {
  const res = await env.request('POST', '/api/v1/animals', { token: key.token, body: { name: 'Subject', species_id: species } })
  return (await res.json()).id as string
}
const record = (key: Key, body: Record<string, unknown>, idempotencyKey?: string) =>
  env.request('POST', '/api/v1/activities', { token: key.token, body, headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey } })
const stored = (accountId: string) => env.deps.database.db.select().from(activities).where(eq(activities.account_id, accountId))
const eventTypes = async (accountId: string) =>
  (await env.deps.database.db.select().from(outboxEvents).where(eq(outboxEvents.account_id, accountId)).orderBy(outboxEvents.id)).map((e) => e.type)

/** Loses everything the shared store holds (locks and cached responses), as a Redis FLUSHALL or failover would. */
async function loseSharedStore() {
  if (REAL_REDIS_URL) {
    const redis = new Redis(REAL_REDIS_URL)
    await redis.flushall()
    redis.disconnect()
  } else {
    (env.deps.shared as MemoryStore).flush()
  }
}

describe('recording activities', () => {
  test('feeding, weight and shed are stored with their details; a weighing becomes the latest weight', async () => {
    const key = await env.account({ scopes: SCOPES })
    const animal = await animalOf(key)
    const feeding = await record(key, { animal_id: animal, type: 'feeding', occurred_at: '2026-11-01T18:30:00+01:00', details: { prey: 'rat', size: 'weaner', count: 1, accepted: true } })
    expect(feeding.status).toBe(201)
    const body = await feeding.json()
    expect(body).toMatchObject({ animal_id: animal, type: 'feeding', occurred_at: '2026-11-01T17:30:00.000Z', details: { prey: 'rat', count: 1, accepted: true }, notes: null })
    expect(body.id).toMatch(/^act_/)
    expect((await record(key, { animal_id: animal, type: 'weight', occurred_at: '2026-11-10T09:00:00Z', details: { grams: 1520 } })).status).toBe(201)
    expect((await record(key, { animal_id: animal, type: 'shed', details: { complete: true, quality: 'good' }, notes: 'in one piece' })).status).toBe(201)
    // An older weighing recorded later does not replace the newer one.
    expect((await record(key, { animal_id: animal, type: 'weight', occurred_at: '2026-10-01T09:00:00Z', details: { grams: 1400 } })).status).toBe(201)
    const read = await (await env.request('GET', `/api/v1/animals/${animal}`, { token: key.token })).json()
    expect(read).toMatchObject({ weight_grams: 1520, weighed_at: '2026-11-10T09:00:00.000Z' })
    expect(await eventTypes(key.accountId)).toEqual(['animal.created', 'activity.created', 'activity.created', 'animal.updated', 'activity.created', 'activity.created'])
  })

  test('details are checked against the type, with paths; bad input writes nothing', async () => {
    const key = await env.account({ scopes: SCOPES })
    const other = await env.account({ scopes: SCOPES })
    const animal = await animalOf(key)
    const foreign = await animalOf(other)
    const deleted = await animalOf(key)
    await env.request('DELETE', `/api/v1/animals/${deleted}`, { token: key.token })
    const cases: [Record<string, unknown>, string[]][] = [
      [{ animal_id: animal, type: 'weight', details: { grams: -5 } }, ['/body/details/grams']],
      [{ animal_id: animal, type: 'weight', details: { kilos: 1 } }, ['/body/details/grams', '/body/details/kilos']],
      [{ animal_id: animal, type: 'feeding', details: { prey: 'mouse', count: 1 } }, ['/body/details/accepted']],
      [{ animal_id: animal, type: 'shed', details: { complete: 'yes' } }, ['/body/details/complete']],
      [{ animal_id: animal, type: 'juggling', details: {} }, ['/body/type']],
      [{ animal_id: foreign, type: 'note' }, ['/body/animal_id']],
      [{ animal_id: deleted, type: 'note' }, ['/body/animal_id']],
      [{ animal_id: animal, type: 'note', occurred_at: new Date(Date.now() + 3600_000).toISOString() }, ['/body/occurred_at']],
      [{ animal_id: animal, type: 'note', occurred_at: '2026-11-01' }, ['/body/occurred_at']],
      [{ animal_id: animal, type: 'note', mood: 'happy' }, ['/body/mood']],
    ]
    for (const [body, paths] of cases) {
      const refused = await problem(await record(key, body), 422, 'validation_failed')
      expect({ body, paths: refused.errors.map((e: { path: string }) => e.path) }).toEqual({ body, paths: expect.arrayContaining(paths) })
    }
    expect(await stored(key.accountId)).toEqual([])
    expect(await stored(other.accountId)).toEqual([])
  })
})

describe('listing activities', () => {
  test('filters by animal, type, occurrence window and updated_since; newest occurrence first', async () => {
    const key = await env.account({ scopes: SCOPES })
    const [a, b] = [await animalOf(key), await animalOf(key)]
    const at = (day: number) => `2026-10-${String(day).padStart(2, '0')}T12:00:00.000Z`
    const ids: Record<string, string> = {}
    for (const [name, animal, type, day] of [['a1', a, 'note', 1], ['a2', a, 'handling', 5], ['b1', b, 'note', 3], ['a3', a, 'note', 9]] as const) {
      ids[name] = (await (await record(key, { animal_id: animal, type, occurred_at: at(day) })).json()).id
    }
    const list = async (query: string) => (await (await env.request('GET', `/api/v1/activities?${query}`, { token: key.token })).json()).data.map((x: { id: string }) => x.id)
    expect(await list('')).toEqual([ids.a3, ids.a2, ids.b1, ids.a1])
    expect(await list(`animal_id=${a}`)).toEqual([ids.a3, ids.a2, ids.a1])
    expect(await list('type=note')).toEqual([ids.a3, ids.b1, ids.a1])
    expect(await list(`from=${at(3)}&to=${at(9)}`)).toEqual([ids.a2, ids.b1])
    expect(await list(`animal_id=${a}&type=note&from=${at(2)}`)).toEqual([ids.a3])
    expect(await list(`updated_since=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([])
    await problem(await env.request('GET', '/api/v1/activities?from=last-week', { token: key.token }), 400, 'invalid_parameter')
  })

  test('paging by occurrence while activities are recorded between pages: no duplicates, no skips', async () => {
    const key = await env.account({ scopes: SCOPES })
    const animal = await animalOf(key)
    const expected: string[] = []
    // Several activities share an occurred_at, so the id must break ties in the keyset.
    for (let i = 0; i < 17; i++) {
      const res = await record(key, { animal_id: animal, type: 'note', occurred_at: `2026-09-${String(10 + Math.floor(i / 3)).padStart(2, '0')}T08:00:00Z` })
      expected.push((await res.json()).id)
    }
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: any = await (await env.request('GET', `/api/v1/activities?limit=3${cursor ? `&cursor=${cursor}` : ''}`, { token: key.token })).json()
      seen.push(...page.data.map((x: { id: string }) => x.id))
      cursor = page.next_cursor
      // Recorded now, so newer than everything: sorts onto pages already read.
      await record(key, { animal_id: animal, type: 'note' })
    } while (cursor)
    const byOccurrence = [...expected].reverse()
    expect(seen).toEqual(byOccurrence)
  })

  test("another account's activities are invisible, and its animal ids filter to nothing", async () => {
    const owner = await env.account({ scopes: SCOPES })
    const stranger = await env.account({ scopes: SCOPES })
    const animal = await animalOf(owner)
    await record(owner, { animal_id: animal, type: 'note' })
    const res = await env.request('GET', `/api/v1/activities?animal_id=${animal}`, { token: stranger.token })
    expect((await res.json()).data).toEqual([])
    expect((await (await env.request('GET', '/api/v1/activities', { token: stranger.token })).json()).data).toEqual([])
  })
})

describe('Idempotency-Key', () => {
  test('a replay returns the first status and body with Idempotent-Replayed; a different body is 422', async () => {
    const key = await env.account({ scopes: SCOPES })
    const animal = await animalOf(key)
    const body = { animal_id: animal, type: 'weight', details: { grams: 980 } }
    const first = await record(key, body, 'weigh-1')
    expect(first.status).toBe(201)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    const firstBody = await first.text()
    // Same JSON with members in another order is the same request.
    const replay = await record(key, { details: { grams: 980 }, type: 'weight', animal_id: animal }, 'weigh-1')
    expect(replay.status).toBe(201)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(await replay.text()).toBe(firstBody)
    await problem(await record(key, { ...body, details: { grams: 981 } }, 'weigh-1'), 422, 'idempotency_key_mismatch')
    expect(await stored(key.accountId)).toHaveLength(1)
    // Keys are per account: another account's identical key is a separate request.
    const other = await env.account({ scopes: SCOPES })
    expect((await record(other, { animal_id: await animalOf(other), type: 'note' }, 'weigh-1')).status).toBe(201)
  })

  test('a replay answers the stored bytes as they are, even ones today\'s response schema would not produce', async () => {
    const key = await env.account({ scopes: SCOPES })
    const first = await record(key, { animal_id: await animalOf(key), type: 'note' }, 'old-answer')
    expect(first.status).toBe(201)
    // As if stored by an earlier version of the API: a member the schema no longer has, spacing of its own.
    const earlier = (await first.text()).replace('{', '{ "retired_field": true, ')
    await env.deps.database.db.update(idempotencyKeys).set({ body: earlier }).where(eq(idempotencyKeys.account_id, key.accountId))
    await loseSharedStore()
    const replay = await record(key, { animal_id: JSON.parse(earlier).animal_id, type: 'note' }, 'old-answer')
    expect(replay.status).toBe(201)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(await replay.text()).toBe(earlier)
  })

  test('50 concurrent requests with the same key write exactly one activity', async () => {
    const key = await env.account({ scopes: SCOPES })
    const animal = await animalOf(key)
    const body = { animal_id: animal, type: 'feeding', details: { prey: 'mouse', count: 2, accepted: true } }
    const responses = await Promise.all(Array.from({ length: 50 }, () => record(key, body, 'burst')))
    const ids = new Set<string>()
    for (const res of responses) {
      if (res.status === 201) ids.add((await res.json()).id)
      else await problem(res, 409, 'idempotency_key_in_use')
    }
    expect(ids.size).toBe(1)
    const rows = await stored(key.accountId)
    expect(rows.map((r) => r.id)).toEqual([...ids])
    expect((await eventTypes(key.accountId)).filter((t) => t === 'activity.created')).toHaveLength(1)
  })

  test('while the first request holds the key, a retry is 409 idempotency_key_in_use', async () => {
    const key = await env.account({ scopes: SCOPES })
    const animal = await animalOf(key)
    const lock = await env.deps.shared.acquire(`idem-lock:${key.accountId}:held`, 10_000)
    expect(lock).not.toBeNull()
    await problem(await record(key, { animal_id: animal, type: 'note' }, 'held'), 409, 'idempotency_key_in_use')
    await env.deps.shared.release(`idem-lock:${key.accountId}:held`, lock!)
    expect((await record(key, { animal_id: animal, type: 'note' }, 'held')).status).toBe(201)
    expect(await stored(key.accountId)).toHaveLength(1)
  })

  test('after the shared store loses everything, a replay still writes nothing new (Postgres holds the key)', async () => {
    const key = await env.account({ scopes: SCOPES })
    const animal = await animalOf(key)
    const body = { animal_id: animal, type: 'shed', details: { complete: false } }
    const first = await record(key, body, 'survives-flush')
    const firstBody = await first.text()
    await loseSharedStore()
    const replay = await record(key, body, 'survives-flush')
    expect(replay.status).toBe(201)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(await replay.text()).toBe(firstBody)
    await loseSharedStore()
    await problem(await record(key, { ...body, details: { complete: true } }, 'survives-flush'), 422, 'idempotency_key_mismatch')
    expect(await stored(key.accountId)).toHaveLength(1)
    const [row] = await env.deps.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.account_id, key.accountId))
    expect(row?.status).toBe(201)
  })

  test('two writers whose lock was lost in between: the primary key lets one write, the other replays it', async () => {
    const key = await env.account({ scopes: SCOPES })
    const animal = await animalOf(key)
    const request = { accountId: key.accountId, key: 'lost-lock', fingerprint: 'same', requestId: 'req_test', url: env.baseUrl }
    let reachedWrite!: () => void
    const firstIsWriting = new Promise<void>((resolve) => { reachedWrite = resolve })
    let finishFirst!: () => void
    const firstMayCommit = new Promise<void>((resolve) => { finishFirst = resolve })
    const write = (tx: Executor, hold: boolean) => async () => {
      const row = await recordActivity(tx, key.accountId, { animal_id: animal, type: 'note', notes: hold ? 'first' : 'second' })
      if (hold) { reachedWrite(); await firstMayCommit }
      return { status: 201, body: JSON.stringify({ id: row.id }) }
    }
    const first = runIdempotent(env.deps, request, (within) => within((tx) => write(tx, true)()))
    await firstIsWriting
    await loseSharedStore()
    const second = runIdempotent(env.deps, request, (within) => within((tx) => write(tx, false)()))
    await Bun.sleep(100)
    finishFirst()
    const [a, b] = await Promise.all([first, second])
    expect(a.replayed).toBe(false)
    expect(b).toEqual({ ...a, replayed: true })
    const rows = await stored(key.accountId)
    expect(rows.map((r) => r.notes)).toEqual(['first'])
  })

  test('after 24 hours a key is forgotten: the sweep drops it and the same key writes anew', async () => {
    const key = await env.account({ scopes: SCOPES })
    const animal = await animalOf(key)
    const body = { animal_id: animal, type: 'note' }
    expect((await record(key, body, 'daily')).status).toBe(201)
    const dayAgo = new Date(Date.now() - IDEMPOTENCY_RETENTION_MS - 60_000).toISOString()
    await env.deps.database.db.update(idempotencyKeys).set({ created_at: dayAgo }).where(eq(idempotencyKeys.account_id, key.accountId))
    await loseSharedStore()
    const again = await record(key, body, 'daily')
    expect(again.status).toBe(201)
    expect(again.headers.get('idempotent-replayed')).toBeNull()
    expect(await stored(key.accountId)).toHaveLength(2)
    await env.deps.database.db.update(idempotencyKeys).set({ created_at: dayAgo }).where(eq(idempotencyKeys.account_id, key.accountId))
    await purgeExpiredIdempotencyKeys(env.deps)
    expect(await env.deps.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.account_id, key.accountId))).toEqual([])
  })

  test("the handler's own refusals are stored and replayed; refusals before it are not", async () => {
    const key = await env.account({ scopes: SCOPES })
    const animal = await animalOf(key)
    const unknownAnimal = { animal_id: 'anm_00000000000000000000000000', type: 'note' }
    const first = await problem(await record(key, unknownAnimal, 'k-422'), 422, 'validation_failed')
    const again = await record(key, unknownAnimal, 'k-422')
    expect(again.status).toBe(422)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.headers.get('content-type')).toBe('application/problem+json')
    // The first body exactly, request_id included (the X-Request-Id header names this request).
    expect(await again.json()).toEqual(first)
    // A body refused by the schema (before the handler) leaves the key unused, so a corrected retry runs.
    await problem(await record(key, { animal_id: animal, type: 'note', extra: 1 }, 'k-fix'), 422, 'validation_failed')
    expect((await record(key, { animal_id: animal, type: 'note' }, 'k-fix')).status).toBe(201)
    await problem(await record(key, { animal_id: animal, type: 'note' }, ''), 400, 'invalid_parameter')
    await problem(await record(key, { animal_id: animal, type: 'note' }, 'k'.repeat(256)), 400, 'invalid_parameter')
    expect(await stored(key.accountId)).toHaveLength(1)
  })
})
