// The alert evaluator (issue 16): checks every durably written batch of readings against the alert rules of
// their series, in memory, and notices series that went quiet on a timer.
//
// - Rules of every account are held in memory, indexed by device channel and by environment + metric, so a
//   reading costs two map lookups when no rule watches it. A rule change is pushed to every process (RULES_CHANNEL).
// - A series (device, channel) of a rule is out of range below `min` or above `max`. Once it has been out for
//   `for_seconds` (by the readings' timestamps) the alert opens; it closes on the first reading back inside the
//   range narrowed by `hysteresis`. While it stays open nothing more is sent, and a series flapping around a
//   limit opens at most one alert per `for_seconds`. Readings older than the newest one evaluated for a series
//   (late or backfilled) are stored but change no state.
// - A series is stale when its newest reading is `stale_after_seconds` old by the clock; before saying so the
//   evaluator asks the readings store, which holds what every process wrote, for a newer reading.
// - Transitions are queued and written in batches, each with its webhook event, by writeTransitions: the
//   database keeps one alert open per rule, kind and series, so several processes never send one twice.
//   Processes tell each other what they opened and closed (STATE_CHANNEL) so any of them can close it.
//   Per process, and lost on restart: the time a series has been out of range so far (`for_seconds` starts again).
import { randomUUID } from 'node:crypto'
import type { Db } from '../../../db/client.ts'
import type { Reading, ReadingsStore } from '../../../ingest/stores/interface.ts'
import type { SharedStore } from '../../kv/interface.ts'
import type { Logger } from '../../log.ts'
import { newId } from '../../ids.ts'
import { DEVICE_CHANNEL, RULES_CHANNEL, STATE_CHANNEL } from '../../kv/channels.ts'
import { loadRules, snapshotOf, writeTransitions, type AlertRow, type AlertRuleRow, type Transition } from './rows.ts'


export interface EvaluatorOptions {
  db: Db
  shared: SharedStore
  readings: ReadingsStore
  log: Logger
  /** Epoch milliseconds; tests inject one to make a series stale without waiting. */
  now?: () => number
  /** How often silent series are looked for (default 5 s). */
  staleCheckMs?: number
  /** How long transitions gather before they are written (default 100 ms). */
  flushMs?: number
}

/** Out of range so far: the window that will fire the alert once it spans `for_seconds`. */
interface Breach { from: number; to: number; first: number; last: number; min: number; max: number; count: number }

interface Series {
  deviceId: string
  channel: string
  environmentId: string | null
  /** The newest reading evaluated (epoch ms); older ones change nothing. */
  lastTs: number
  lastValue: number | null
  /** When the series last showed life: its newest reading, or when this process started watching it. */
  seenAt: number
  breach: Breach | null
  open: boolean
  stale: boolean
}

interface Rule {
  row: AlertRuleRow
  min: number
  max: number
  /** The range a reading must come back into to close an open alert (min/max narrowed by hysteresis). */
  low: number
  high: number
  ranged: boolean
  forMs: number
  staleAfterMs: number | null
  series: Map<string, Series>
  /** A device-channel rule's one series, once it exists: found without building its key on every reading. */
  single: Series | undefined
}

const seriesKey = (deviceId: string, channel: string) => `${deviceId}\u0000${channel}`
/** Readings ahead of the clock by up to this much are accepted by ingest, so they count as recent too. */
const FUTURE_SLACK_MS = 5 * 60 * 1000
const RETRY_MS = 1000

export class AlertEvaluator {
  private readonly byId = new Map<string, Rule>()
  private readonly byAccount = new Map<string, Rule[]>()
  /** device id → channel → rules watching that channel. */
  private readonly byChannel = new Map<string, Map<string, Rule[]>>()
  /** environment id → metric → rules watching that environment. */
  private readonly byEnvironment = new Map<string, Map<string, Rule[]>>()
  private readonly loads = new Map<string, number>()
  /** The account of each device of an account with rules, to re-read the account when the device changes. */
  private readonly deviceAccounts = new Map<string, string>()
  private loadAllSeq = 0
  private pending: Transition[] = []
  private writing: Promise<void> = Promise.resolve()
  private staleRun: Promise<void> = Promise.resolve()
  private flushTimer: ReturnType<typeof setTimeout> | undefined
  private staleTimer: ReturnType<typeof setInterval> | undefined
  private refreshTimer: ReturnType<typeof setInterval> | undefined
  private readonly origin = randomUUID()
  private closed = false
  private readonly now: () => number

