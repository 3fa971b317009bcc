// Event streams under ingest load (issue 59): the ingest-postgres load (closed loop, SQL store on Postgres) with
// 1,000 readings-stream subscribers held on the server ÷ the same load with none, alternating, twice each. Of the
// subscribers, 10 follow one load device each (every reading of it reaches them) and 990 follow a channel nobody
// writes (what idle dashboards cost: the fan-out's filter for every batch, a heartbeat now and then); one more
// follows a probe device that posts one reading every 50 ms with its own time: delivery latency is from the
// probe's 202 to the event at the subscriber (both in this process). Server memory per idle subscriber is the
// server's RSS after opening the 1,000 streams less before, ÷ 1,000. The issue asks for this beside the
// ingest-questdb load; this uses ingest-postgres's, which runs without a QuestDB.
import { readFileSync } from 'node:fs'
import { pidsNamed } from '../lib/load.ts'
import { line, needsLocalServer, type Scenario } from '../lib/report.ts'
import { cleanRedis, freshDatabase, serverEnv } from '../lib/setup.ts'
import { driveIngest, ingestSettings, type IngestRun } from './ingest-postgres.ts'

const NAME = 'stream'
const SUBSCRIBERS = 1000
const FOLLOWING_LOAD = 10
const PROBE_EVERY_MS = 50

/** The resident memory (VmRSS) of the process listening on `port`, in bytes. */
function rssOfServerOn(port: number): number {
  const out = Bun.spawnSync(['ss', '-ltnpH', `sport = :${port}`]).stdout.toString()
  const pid = Number(/pid=(\d+)/.exec(out)?.[1])
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024
}

/**
 * One subscriber on a socket of its own (fetch would share Bun's pool of 256 connections, and the 257th stream would
 * wait for ever): sends the request and calls `onEvent` with each event's id as it arrives.
 */
async function subscribe(url: string, token: string, signal: AbortSignal, onEvent: (id: string) => void): Promise<void> {
  const { hostname, port, pathname, search } = new URL(url)
  const decoder = new TextDecoder()
  let buffer = ''
  let opened!: () => void
  let failed!: (error: Error) => void
  const ready = new Promise<void>((resolve, reject) => { opened = resolve; failed = reject })
  const socket = await Bun.connect({
    hostname, port: Number(port),
    socket: {
      data(_socket, chunk) {
        buffer += decoder.decode(chunk, { stream: true })
        if (buffer.startsWith('HTTP/1.1 ')) {
          if (!buffer.startsWith('HTTP/1.1 200')) return failed(new Error(`stream answered ${buffer.slice(0, 200)}`))
          const head = buffer.indexOf('\r\n\r\n')
          if (head < 0) return
          buffer = buffer.slice(head + 4)
          opened()
        }
        let at: number
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const id = /^id: (.*)$/m.exec(buffer.slice(0, at))?.[1]
          buffer = buffer.slice(at + 2)
          if (id) onEvent(id)
        }
      },
      error(_socket, error) { failed(error) },
    },
  })
  signal.addEventListener('abort', () => socket.end(), { once: true })
  socket.write(`GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`)
  await ready
}

interface Measured { subscribers: number; readingsPerSecond: number; cpuPerReading: number; latencies: number[]; rssPerSubscriber?: number; delivered: number }

