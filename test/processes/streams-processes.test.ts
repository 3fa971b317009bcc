// Event streams across real server processes (issue 59): a reading accepted by process A arrives on a stream held by
// process B (Redis pub/sub without the ingest log, the log's subjects with it); the process holding a stream killed
// with -9 mid-load, the client resumes on a restarted one with Last-Event-ID and has every acknowledged reading at
// least once; SIGTERM ends streams with a `shutdown` event and the process exits cleanly.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { EventSource } from 'eventsource'
import { NATS_SERVER, startNats, type NatsDeployment } from '../../bench/lib/nats.ts'
import type { Child } from '../../bench/lib/processes.ts'
import { freshDatabase, REAL_DATABASE_URL, REAL_REDIS_URL, waitFor } from '../helpers.ts'
import { runCli, startServer, tempDataDir } from '../process-helpers.ts'

const shared = Boolean(REAL_DATABASE_URL && REAL_REDIS_URL)
if (!shared) console.warn('streams-processes.test: the cross-process tests need DATABASE_URL and REDIS_URL; only the restart and SIGTERM tests run')

let database: Awaited<ReturnType<typeof freshDatabase>>
let storeEnv: Record<string, string | undefined>
let token: string

beforeAll(async () => {
  database = await freshDatabase()
  storeEnv = database.databaseUrl
    ? { DATABASE_URL: database.databaseUrl, REDIS_URL: REAL_REDIS_URL, REDIS_PREFIX: `hrs_test_${Date.now().toString(36)}:`, DEMO: '0', DEVICE_RATE_LIMIT_PER_MINUTE: '1000000', LOG_LEVEL: 'warn' }
    : { DATA_DIR: tempDataDir(), DEMO: '0', DEVICE_RATE_LIMIT_PER_MINUTE: '1000000', LOG_LEVEL: 'warn' }
  const account = await runCli(['accounts', 'create', '--name', 'streams test'], storeEnv)
  const accountId = /account (acct_\w+)/.exec(account.stdout)![1]!
  const key = await runCli(['keys', 'create', accountId, '--name', 'test', '--scopes', 'all'], storeEnv)
  token = /(hrs_pat_\w+)/.exec(key.stdout)![1]!
})
afterAll(async () => { await database.drop() })

async function deviceOn(baseUrl: string): Promise<{ id: string; key: string }> {
  const res = await fetch(`${baseUrl}/api/v1/sensors/devices`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'streamed', channels: [{ key: 't1', metric: 'temperature' }] }),
  })
  return res.json()
}

function stream(baseUrl: string, path: string, lastEventId?: string) {
  const received: { id: string; type: string; data: any }[] = []
  const source = new EventSource(baseUrl + path, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${token}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) } }),
  })
  for (const type of ['reading', 'skipped', 'dropped', 'shutdown']) {
    source.addEventListener(type, (e) => received.push({ id: (e as MessageEvent).lastEventId, type, data: JSON.parse((e as MessageEvent).data) }))
  }
  const opened = new Promise<void>((resolve) => { source.onopen = () => resolve() })
  return { source, received, opened }
}

