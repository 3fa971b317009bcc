// The load generator, run as its own process (`bun bench/load/generator.ts <config json>`) so that the process
// under test never shares an event loop with the one driving it. Keep-alive fetch from N lanes (closed loop:
// each lane sends its next request when the previous one is answered), or a paced open loop (requests are
// scheduled at a fixed rate whatever the answers do, and latency counts from the scheduled time, so a stall
// is not hidden by coordinated omission).
//
// A `plan` (closed loop only) replaces the one fixed request with named steps: a weighted mix, list walks that
// follow `next_cursor`, a fresh Idempotency-Key per request with some replays, If-Match from a lane's earlier
// answer; each step gets its own statuses and latency. Answers are read as text and scanned, never parsed as
// JSON, so the generator stays cheap beside the server on a small machine.
//
// It prints `mark start` and `mark end` on stdout when the measured window opens and closes (the parent samples
// the server's CPU then), and one `result {json}` line at the end.

import { connectDevice, type WireConnection } from '../lib/mqtt-wire.ts'

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
  /**
   * The same readings as `readings`, as InfluxDB line protocol (`readings,device=d<key>,channel=c0 value=1.5 <ms>`)
   * for a peer's /write: the device is the lane's key, as the API knows it from the device key.
   */
  /** `measurement`: the lines' measurement (default `readings`; QuestDB makes a table of that name). */
  | { kind: 'line-protocol'; perRequest: number; channels: number; tsBase: number; measurement?: string }

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
  /**
   * Each request takes the next key in turn, whatever its lane: a few connections speak for many devices (more
   * keys than lanes). Only for requests without readings timestamps (GETs, fixed bodies): lanes no longer own keys.
   */
  rotateKeys?: boolean
  /** How the key travels: an Authorization header, or `?key=` for /sensors/ping. */
  auth: 'header' | 'query' | 'none'
  /** Read `accepted` from each 2xx JSON answer (readings endpoints); otherwise count the body's readings. */
  countAccepted: boolean
  /** How long to wait for requests still in flight when the window closes. */
  drainMs: number
  /**
   * Requests from a plan instead of `method` and `body` at `url` (which is then the base the steps' paths are
   * appended to). Closed loop only: a lane's next request may depend on its previous answer.
   */
  plan?: RequestPlan
  /**
   * Over MQTT instead of HTTP (`url` unused): each lane holds its own connection as device `deviceIds[key]` and
   * publishes its readings body at QoS 1 to `devices/{id}/readings`; an answer is the PUBACK, its readings the body's.
   */
  mqtt?: { url: string; deviceIds: string[] }
}

export interface RequestPlan {
  steps: PlanStep[]
}

/** One kind of request in a plan. `{id}` in `path` and `body` is replaced by the lane's next value of `ids`. */
export interface PlanStep {
  /** Its statuses and latency are reported under this name. */
  name: string
  /** Share of the mix, a whole number (e.g. a percentage); default 1. Lanes interleave the steps evenly. */
  weight?: number
  method: 'GET' | 'POST' | 'PATCH'
  /** Appended to `url`. */
  path: string
  ids?: string[]
  /** A JSON body (sent with content-type application/json). */
  body?: string
  /** Statuses that answer the step as it should; default [200]. */
  ok?: number[]
  /** Expected statuses that are not a success (a 412 when two lanes PATCH the same record): counted apart, not errors. */
  tolerated?: number[]
  /**
   * Walk a list: each request asks for the page after the lane's previous answer (`cursor=` its `next_cursor`),
   * from the first page again after the last. Items are counted by occurrences of `itemMarker` (a string each
   * item holds once), so every full walk's length can be checked.
   */
  walk?: { itemMarker: string }
  /**
   * A fresh Idempotency-Key per request; `replayShare` (0…1) of the requests instead repeat one of the lane's
   * acknowledged keys with its body. With `replayHeader`, a replay must answer `Idempotent-Replayed: true` and a
   * fresh key must not.
   */
  idempotency?: { replayShare: number; replayHeader: boolean }
  /** Keep the answer's ETag (with the id asked for), for the lane's next `ifMatch` step. */
  keepEtag?: boolean
  /**
   * Send If-Match with the lane's kept ETag, to the record it belongs to (`{id}`). A lane with none kept runs the
   * plan's `keepEtag` step instead; a tolerated answer (412) forgets the kept one.
   */
  ifMatch?: boolean
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
  /** Plan runs only: per step and whole-run figures. */
  plan?: PlanResult
}

