// The load generator, run as its own process (`bun bench/load/generator.ts <config json>`) so that the process
// under test never shares an event loop with the one driving it. Keep-alive fetch from N lanes (closed loop:
// each lane sends its next request when the previous one is answered), or a paced open loop (requests are
// scheduled at a fixed rate whatever the answers do, and latency counts from the scheduled time, so a stall
// is not hidden by coordinated omission).
//
// It prints `mark start` and `mark end` on stdout when the measured window opens and closes (the parent samples
// the server's CPU then), and one `result {json}` line at the end.

export type BodySpec =
  | { kind: 'none' }
  /** The same body every time (the discarding store and the bare servers keep nothing). */
  | { kind: 'fixed'; text: string }
  /**
   * Readings `{ channel: c<j % channels>, value, ts }`, unique per (key, channel, ts) across every request of the
   * run: lanes sharing a key take interleaved timestamp slots. The store baselines write the same rows
   * through readingsOf().
   */
  | { kind: 'readings'; perRequest: number; channels: number; tsBase: number }

export interface GeneratorConfig {
  url: string
  method: 'GET' | 'POST'
  /** Lanes in this process (closed loop) or the cap on requests in flight (open loop). */
  lanes: number
  /** Lane numbers in the whole run start here (several generator processes split the lanes). */
  laneOffset: number
  /** Lanes in the whole run (for timestamp interleaving). */
  totalLanes: number
  warmupMs: number
  durationMs: number
  mode: 'closed' | 'open'
  /** Open loop: requests per second from this process. */
  rate?: number
  body: BodySpec
  /** Keys, one per lane in the whole run or fewer (lanes share them round-robin); empty for no auth. */
  keys: string[]
  /** How the key travels: an Authorization header, or `?key=` for /sensors/ping. */
  auth: 'header' | 'query' | 'none'
  /** Read `accepted` from each 2xx JSON answer (readings endpoints); otherwise count the body's readings. */
  countAccepted: boolean
  /** How long to wait for requests still in flight when the window closes. */
  drainMs: number
}

export interface GeneratorResult {
  /** Requests answered inside the measured window, by status ("error" for a failed fetch). */
  statuses: Record<string, number>
  requests: number
  okRequests: number
  /** Readings acknowledged inside the window. */
  readings: number
  /** Readings acknowledged over the whole run (warm-up and drain included): what the store must hold. */
  totalReadings: number
  totalOkRequests: number
  windowMs: number
  /** Latency in ms of 2xx answers inside the window (open loop: from the scheduled send time). */
  latency: { p50: number; p90: number; p95: number; p99: number; max: number; count: number }
  /** This process's CPU time over the window ÷ window length (1.0 = one core busy; fetch has its own thread). */
  cpu: number
  /** Open loop: requests that could not be sent on time because `lanes` were all in flight. */
  late: number
  /** Per second of the window: answers and their p50/p99 latency (shows whether a tail is one stall or steady). */
  timeline: { second: number; answers: number; p50: number; p99: number }[]
  firstError?: string
}

/** The readings of request `k` of global lane `lane` (the same rows the store baselines write). */
export function readingsOf(spec: Extract<BodySpec, { kind: 'readings' }>, lane: number, k: number, lanesPerKey: number, keyCount: number): { channel: string; value: number; ts: number }[] {
  const sub = Math.floor(lane / keyCount) // this lane's slot among the lanes sharing its key
  const tsPerRequest = Math.ceil(spec.perRequest / spec.channels)
  const first = spec.tsBase + (k * lanesPerKey + sub) * tsPerRequest
  const out = new Array<{ channel: string; value: number; ts: number }>(spec.perRequest)
  for (let j = 0; j < spec.perRequest; j++) {
    out[j] = { channel: `c${j % spec.channels}`, value: ((k * 31 + j * 7) % 1000) / 10, ts: first + Math.floor(j / spec.channels) }
  }
  return out
}