/** Posts one reading per request until stopped; returns the ids of those acknowledged (202). */
function load(baseUrl: string, device: { id: string; key: string }, base: number) {
  const acknowledged: string[] = []
  let running = true
  const done = (async () => {
    for (let i = 0; running; i++) {
      const ts = base + i
      const res = await fetch(`${baseUrl}/api/v1/sensors/readings`, { method: 'POST', headers: { authorization: `Bearer ${device.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings: [{ channel: 't1', value: i, ts }] }) }).catch(() => undefined)
      if (res?.status === 202) acknowledged.push(`${ts}:${device.id}:t1`)
    }
  })()
  return { acknowledged, async stop() { running = false; await done } }
}

async function crossProcess(extraEnv: Record<string, string | undefined>, settleMs = 0) {
  const a = await startServer({ ...storeEnv, ...extraEnv })
  const b = await startServer({ ...storeEnv, ...extraEnv })
  try {
    // Past its first 2 s a process publishes its batches only once it has heard that another holds streams.
    await Bun.sleep(settleMs)
    const device = await deviceOn(a.baseUrl)
    const onB = stream(b.baseUrl, `/api/v1/environment/readings/stream?device_id=${device.id}`)
    const onA = stream(a.baseUrl, `/api/v1/environment/readings/stream?device_id=${device.id}`)
    await Promise.all([onA.opened, onB.opened])
    const loader = load(a.baseUrl, device, Date.now() - 600_000)
    await Bun.sleep(1_500)
    await loader.stop()
    expect(loader.acknowledged.length).toBeGreaterThan(10)
    await waitFor(async () => onB.received.length >= loader.acknowledged.length && onA.received.length >= loader.acknowledged.length, 15_000).catch(() => {})
    await Bun.sleep(500)
    // Exactly once each, on both processes' streams.
    for (const held of [onA, onB]) {
      expect(held.received.map((r) => r.id).sort()).toEqual([...loader.acknowledged].sort())
    }
    onA.source.close()
    onB.source.close()
  } finally {
    await Promise.all([a.stop('SIGTERM'), b.stop('SIGTERM')])
  }
}

describe.skipIf(!shared)('a reading accepted by one process reaches streams on another', () => {
  test('without the ingest log (Redis pub/sub)', async () => {
    await crossProcess({})
  }, 120_000)

  test('without the ingest log, with processes that have run long enough to publish only when told someone listens', async () => {
    await crossProcess({}, 3_000)
  }, 120_000)

  test('a process started after the stream was opened asks who listens, and publishes to it past its first seconds', async () => {
    const b = await startServer(storeEnv)
    let a: Child | undefined
    try {
      const device = await deviceOn(b.baseUrl)
      const onB = stream(b.baseUrl, `/api/v1/environment/readings/stream?device_id=${device.id}`)
      await onB.opened
      a = await startServer(storeEnv)
      // Past the 2 s in which a new process publishes every batch before it has heard the answers.
      await Bun.sleep(3_000)
      const loader = load(a.baseUrl, device, Date.now() - 600_000)
      await Bun.sleep(1_000)
      await loader.stop()
      await waitFor(async () => onB.received.length >= loader.acknowledged.length, 15_000).catch(() => {})
      expect(loader.acknowledged.length).toBeGreaterThan(10)
      expect(onB.received.map((r) => r.id).sort()).toEqual([...loader.acknowledged].sort())
      onB.source.close()
    } finally {
      await Promise.all([b.stop('SIGTERM'), a?.stop('SIGTERM')])
    }
  }, 120_000)

  describe.skipIf(!NATS_SERVER)('with the ingest log', () => {
    let nats: NatsDeployment
    beforeAll(async () => { nats = await startNats(1) })
    afterAll(async () => { await nats?.close() })
    test('through the log\'s subjects', async () => {
      await crossProcess({ INGEST_LOG: nats.servers, INGEST_LOG_STREAM: `HRS_STREAMS_${Date.now().toString(36).toUpperCase()}`, INGEST_LOG_SUBJECT_PREFIX: `streams${Date.now().toString(36)}` })
    }, 120_000)
  })
})

describe('restarts and shutdowns', () => {
  test('the process holding a stream is killed -9 mid-load: resumed elsewhere, every acknowledged reading arrives at least once', async () => {
    // Embedded mode has one process: the load goes to the one that is killed, and the resume is on its restart.
    let holder: Child = await startServer(storeEnv)
    const ingestAt = shared ? await startServer(storeEnv) : undefined
    try {
      const device = await deviceOn(holder.baseUrl)
      const first = stream(holder.baseUrl, `/api/v1/environment/readings/stream?device_id=${device.id}`)
      await first.opened
      const loader = load((ingestAt ?? holder).baseUrl, device, Date.now() - 600_000)
      await waitFor(async () => first.received.length >= 20, 15_000)
      holder.proc.kill('SIGKILL')
      await holder.proc.exited
      first.source.close()
      const lastId = first.received.at(-1)!.id
      if (ingestAt) await Bun.sleep(500)
      await loader.stop()
      holder = await startServer(storeEnv)
      const resumed = stream(holder.baseUrl, `/api/v1/environment/readings/stream?device_id=${device.id}`, lastId)
      await resumed.opened
      const seen = () => new Set([...first.received, ...resumed.received].map((r) => r.id))
      await waitFor(async () => loader.acknowledged.every((id) => seen().has(id)), 20_000).catch(() => {})
      const missing = loader.acknowledged.filter((id) => !seen().has(id))
      expect(missing).toEqual([])
      expect(resumed.received.some((r) => r.type === 'skipped')).toBe(false)
      resumed.source.close()
    } finally {
      await Promise.all([holder.stop('SIGTERM'), ingestAt?.stop('SIGTERM')])
    }
  }, 180_000)

  test('SIGTERM ends open streams with a shutdown event and the process exits 0', async () => {
    const server = await startServer(storeEnv)
    const held = stream(server.baseUrl, '/api/v1/events/stream')
    await held.opened
    const code = await server.stop('SIGTERM')
    expect(held.received.map((r) => r.type)).toContain('shutdown')
    expect(code).toBe(0)
    held.source.close()
  }, 120_000)
})