  constructor(private readonly options: EvaluatorOptions) {
    this.now = options.now ?? Date.now
  }

  async start(): Promise<void> {
    await this.options.shared.subscribe(RULES_CHANNEL, (accountId) => this.reloadInBackground(accountId))
    await this.options.shared.subscribe(STATE_CHANNEL, (message) => this.applyState(message))
    // A device's channels changed or it was deleted: the series its account's rules watch may have changed.
    await this.options.shared.subscribe(DEVICE_CHANNEL, (deviceId) => {
      const accountId = this.deviceAccounts.get(deviceId)
      if (accountId) this.reloadInBackground(accountId)
    })
    await this.reloadAll()
    this.staleTimer = setInterval(() => void this.checkStale(), this.options.staleCheckMs ?? 5000)
    this.staleTimer.unref?.()
    // A backstop for a missed invalidation (pub/sub delivers at most once), as the device cache's TTL is.
    this.refreshTimer = setInterval(() => void this.reloadAll().catch((error) => this.options.log.warn('alert rules refresh failed', { error: String(error) })), 60_000)
    this.refreshTimer.unref?.()
  }

  /** How many rules are held (all accounts). */
  get size(): number { return this.byId.size }

  /** Called once per batch, after the batch was durably written. Never throws: the readings are stored whatever happens here. */
  observe(readings: readonly Reading[]): void {
    if (this.byId.size === 0) return
    try {
      const { byChannel, byEnvironment } = this
      for (let i = 0; i < readings.length; i++) {
        const reading = readings[i]!
        const channels = byChannel.get(reading.deviceId)
        if (channels !== undefined) {
          const rules = channels.get(reading.channel)
          if (rules !== undefined) for (const rule of rules) this.check(rule, reading)
        }
        if (reading.environmentId !== null && reading.metric !== null) {
          const metrics = byEnvironment.get(reading.environmentId)
          if (metrics !== undefined) {
            const rules = metrics.get(reading.metric)
            if (rules !== undefined) for (const rule of rules) this.check(rule, reading)
          }
        }
      }
    } catch (error) {
      this.options.log.error('alert evaluation failed', { error: String((error as Error)?.stack ?? error) })
    }
    if (this.pending.length) this.scheduleFlush()
  }

  private check(rule: Rule, reading: Reading): void {
    if (rule.row.account_id !== reading.accountId) return
    const series = rule.single ?? this.seriesOf(rule, reading.deviceId, reading.channel, reading.environmentId)
    if (reading.environmentId !== null && series.environmentId !== reading.environmentId) series.environmentId = reading.environmentId
    // A reading at the same instant is the same reading (the store keeps one per series and ts), e.g. from a retried batch.
    if (reading.ts <= series.lastTs) return
    series.lastTs = reading.ts
    series.lastValue = reading.value
    if (reading.ts > series.seenAt) series.seenAt = reading.ts
    if (series.stale) {
      series.stale = false
      this.closeAlert(rule, 'stale', series, reading.ts, reading.value)
    }
    if (!rule.ranged) return
    const value = reading.value
    if (series.open) {
      if (value >= rule.low && value <= rule.high) {
        series.open = false
        this.closeAlert(rule, 'threshold', series, reading.ts, value)
      }
      return
    }
    if (value >= rule.min && value <= rule.max) { series.breach = null; return }
    const breach = series.breach
    if (breach === null) series.breach = { from: reading.ts, to: reading.ts, first: value, last: value, min: value, max: value, count: 1 }
    else {
      breach.to = reading.ts; breach.last = value; breach.count++
      if (value < breach.min) breach.min = value
      if (value > breach.max) breach.max = value
    }
    const window = series.breach!
    if (window.to - window.from >= rule.forMs) {
      series.open = true
      series.breach = null
      this.queue({ open: {
        id: newId('alert'), account_id: rule.row.account_id, rule_id: rule.row.id, kind: 'threshold',
        environment_id: series.environmentId, device_id: series.deviceId, channel: series.channel, metric: rule.row.metric,
        rule: snapshotOf(rule.row), triggered_at: new Date(window.to), window_from: new Date(window.from), window_to: new Date(window.to),
        value_first: window.first, value_last: window.last, value_min: window.min, value_max: window.max, value_count: window.count,
      } })
    }
  }

