// Group commit under a store that is slow, failing or stopped: bounded memory, 503 rather than loss, recovery.
import { describe, expect, test } from 'bun:test'
import { Batcher, IngestUnavailable } from '../../ingest/batcher.ts'
import type { Reading, ReadingsStore } from '../../ingest/stores/interface.ts'
import { createTestEnv, problem } from '../helpers.ts'

/** A store whose writes can be held, failed or let through, remembering what it stored. */
function controllableStore() {
  const stored: Reading[] = []
  let mode: 'ok' | 'fail' | 'hold' = 'ok'
  const held: (() => void)[] = []
  let writes = 0
  /** Readings per write, in the order the writes began. */
  const sizes: number[] = []
  const store: ReadingsStore = {
    kind: 'sql',
    rollupLevels: [],
    maintain: async () => ({ dropped: [], created: [] }),
    async write(readings) {
      writes++
      sizes.push(readings.length)
      if (mode === 'fail') throw new Error('store is down')
      if (mode === 'hold') await new Promise<void>((resolve) => held.push(resolve))
      stored.push(...readings)
    },
    raw: async () => [], buckets: async () => [], latest: async () => [], caughtUp: async () => true, settling: async () => [], ping: async () => {}, close: async () => {},
  }
  return {
    store, stored, sizes,
    get writes() { return writes },
    set(next: typeof mode) { mode = next },
    release() { mode = 'ok'; for (const resolve of held.splice(0)) resolve() },
  }
}