export interface Latency { p50: number; p90: number; p95: number; p99: number; max: number; count: number }

export interface StepResult {
  /**
   * Answers inside the window by status. A replayed Idempotency-Key answered as it should counts as
   * "<status>-replayed"; an answer that broke the plan's rules as "<status>-<what went wrong>" (an error).
   */
  statuses: Record<string, number>
  /** Answers inside the window with an ok or tolerated status (what `okRequests` counts for a plan). */
  answered: number
  tolerated: number
  /** Answers inside the window that were neither ok nor tolerated, and failed requests. */
  errors: number
  latency: Latency
}

export interface PlanResult {
  steps: Record<string, StepResult>
  /** Unexpected answers over the whole run (warm-up and drain included). */
  totalErrors: number
  /** Walk steps, whole run: full walks (first page to `next_cursor: null`) and the items and pages each counted. */
  walks: Record<string, { completed: number; itemsMin: number; itemsMax: number; pagesMax: number }>
  /** Idempotency steps, whole run: fresh keys acknowledged with an ok status (each wrote once), and replays answered. */
  idempotency: { acknowledged: number; replays: number }
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

export function readingsJson(readings: { channel: string; value: number; ts: number }[]): string {
  let s = '{"readings":['
  for (let i = 0; i < readings.length; i++) {
    const r = readings[i]!
    s += `${i ? ',' : ''}{"channel":"${r.channel}","value":${r.value},"ts":${r.ts}}`
  }
  return s + ']}'
}

export function readingsLineProtocol(device: string, readings: { channel: string; value: number; ts: number }[], measurement = 'readings'): string {
  let s = ''
  for (const r of readings) s += `${measurement},device=${device},channel=${r.channel} value=${r.value} ${r.ts}\n`
  return s
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

export async function generate(config: GeneratorConfig, mark: (what: 'start' | 'end') => void = () => {}): Promise<GeneratorResult> {
  const keyCount = Math.max(1, config.keys.length)
  const lanesPerKey = Math.ceil(config.totalLanes / keyCount)
  const counters = new Map<number, number>()
  /** With rotateKeys: requests sent so far, the next key's turn (each process starts at its first lane's key). */
  let keyTurn = config.laneOffset
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
    const key = config.keys[config.rotateKeys ? keyTurn++ % keyCount : lane % keyCount]
    const headers: Record<string, string> = {}
    let url = config.url
    if (key && config.auth === 'header') headers.authorization = `Bearer ${key}`
    if (key && config.auth === 'query') url += `${url.includes('?') ? '&' : '?'}key=${key}`
    let body: string | undefined
    let count = fixedCount
    const spec = config.body
    if (spec.kind === 'fixed') body = spec.text
    else if (spec.kind === 'readings' || spec.kind === 'line-protocol') {
      const k = counters.get(lane) ?? 0
      counters.set(lane, k + 1)
      const readings = readingsOf({ ...spec, kind: 'readings' }, lane, k, lanesPerKey, keyCount)
      body = spec.kind === 'readings' ? readingsJson(readings) : readingsLineProtocol(`d${lane % keyCount}`, readings, spec.kind === 'line-protocol' ? spec.measurement : undefined)
      count = spec.perRequest
    }
    if (body !== undefined) headers['content-type'] = spec.kind === 'line-protocol' ? 'text/plain; charset=utf-8' : 'application/json'
    return { url, init: { method: config.method, headers, body, keepalive: true }, count }
  }

  /** Counts one answer (`ok`: toward throughput, latency and the timeline); says whether it fell in the window. */
  function record(status: string, ok: boolean, accepted: number, scheduled: number, done: number): boolean {
    if (ok) { totalOkRequests++; totalReadings += accepted }
    if (!measuring || done > windowEnd) return false
    requests++
    statuses[status] = (statuses[status] ?? 0) + 1
    if (ok) {
      okRequests++
      readings += accepted
      if (scheduled >= windowStart) { latencies.push(done - scheduled); stamped.push([done, done - scheduled]) }
    }
    return true
  }

  async function single(lane: number, scheduled: number): Promise<void> {
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
    record(status, status[0] === '2', accepted, scheduled, performance.now())
  }

  /** One MQTT connection per lane, made on its first publish (during the warm-up). */
  const connections = new Map<number, Promise<WireConnection>>()
  function connectionOf(lane: number): Promise<WireConnection> {
    let connection = connections.get(lane)
    if (!connection) {
      connection = connectDevice(config.mqtt!.url, `lane${lane}`, config.keys[lane % keyCount]!)
      connections.set(lane, connection)
    }
    return connection
  }
  async function publish(lane: number, scheduled: number): Promise<void> {
    const { init, count } = requestFor(lane)
    const deviceId = config.mqtt!.deviceIds[lane % keyCount]!
    let status = 'puback'
    try {
      const connection = await connectionOf(lane)
      const code = await connection.publish(`devices/${deviceId}/readings`, init.body as string)
      // MQTT 5: a reason code of 0x80 or more refuses the publish (-1: the connection closed first).
      if (code < 0 || code >= 0x80) { status = 'error'; firstError ??= `PUBACK reason code ${code}` }
    } catch (error) {
      status = 'error'
      firstError ??= String(error)
    }
    record(status, status === 'puback', status === 'puback' ? count : 0, scheduled, performance.now())
  }

  if (config.plan && config.mode !== 'closed') throw new Error('a plan runs in closed loop only (a lane follows its own answers)')
  const plan = config.plan ? planRunner(config, config.plan, record, (message) => { firstError ??= message }, () => windowStart) : undefined
  const once = plan ? plan.once : config.mqtt ? publish : single

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
  for (const connection of connections.values()) void connection.then((client) => client.close(), () => {})

  const timeline: GeneratorResult['timeline'] = []
  for (let second = 0; second < Math.ceil(config.durationMs / 1000); second++) {
    const from = windowStart + second * 1000
    const inSecond = Float64Array.from(stamped.filter(([at]) => at >= from && at < from + 1000).map(([, ms]) => ms)).sort()
    timeline.push({ second, answers: inSecond.length, p50: percentile(inSecond, 50), p99: percentile(inSecond, 99) })
  }
  return {
    statuses, requests, okRequests, readings, totalReadings, totalOkRequests, late, firstError, timeline,
    windowMs: config.durationMs,
    latency: latencyOf(latencies),
    cpu: (cpuEnd - cpuStart) / config.durationMs,
    plan: plan?.result(),
  }
}

function latencyOf(values: number[]): Latency {
  const sorted = Float64Array.from(values).sort()
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p95: percentile(sorted, 95), p99: percentile(sorted, 99), max: sorted.length ? sorted[sorted.length - 1]! : NaN, count: sorted.length }
}