  /** Opens stale alerts for series silent for their rule's `stale_after_seconds`; the server runs it on a timer. */
  checkStale(): Promise<void> {
    this.staleRun = this.staleRun.then(() => this.findStale()).catch((error) => this.options.log.error('stale check failed', { error: String(error) }))
    return this.staleRun
  }

  private async findStale(): Promise<void> {
    const now = this.now()
    for (const rule of this.byId.values()) {
      if (rule.staleAfterMs === null) continue
      for (const series of rule.series.values()) {
        if (series.stale || now - series.seenAt < rule.staleAfterMs) continue
        // Another process may have taken this series' readings: the store has them all.
        const [newest] = await this.options.readings.latest({
          accountId: rule.row.account_id, deviceId: series.deviceId, channel: series.channel, from: now - rule.staleAfterMs, to: now + FUTURE_SLACK_MS,
        }, 1)
        if (newest) {
          if (newest.ts > series.seenAt) { series.seenAt = newest.ts; series.lastValue = newest.value }
          continue
        }
        if (series.stale || this.byId.get(rule.row.id) !== rule) continue
        series.stale = true
        this.queue({ open: {
          id: newId('alert'), account_id: rule.row.account_id, rule_id: rule.row.id, kind: 'stale',
          environment_id: series.environmentId, device_id: series.deviceId, channel: series.channel, metric: rule.row.metric,
          rule: snapshotOf(rule.row), triggered_at: new Date(now), window_from: new Date(series.seenAt), window_to: new Date(now),
          value_first: null, value_last: series.lastValue, value_min: null, value_max: null, value_count: null,
        } })
      }
    }
    if (this.pending.length) await this.flush()
  }

  private closeAlert(rule: Rule, kind: AlertRow['kind'], series: Series, at: number, value: number | null) {
    this.queue({ close: { ruleId: rule.row.id, kind, deviceId: series.deviceId, channel: series.channel, at: new Date(at), value } })
  }

  private queue(transition: Transition) {
    this.pending.push(transition)
  }

  private scheduleFlush() {
    this.flushTimer ??= setTimeout(() => { this.flushTimer = undefined; void this.flush() }, this.options.flushMs ?? 100)
  }

  /** Writes the queued transitions (one transaction per flush, one flush at a time); resolves when they are written. */
  flush(): Promise<void> {
    if (this.flushTimer) { clearTimeout(this.flushTimer); this.flushTimer = undefined }
    this.writing = this.writing.then(() => this.write())
    return this.writing
  }

  private async write(): Promise<void> {
    if (!this.pending.length) return
    const batch = this.pending
    this.pending = []
    let applied: Transition[]
    try {
      applied = await writeTransitions(this.options.db, batch)
    } catch (error) {
      // Kept in order ahead of anything queued since, and tried again shortly.
      this.pending = [...batch, ...this.pending]
      this.options.log.error('alert transitions not written; retrying', { transitions: batch.length, error: String(error) })
      this.flushTimer ??= setTimeout(() => { this.flushTimer = undefined; void this.flush() }, RETRY_MS)
      return
    }
    for (const transition of applied) {
      const opened = 'open' in transition
      const [ruleId, kind, deviceId, channel, environmentId] = opened
        ? [transition.open.rule_id, transition.open.kind, transition.open.device_id, transition.open.channel, transition.open.environment_id ?? '']
        : [transition.close.ruleId, transition.close.kind, transition.close.deviceId, transition.close.channel, '']
      await this.options.shared.publish(STATE_CHANNEL, [this.origin, ruleId, kind, deviceId, channel, environmentId, opened ? '1' : '0'].join('\t'))
        .catch(() => { /* the other processes' periodic reload catches up */ })
    }
  }