/** Lets every promise callback and I/O callback queued so far run (no timer involved). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

const readings = (n: number, start = 0): Reading[] =>
  Array.from({ length: n }, (_, i) => ({ accountId: 'acct_x', deviceId: 'dev_x', channel: 't1', ts: 1_800_000_000_000 + start + i, value: i, metric: null, environmentId: null }))

describe('Batcher', () => {
  test('readings from many requests share one write; each request resolves only after it', async () => {
    const s = controllableStore()
    const batcher = new Batcher(s.store, { maxBatch: 1000, flushMs: 20, maxQueued: 10_000, concurrency: 1, writeTimeoutMs: 1000 })
    const order: string[] = []
    const requests = Array.from({ length: 10 }, (_, i) => batcher.add(readings(5, i * 5)).then(() => order.push(`ack ${i}`)))
    expect(s.stored).toHaveLength(0)
    await Promise.all(requests)
    expect(s.writes).toBe(1)
    expect(s.stored).toHaveLength(50)
    expect(order).toHaveLength(10)
  })

  test('at flushMs 0 a batch is sealed at the end of the event loop turn: that turn\'s requests share one write, no timer', async () => {
    const s = controllableStore()
    const batcher = new Batcher(s.store, { maxBatch: 1000, flushMs: 0, maxQueued: 10_000, concurrency: 1, writeTimeoutMs: 1000 })
    const first = [batcher.add(readings(5)), batcher.add(readings(5, 5))]
    expect(s.writes).toBe(0)
    // One setImmediate later (a timer, even of 0 ms, waits a millisecond): the seal queued first has run.
    await settle()
    expect(s.writes).toBe(1)
    await Promise.all(first)
    const second = batcher.add(readings(5, 10))
    await settle()
    expect(s.writes).toBe(2)
    await second
    expect(s.stored).toHaveLength(15)
  })

  test('while every write slot is taken, the readings of later turns gather into one batch, written when a slot frees', async () => {
    const s = controllableStore()
    const batcher = new Batcher(s.store, { maxBatch: 1000, flushMs: 0, maxQueued: 10_000, concurrency: 1, writeTimeoutMs: 60_000 })
    s.set('hold')
    const first = batcher.add(readings(5))
    await settle()
    expect(s.writes).toBe(1)
    // Two more turns, each with a request, while the first write is held: no write starts, none is queued.
    const second = batcher.add(readings(5, 5))
    await settle()
    const third = batcher.add(readings(5, 10))
    await settle()
    expect(s.writes).toBe(1)
    s.release()
    await Promise.all([first, second, third])
    expect(s.writes).toBe(2)
    expect(s.stored).toHaveLength(15)
  })

  test('while every write slot is taken, a full batch goes on growing up to maxBatchWhileBusy, and is written when a slot frees', async () => {
    for (const maxBatchWhileBusy of [400, undefined]) {
      const s = controllableStore()
      s.set('hold')
      const batcher = new Batcher(s.store, { maxBatch: 100, maxBatchWhileBusy, flushMs: 60_000, maxQueued: 10_000, concurrency: 1, writeTimeoutMs: 60_000 })
      // The first fills a batch while the slot is free: written at once, and held.
      const requests = [batcher.add(readings(100))]
      await settle()
      // Five more while the write is held. Growing: four make one batch of 400; the fifth would pass 400, so that
      // batch is sealed, and the fifth starts the next. Not growing (the ingest log's batcher): a batch each.
      for (let i = 1; i <= 5; i++) requests.push(batcher.add(readings(100, i * 100)))
      await settle()
      expect(s.sizes).toEqual([100])
      s.release()
      await Promise.all(requests)
      expect({ maxBatchWhileBusy, sizes: s.sizes }).toEqual({ maxBatchWhileBusy, sizes: maxBatchWhileBusy ? [100, 400, 100] : [100, 100, 100, 100, 100, 100] })
      expect(s.stored).toHaveLength(600)
    }
  })

  test('a batch sealed while every slot is taken leaves the next one to its own size and wait', async () => {
    const s = controllableStore()
    s.set('hold')
    const batcher = new Batcher(s.store, { maxBatch: 100, flushMs: 60_000, maxQueued: 10_000, concurrency: 1, writeTimeoutMs: 60_000 })
    const full = [batcher.add(readings(100))]
    await settle()
    // A full batch while the slot is held, sealed by the next request, whose 10 readings start a batch of their own.
    full.push(batcher.add(readings(100, 100)))
    const small = batcher.add(readings(10, 200))
    s.release()
    await Promise.all(full)
    await settle()
    // The small batch is neither full nor past flushMs: it is not written when the slot frees.
    expect(s.sizes).toEqual([100, 100])
    await batcher.drain()
    await small
    expect(s.sizes).toEqual([100, 100, 10])
  })

  test('a full batch is written at once without waiting for the timer', async () => {
    const s = controllableStore()
    const batcher = new Batcher(s.store, { maxBatch: 100, flushMs: 60_000, maxQueued: 10_000, concurrency: 2, writeTimeoutMs: 1000 })
    await Promise.all([batcher.add(readings(100)), batcher.add(readings(100, 100))])
    expect(s.writes).toBe(2)
  })

  test('while the store holds writes, memory stays bounded and new work is refused; nothing is acknowledged early', async () => {
    const s = controllableStore()
    s.set('hold')
    // Each request fills a batch, so batches are sealed at once (the flush timer plays no part).
    const batcher = new Batcher(s.store, { maxBatch: 100, flushMs: 60_000, maxQueued: 500, concurrency: 2, writeTimeoutMs: 60_000 })
    const acked: number[] = []
    const pending: Promise<unknown>[] = []
    let refused = 0
    for (let i = 0; i < 20; i++) {
      pending.push(batcher.add(readings(100, i * 100)).then(() => acked.push(i), (e) => { if (e instanceof IngestUnavailable) refused++; else throw e }))
    }
    await settle()
    expect(s.writes).toBe(2)
    expect(batcher.queuedReadings).toBe(500)
    expect(refused).toBe(15)
    expect(acked).toEqual([])
    s.release()
    await Promise.all(pending)
    expect(acked.length).toBe(20 - refused)
    expect(s.stored).toHaveLength(acked.length * 100)
    expect(batcher.queuedReadings).toBe(0)
  })

  test('a failed write fails its requests, refuses work until the store had its moment to recover, then accepts again', async () => {
    const s = controllableStore()
    s.set('fail')
    let now = 1_800_000_000_000
    const batcher = new Batcher(s.store, { maxBatch: 100, flushMs: 1, maxQueued: 1000, concurrency: 1, writeTimeoutMs: 1000, now: () => now })
    const failed = await batcher.add(readings(3)).catch((e: unknown) => e)
    expect(failed).toBeInstanceOf(IngestUnavailable)
    const recoveryMs = (failed as IngestUnavailable).retryAfterSeconds * 1000
    expect(recoveryMs).toBeGreaterThan(0)
    s.set('ok')
    await expect(batcher.add(readings(3))).rejects.toBeInstanceOf(IngestUnavailable)
    now += recoveryMs - 1
    await expect(batcher.add(readings(3))).rejects.toBeInstanceOf(IngestUnavailable)
    expect(s.stored).toHaveLength(0)
    now += 1
    await batcher.add(readings(3))
    expect(s.stored).toHaveLength(3)
  })

  test('a write slower than the timeout fails its requests', async () => {
    const s = controllableStore()
    s.set('hold')
    const batcher = new Batcher(s.store, { maxBatch: 100, flushMs: 1, maxQueued: 1000, concurrency: 1, writeTimeoutMs: 50 })
    await expect(batcher.add(readings(3))).rejects.toBeInstanceOf(IngestUnavailable)
    s.release()
  })

  test('drain writes everything queued and then refuses new work', async () => {
    const s = controllableStore()
    const batcher = new Batcher(s.store, { maxBatch: 10_000, flushMs: 60_000, maxQueued: 100_000, concurrency: 1, writeTimeoutMs: 1000 })
    const first = batcher.add(readings(7))
    await batcher.drain()
    await first
    expect(s.stored).toHaveLength(7)
    await expect(batcher.add(readings(1))).rejects.toBeInstanceOf(IngestUnavailable)
  })
})

describe('ingest over HTTP with the store down', () => {
  test('503 with Retry-After while the store fails, 202 again once it is back', async () => {
    const s = controllableStore()
    let clock = Date.now()
    const env = await createTestEnv({}, { readings: () => s.store, clock: () => clock })
    try {
      const owner = await env.account({ scopes: ['sensors:write'] })
      const device = await (await env.request('POST', '/api/v1/sensors/devices', { token: owner.token, body: { name: 'Hub' } })).json()
      s.set('fail')
      const down = await env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings: [{ channel: 't1', value: 1 }] } })
      await problem(down, 503, 'service_unavailable')
      const retryAfter = Number(down.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThan(0)
      s.set('ok')
      await problem(await env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings: [{ channel: 't1', value: 3 }] } }), 503, 'service_unavailable')
      // Move the server's clock past Retry-After instead of waiting for it.
      clock += retryAfter * 1000
      const up = await env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings: [{ channel: 't1', value: 2 }] } })
      expect(up.status).toBe(202)
      expect(s.stored.map((r) => r.value)).toEqual([2])
    } finally {
      await env.close()
    }
  })
})