function readingsJson(readings: { channel: string; value: number; ts: number }[]): string {
  let s = '{"readings":['
  for (let i = 0; i < readings.length; i++) {
    const r = readings[i]!
    s += `${i ? ',' : ''}{"channel":"${r.channel}","value":${r.value},"ts":${r.ts}}`
  }
  return s + ']}'
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

export async function generate(config: GeneratorConfig, mark: (what: 'start' | 'end') => void = () => {}): Promise<GeneratorResult> {
  const keyCount = Math.max(1, config.keys.length)
  const lanesPerKey = Math.ceil(config.totalLanes / keyCount)
  const counters = new Map<number, number>()
  const latencies: number[] = []
  /** [completion time, latency] of each answer in the window, for the per-second timeline. */
  const stamped: [number, number][] = []
  const statuses: Record<string, number> = {}
  let requests = 0, okRequests = 0, readings = 0, totalReadings = 0, totalOkRequests = 0, late = 0
  let firstError: string | undefined
  let measuring = false
  let stopped = false

  const start = performance.now()
  const windowStart = start + config.warmupMs
  const windowEnd = windowStart + config.durationMs

  // Readings a request carries when the answer does not say (fixed bodies, GET query strings): counted once.
  const fixedCount = config.body.kind === 'fixed' ? (config.body.text.match(/"channel"/g) ?? []).length
    : config.body.kind === 'none' ? (config.url.match(/[?&](?!key=)[^=&]+=/g) ?? []).length : 0

  function requestFor(lane: number): { url: string; init: RequestInit; count: number } {
    const key = config.keys[lane % keyCount]
    const headers: Record<string, string> = {}
    let url = config.url
    if (key && config.auth === 'header') headers.authorization = `Bearer ${key}`
    if (key && config.auth === 'query') url += `${url.includes('?') ? '&' : '?'}key=${key}`
    let body: string | undefined
    let count = fixedCount
    const spec = config.body
    if (spec.kind === 'fixed') body = spec.text
    else if (spec.kind === 'readings') {
      const k = counters.get(lane) ?? 0
      counters.set(lane, k + 1)
      body = readingsJson(readingsOf(spec, lane, k, lanesPerKey, keyCount))
      count = spec.perRequest
    }
    if (body !== undefined) headers['content-type'] = 'application/json'
    return { url, init: { method: config.method, headers, body, keepalive: true }, count }
  }

  async function once(lane: number, scheduled: number): Promise<void> {
    const { url, init, count } = requestFor(lane)
    let status: string
    let accepted = 0
    try {
      const res = await fetch(url, init)
      status = String(res.status)
      if (res.ok && config.countAccepted) {
        const answer = (await res.json()) as { accepted?: number }
        accepted = answer.accepted ?? 0
      } else {
        const text = await res.text()
        if (res.ok) accepted = count
        else firstError ??= `${res.status} ${text.slice(0, 300)}`
      }
    } catch (error) {
      status = 'error'
      firstError ??= String(error)
    }
    const done = performance.now()
    const ok = status[0] === '2'
    if (ok) { totalOkRequests++; totalReadings += accepted }
    if (measuring && done <= windowEnd) {
      requests++
      statuses[status] = (statuses[status] ?? 0) + 1
      if (ok) {
        okRequests++
        readings += accepted
        if (scheduled >= windowStart) { latencies.push(done - scheduled); stamped.push([done, done - scheduled]) }
      }
    }
  }

  const cpuAt = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000 }
  let cpuStart = 0, cpuEnd = 0
  const windowTimer = setTimeout(() => { measuring = true; cpuStart = cpuAt(); mark('start') }, config.warmupMs)
  const endTimer = setTimeout(() => { stopped = true; cpuEnd = cpuAt(); mark('end') }, config.warmupMs + config.durationMs)

  const inFlight = new Set<Promise<void>>()
  if (config.mode === 'closed') {
    const lane = async (index: number) => {
      while (!stopped) await once(index, performance.now())
    }
    const lanes = Array.from({ length: config.lanes }, (_, i) => lane(config.laneOffset + i))
    await Promise.race([Promise.all(lanes), new Promise((r) => setTimeout(r, config.warmupMs + config.durationMs + config.drainMs))])
  } else {
    const rate = config.rate ?? 100
    const interval = 1000 / rate
    let issued = 0
    let next = 0
    await new Promise<void>((resolve) => {
      const tick = () => {
        const now = performance.now()
        if (stopped) { resolve(); return }
        // Every request whose time has come is sent now, each stamped with its own scheduled time.
        while (start + issued * interval <= now) {
          const scheduled = start + issued * interval
          issued++
          if (inFlight.size >= config.lanes) { if (measuring) late++; continue }
          const lane = config.laneOffset + (next++ % config.lanes)
          const p = once(lane, scheduled).finally(() => inFlight.delete(p))
          inFlight.add(p)
        }
        setTimeout(tick, Math.max(0, Math.min(1, start + issued * interval - performance.now())))
      }
      tick()
    })
    await Promise.race([Promise.all(inFlight), new Promise((r) => setTimeout(r, config.drainMs))])
  }
  clearTimeout(windowTimer)
  clearTimeout(endTimer)
  if (!cpuEnd) cpuEnd = cpuAt()

  const sorted = Float64Array.from(latencies).sort()
  const timeline: GeneratorResult['timeline'] = []
  for (let second = 0; second < Math.ceil(config.durationMs / 1000); second++) {
    const from = windowStart + second * 1000
    const inSecond = Float64Array.from(stamped.filter(([at]) => at >= from && at < from + 1000).map(([, ms]) => ms)).sort()
    timeline.push({ second, answers: inSecond.length, p50: percentile(inSecond, 50), p99: percentile(inSecond, 99) })
  }
  return {
    statuses, requests, okRequests, readings, totalReadings, totalOkRequests, late, firstError, timeline,
    windowMs: config.durationMs,
    latency: { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p95: percentile(sorted, 95), p99: percentile(sorted, 99), max: sorted.length ? sorted[sorted.length - 1]! : NaN, count: sorted.length },
    cpu: (cpuEnd - cpuStart) / config.durationMs,
  }
}

if (import.meta.main) {
  const config = JSON.parse(process.argv[2] ?? '{}') as GeneratorConfig
  const result = await generate(config, (what) => console.log(`mark ${what}`))
  console.log(`result ${JSON.stringify(result)}`)
  process.exit(0)
}