  /** Another process opened or closed an alert: mirror it, so whichever process sees the next reading can act on it. */
  private applyState(message: string) {
    const [origin, ruleId, kind, deviceId, channel, environmentId, opened] = message.split('\t')
    if (origin === this.origin || !ruleId || !deviceId || channel === undefined) return
    const rule = this.byId.get(ruleId)
    if (!rule) return
    const series = this.seriesOf(rule, deviceId, channel, environmentId || null)
    if (kind === 'stale') series.stale = opened === '1'
    else { series.open = opened === '1'; series.breach = null }
  }

  private seriesOf(rule: Rule, deviceId: string, channel: string, environmentId: string | null): Series {
    const key = seriesKey(deviceId, channel)
    let series = rule.series.get(key)
    if (series === undefined) {
      series = { deviceId, channel, environmentId, lastTs: -Infinity, lastValue: null, seenAt: this.now(), breach: null, open: false, stale: false }
      rule.series.set(key, series)
    } else if (environmentId !== null && series.environmentId !== environmentId) series.environmentId = environmentId
    if (rule.row.device_id !== null) rule.single = series
    return series
  }

  async reloadAll(): Promise<void> {
    const seq = ++this.loadAllSeq
    const started = new Map(this.loads)
    const loaded = await loadRules(this.options.db)
    // A newer load (of everything, or of one account) started meanwhile has the fresher answer.
    if (seq !== this.loadAllSeq) return
    const accounts = new Set([...this.byAccount.keys(), ...loaded.rules.map((r) => r.account_id)])
    for (const accountId of accounts) {
      if ((this.loads.get(accountId) ?? 0) !== (started.get(accountId) ?? 0)) continue
      this.install(accountId, loaded.rules.filter((r) => r.account_id === accountId), loaded)
    }
  }

  private reloadInBackground(accountId: string) {
    if (this.closed) return
    void this.reloadAccount(accountId).catch((error) => { if (!this.closed) this.options.log.error('alert rules reload failed', { error: String(error) }) })
  }

  /** Re-reads one account's rules and open alerts; the rules service calls it before answering a change. */
  async reloadAccount(accountId: string): Promise<void> {
    const seq = (this.loads.get(accountId) ?? 0) + 1
    this.loads.set(accountId, seq)
    const loaded = await loadRules(this.options.db, accountId)
    if (this.loads.get(accountId) !== seq) return
    this.install(accountId, loaded.rules, loaded)
  }