/** `parts` joined by `id`: a path or body split once at its `{id}` placeholders. */
const fill = (parts: string[], id: string | undefined) => parts.length === 1 ? parts[0]! : parts.join(id ?? '')

/** Occurrences of `marker` in `text` (items in a page), without allocating. */
function occurrences(text: string, marker: string): number {
  let n = 0
  for (let at = text.indexOf(marker); at !== -1; at = text.indexOf(marker, at + marker.length)) n++
  return n
}

const CURSOR_FIELD = '"next_cursor":'
/** A page's next_cursor: a string, null after the last page, undefined when the answer has none (not a list). */
function nextCursorOf(text: string): string | null | undefined {
  const at = text.lastIndexOf(CURSOR_FIELD)
  if (at === -1) return undefined
  const value = at + CURSOR_FIELD.length
  if (text.startsWith('null', value)) return null
  if (text.charCodeAt(value) !== 34 /* " */) return undefined
  return text.slice(value + 1, text.indexOf('"', value + 1)) // base64url: nothing to unescape
}

/**
 * The order a lane takes the steps in: each step `weight` times per cycle, spread out evenly (smooth weighted
 * round robin), so that even a short window sees the mix.
 */
function mixOf(weights: number[]): number[] {
  const total = weights.reduce((a, b) => a + b, 0)
  const current = weights.map(() => 0)
  const order: number[] = []
  for (let i = 0; i < total; i++) {
    let best = 0
    for (let s = 0; s < weights.length; s++) { current[s]! += weights[s]!; if (current[s]! > current[best]!) best = s }
    current[best]! -= total
    order.push(best)
  }
  return order
}