export const stream: Scenario = async (ctx) => {
  if (ctx.options.target) return needsLocalServer()
  const runs: Measured[] = []
  for (const subscribers of [0, SUBSCRIBERS, 0, SUBSCRIBERS]) {
    const database = await freshDatabase(`stream_${subscribers}`)
    const env = serverEnv(database, { ...ingestSettings(), STREAMS_PER_ACCOUNT: String(SUBSCRIBERS + 10) })
    const stop = new AbortController()
    const acked = new Map<string, number>()
    const latencies: number[] = []
    let delivered = 0
    let rssPerSubscriber: number | undefined
    let probing: Promise<void> | undefined
    let run: IngestRun | undefined
    try {
      run = await driveIngest(ctx, env, { postgres: () => pidsNamed('postgres') }, `${NAME} (${subscribers} subscribers)`, async (setup) => {
        if (!subscribers) return
        const port = Number(new URL(setup.baseUrl).port)
        const streamUrl = `${setup.baseUrl}/api/v1/environment/readings/stream`
        const probe = await (await fetch(`${setup.baseUrl}/api/v1/sensors/devices`, { method: 'POST', headers: { authorization: `Bearer ${setup.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'probe', channels: [{ key: 'p', metric: 'temperature' }] }) })).json() as { id: string; key: string }
        const before = rssOfServerOn(port)
        for (let i = 0; i < SUBSCRIBERS; i++) {
          const filter = i < FOLLOWING_LOAD ? `device_id=${setup.devices[i]!.id}` : 'channel=nobody'
          await subscribe(`${streamUrl}?${filter}`, setup.token, stop.signal, () => { delivered++ })
        }
        await Bun.sleep(1_000)
        rssPerSubscriber = (rssOfServerOn(port) - before) / SUBSCRIBERS
        await subscribe(`${streamUrl}?device_id=${probe.id}`, setup.token, stop.signal, (id) => {
          const at = acked.get(id)
          if (at !== undefined) latencies.push(performance.now() - at)
        })
        probing = (async () => {
          while (!stop.signal.aborted) {
            const ts = Date.now()
            const res = await fetch(`${setup.baseUrl}/api/v1/sensors/readings`, { method: 'POST', headers: { authorization: `Bearer ${probe.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings: [{ channel: 'p', value: 1, ts }] }) }).catch(() => undefined)
            if (res?.status === 202) acked.set(`${ts}:${probe.id}:p`, performance.now())
            await Bun.sleep(PROBE_EVERY_MS)
          }
        })()
      })
      stop.abort()
      await probing
      await run.server.stop()
      const { load } = run
      runs.push({ subscribers, readingsPerSecond: load.readingsPerSecond, cpuPerReading: (load.watched.server! * 1e6) / load.readingsPerSecond, latencies, rssPerSubscriber, delivered })
      ctx.log(`${NAME}: ${subscribers} subscribers: ${load.readingsPerSecond.toFixed(0)} readings/s${subscribers ? `, ${delivered} events to the load's followers, ${latencies.length} probe deliveries` : ''}`)
    } finally {
      stop.abort()
      await run?.server.stop()
      await database.drop()
      await cleanRedis(env.REDIS_PREFIX!)
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
  const without = runs.filter((r) => !r.subscribers)
  const withSubs = runs.filter((r) => r.subscribers)
  const latencies = withSubs.flatMap((r) => r.latencies).sort((a, b) => a - b)
  const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN
  const each = runs.map((r) => `${r.subscribers} subscribers ${r.readingsPerSecond.toFixed(0)}/s`).join('; ')
  return {
    lines: [
      line(NAME, `readings/s with ${SUBSCRIBERS} stream subscribers ÷ without (${withSubs.length} runs each, alternating)`, mean(withSubs.map((r) => r.readingsPerSecond)), mean(without.map((r) => r.readingsPerSecond)), 'rows/s', 0.9, 'target', `runs in order: ${each}; events delivered to the ${FOLLOWING_LOAD} load followers: ${withSubs.map((r) => r.delivered).join(', ')}`),
      line(NAME, 'server CPU per reading with subscribers ÷ without', mean(withSubs.map((r) => r.cpuPerReading)), mean(without.map((r) => r.cpuPerReading)), 'µs'),
      line(NAME, `delivery latency p50, 202 → event at the subscriber (probe every ${PROBE_EVERY_MS} ms, under load)`, p(0.5), undefined, 'ms'),
      line(NAME, 'delivery latency p99 (target < 250 ms)', p(0.99), undefined, 'ms', undefined, 'target', `${latencies.length} probe readings delivered`),
      line(NAME, 'server memory per idle subscriber (RSS after opening ÷ streams)', mean(withSubs.map((r) => r.rssPerSubscriber ?? NaN)) / 1024, undefined, 'KiB'),
    ],
    details: { runs: runs.map(({ latencies: l, ...r }) => ({ ...r, probes: l.length })), settings: ingestSettings() },
  }
}