  /**
   * Replaces an account's rules. A rule that watches what it watched before keeps the state of its series (open
   * flags, what was last seen); its out-of-range windows start again if its limits changed. The series watched
   * are the live device channels the rule targets (a channel mapped into its environment with its metric, or its
   * one device channel) plus any with an alert open: a deleted device or a remapped channel is not called stale.
   * Alerts the database holds open are marked open here too (another process may have opened them).
   */
  private install(accountId: string, rows: AlertRuleRow[], loaded: Awaited<ReturnType<typeof loadRules>>) {
    const previous = new Map((this.byAccount.get(accountId) ?? []).map((rule) => [rule.row.id, rule]))
    for (const old of previous.values()) { this.unindex(old); this.byId.delete(old.row.id) }
    const devices = loaded.devices.filter((device) => device.account_id === accountId)
    for (const device of devices) this.deviceAccounts.set(device.id, accountId)
    const open = loaded.open.filter((alert) => rows.some((row) => row.id === alert.rule_id))
    const rules = rows.map((row) => {
      const rule = compile(row)
      const before = previous.get(row.id)
      const kept = before && sameTarget(before.row, row) ? before.series : new Map<string, Series>()
      const watch = (deviceId: string, channel: string, environmentId: string | null) => {
        const key = seriesKey(deviceId, channel)
        const series = kept.get(key)
        if (series) {
          if (!sameLimits(before!.row, row)) series.breach = null
          rule.series.set(key, series)
          if (row.device_id !== null) rule.single = series
        } else this.seriesOf(rule, deviceId, channel, environmentId)
      }
      for (const device of devices) {
        for (const channel of device.channels) {
          const targeted = row.environment_id !== null
            ? channel.environment_id === row.environment_id && channel.metric === row.metric
            : device.id === row.device_id && channel.key === row.channel
          if (targeted) watch(device.id, channel.key, channel.environment_id)
        }
      }
      // A device channel watched before it is configured (readings on an unmapped channel) is watched all the same.
      if (row.device_id !== null && row.channel !== null && devices.some((d) => d.id === row.device_id)) watch(row.device_id, row.channel, null)
      for (const alert of open) if (alert.rule_id === row.id) watch(alert.device_id, alert.channel, alert.environment_id)
      for (const alert of open) {
        if (alert.rule_id !== row.id) continue
        const series = rule.series.get(seriesKey(alert.device_id, alert.channel))!
        if (alert.kind === 'stale') {
          series.stale = true
          if (series.lastTs === -Infinity) series.seenAt = Math.min(series.seenAt, alert.window_from.getTime())
        } else {
          series.open = true
          series.breach = null
        }
      }
      return rule
    })
    if (rules.length) this.byAccount.set(accountId, rules)
    else this.byAccount.delete(accountId)
    for (const rule of rules) { this.byId.set(rule.row.id, rule); this.index(rule) }
  }

  private index(rule: Rule) {
    const { environment_id, device_id, channel, metric } = rule.row
    const [outer, first, second] = environment_id !== null ? [this.byEnvironment, environment_id, metric] : [this.byChannel, device_id!, channel!]
    let inner = outer.get(first)
    if (!inner) { inner = new Map(); outer.set(first, inner) }
    inner.set(second, [...(inner.get(second) ?? []), rule])
  }

  private unindex(rule: Rule) {
    const { environment_id, device_id, channel, metric } = rule.row
    const [outer, first, second] = environment_id !== null ? [this.byEnvironment, environment_id, metric] : [this.byChannel, device_id!, channel!]
    const inner = outer.get(first)
    const rest = (inner?.get(second) ?? []).filter((r) => r !== rule)
    if (rest.length) inner!.set(second, rest)
    else {
      inner?.delete(second)
      if (inner?.size === 0) outer.delete(first)
    }
  }

  /** Stops the timers and writes what is queued (after ingest has drained). */
  async close(): Promise<void> {
    this.closed = true
    if (this.staleTimer) clearInterval(this.staleTimer)
    if (this.refreshTimer) clearInterval(this.refreshTimer)
    await this.staleRun
    await this.flush()
  }
}

function compile(row: AlertRuleRow): Rule {
  const min = row.min ?? -Infinity
  const max = row.max ?? Infinity
  return {
    row, min, max, low: min + row.hysteresis, high: max - row.hysteresis, ranged: row.min !== null || row.max !== null,
    forMs: row.for_seconds * 1000, staleAfterMs: row.stale_after_seconds === null ? null : row.stale_after_seconds * 1000,
    series: new Map(), single: undefined,
  }
}

const sameTarget = (a: AlertRuleRow, b: AlertRuleRow) =>
  a.environment_id === b.environment_id && a.device_id === b.device_id && a.channel === b.channel && a.metric === b.metric

const sameLimits = (a: AlertRuleRow, b: AlertRuleRow) =>
  a.min === b.min && a.max === b.max && a.hysteresis === b.hysteresis && a.for_seconds === b.for_seconds