/** What a lane remembers between its requests. */
interface LaneState {
  /** Requests sent (its position in the mix). */
  sent: number
  /** Per step: values of `ids` used so far. */
  idTurns: number[]
  /** Per walk step: the cursor of the next page (undefined: the first page), and the walk's items and pages so far. */
  cursors: (string | undefined)[]
  walkItems: number[]
  walkPages: number[]
  /** The ETag of the record this lane read last (keepEtag), for its next ifMatch step. */
  etag?: { id: string; tag: string }
  /** Per idempotency step: the lane's latest acknowledged keys with their bodies (a ring), for replays. */
  acknowledged: { key: string; body: string | undefined }[][]
  acknowledgedCount: number[]
  freshKeys: number
}

const RECENT_KEYS = 64

type Recorder = (status: string, ok: boolean, accepted: number, scheduled: number, done: number) => boolean

/** Sends a plan's requests lane by lane and keeps each step's figures. */
function planRunner(config: GeneratorConfig, plan: RequestPlan, record: Recorder, fail: (message: string) => void, windowStart: () => number) {
  if (!plan.steps.length) throw new Error('a plan needs at least one step')
  const steps = plan.steps.map((step) => ({
    step,
    pathParts: step.path.split('{id}'),
    bodyParts: step.body?.split('{id}'),
    ok: new Set(step.ok ?? [200]),
    tolerated: new Set(step.tolerated ?? []),
    statuses: {} as Record<string, number>,
    answered: 0, toleratedCount: 0, errors: 0,
    latencies: [] as number[],
    walks: { completed: 0, itemsMin: Infinity, itemsMax: 0, pagesMax: 0 },
    replayCredit: 0,
  }))
  const keeper = plan.steps.findIndex((s) => s.keepEtag)
  if (plan.steps.some((s) => s.ifMatch) && keeper === -1) throw new Error('an ifMatch step needs a keepEtag step in the same plan')
  const order = mixOf(plan.steps.map((s) => Math.max(1, Math.round(s.weight ?? 1))))
  // Unique across generator processes (lane numbers are global) and across runs.
  const runId = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
  const keyCount = Math.max(1, config.keys.length)
  const lanes = new Map<number, LaneState>()
  const totals = { errors: 0, acknowledged: 0, replays: 0 }

  const laneState = (lane: number): LaneState => {
    let state = lanes.get(lane)
    if (!state) {
      const none = () => steps.map(() => 0)
      state = {
        sent: 0, idTurns: none(), cursors: steps.map(() => undefined), walkItems: none(), walkPages: none(),
        acknowledged: steps.map(() => []), acknowledgedCount: none(), freshKeys: 0,
      }
      lanes.set(lane, state)
    }
    return state
  }

  async function once(lane: number, scheduled: number): Promise<void> {
    const state = laneState(lane)
    let index = order[(state.sent++ + lane) % order.length]!
    if (plan.steps[index]!.ifMatch && !state.etag) index = keeper
    const s = steps[index]!
    const { step } = s

    let id: string | undefined
    if (step.ifMatch) id = state.etag!.id
    else if (step.ids?.length) id = step.ids[(state.idTurns[index]!++ * config.totalLanes + lane) % step.ids.length]
    let url = config.url + fill(s.pathParts, id)
    const cursor = step.walk ? state.cursors[index] : undefined
    if (cursor !== undefined) url += `${url.includes('?') ? '&' : '?'}cursor=${cursor}`
    let body = s.bodyParts && fill(s.bodyParts, id)

    const headers: Record<string, string> = {}
    const token = config.keys[lane % keyCount]
    if (token && config.auth === 'header') headers.authorization = `Bearer ${token}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (step.ifMatch) headers['if-match'] = state.etag!.tag
    let replay = false
    if (step.idempotency) {
      const recent = state.acknowledged[index]!
      // The share is kept per step over the whole process (a lane alone may send too few requests to reach one).
      s.replayCredit += step.idempotency.replayShare
      if (recent.length && s.replayCredit >= 1) {
        s.replayCredit -= 1
        const earlier = recent[state.sent % recent.length]!
        headers['idempotency-key'] = earlier.key
        body = earlier.body
        replay = true
      } else {
        headers['idempotency-key'] = `${runId}-${lane}-${state.freshKeys++}`
      }
    }

    let status: string
    let good = false
    let tolerated = false
    try {
      const res = await fetch(url, { method: step.method, headers, body, keepalive: true })
      status = String(res.status)
      good = s.ok.has(res.status)
      tolerated = s.tolerated.has(res.status)
      const text = good && !step.walk ? (await res.arrayBuffer(), '') : await res.text()
      if (!good && !tolerated) fail(`${step.name}: ${step.method} ${url} answered ${res.status} ${text.slice(0, 300)}`)
      if (good && step.idempotency?.replayHeader) {
        const marked = res.headers.get('idempotent-replayed') === 'true'
        if (replay !== marked) { status += replay ? '-replay-unmarked' : '-fresh-marked-replayed'; good = false; fail(`${step.name}: ${status} for key ${headers['idempotency-key']}`) }
      }
      if (good && step.walk) {
        const next = nextCursorOf(text)
        if (next === undefined) { status += '-no-next-cursor'; good = false; fail(`${step.name}: an answer without next_cursor: ${text.slice(0, 300)}`) }
        else {
          state.walkItems[index]! += occurrences(text, step.walk.itemMarker)
          state.walkPages[index]!++
          state.cursors[index] = next ?? undefined
          if (next === null) {
            const w = s.walks
            w.completed++
            w.itemsMin = Math.min(w.itemsMin, state.walkItems[index]!)
            w.itemsMax = Math.max(w.itemsMax, state.walkItems[index]!)
            w.pagesMax = Math.max(w.pagesMax, state.walkPages[index]!)
            state.walkItems[index] = 0
            state.walkPages[index] = 0
          }
        }
      }
      if (good && step.keepEtag && id !== undefined) { const tag = res.headers.get('etag'); state.etag = tag ? { id, tag } : undefined }
      if (step.ifMatch) {
        const tag = good ? res.headers.get('etag') : null
        state.etag = tag ? { id: id!, tag } : undefined
      }
      if (good && step.idempotency) {
        // Replays are told apart in the statuses, so that a window's writes are its plain ok answers.
        if (replay) { totals.replays++; status += '-replayed' }
        else {
          totals.acknowledged++
          state.acknowledged[index]![state.acknowledgedCount[index]!++ % RECENT_KEYS] = { key: headers['idempotency-key']!, body }
        }
      }
    } catch (error) {
      status = 'error'
      fail(`${step.name}: ${String(error)}`)
    }
    // A walk that went wrong starts again from the first page (its count would not be a whole walk's).
    if (step.walk && !good) { state.cursors[index] = undefined; state.walkItems[index] = 0; state.walkPages[index] = 0 }

    const expected = good || tolerated
    if (!expected) totals.errors++
    const done = performance.now()
    if (!record(status, expected, 0, scheduled, done)) return
    s.statuses[status] = (s.statuses[status] ?? 0) + 1
    if (!expected) { s.errors++; return }
    s.answered++
    if (tolerated) s.toleratedCount++
    if (scheduled >= windowStart()) s.latencies.push(done - scheduled)
  }

  function result(): PlanResult {
    const out: PlanResult = { steps: {}, totalErrors: totals.errors, walks: {}, idempotency: { acknowledged: totals.acknowledged, replays: totals.replays } }
    for (const s of steps) {
      out.steps[s.step.name] = { statuses: s.statuses, answered: s.answered, tolerated: s.toleratedCount, errors: s.errors, latency: latencyOf(s.latencies) }
      if (s.step.walk) out.walks[s.step.name] = { ...s.walks, itemsMin: s.walks.completed ? s.walks.itemsMin : 0 }
    }
    return out
  }

  return { once, result }
}

if (import.meta.main) {
  const config = JSON.parse(process.argv[2] ?? '{}') as GeneratorConfig
  const result = await generate(config, (what) => console.log(`mark ${what}`))
  console.log(`result ${JSON.stringify(result)}`)
  process.exit(0)
}
