// Metrics in the Prometheus text format (version 0.0.4), for GET /metrics. A small registry of our own: the
// service needs counters, histograms and gauges read at scrape time, and recording one must cost a Map lookup
// and a few additions on the ingest hot path, nothing more.

type Labels = readonly string[]

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

function labelText(names: readonly string[], values: Labels, extra = ''): string {
  const pairs = names.map((name, i) => `${name}="${escapeLabel(values[i] ?? '')}"`)
  if (extra) pairs.push(extra)
  return pairs.length ? `{${pairs.join(',')}}` : ''
}

/** Numbers as Prometheus writes them. */
const number = (n: number) => (Number.isFinite(n) ? String(n) : n > 0 ? '+Inf' : n < 0 ? '-Inf' : 'NaN')

interface Metric { render(): string | Promise<string> }

export interface CounterSeries { inc(by?: number): void }
export interface HistogramSeries { observe(value: number): void }

class Counter implements Metric {
  private readonly values = new Map<string, { labels: Labels; value: number }>()
  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly string[] = []) {}

  inc(labels: Labels = [], by = 1): void {
    this.entry(labels).value += by
  }

  /** One label set's count, for a caller that counts it often: no label key is built per count. */
  series(labels: Labels): CounterSeries {
    const entry = this.entry(labels)
    return { inc: (by = 1) => { entry.value += by } }
  }

  /** The current value for `labels` (0 if never counted). */
  get(labels: Labels = []): number {
    return this.values.get(labels.join('\u0001'))?.value ?? 0
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`]
    for (const { labels, value } of this.values.values()) lines.push(`${this.name}${labelText(this.labelNames, labels)} ${number(value)}`)
    return lines.join('\n')
  }

  private entry(labels: Labels) {
    const key = labels.join('\u0001')
    let entry = this.values.get(key)
    if (!entry) { entry = { labels: [...labels], value: 0 }; this.values.set(key, entry) }
    return entry
  }
}

class Histogram implements Metric {
  private readonly entries = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>()
  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly string[], readonly buckets: readonly number[]) {}

  observe(labels: Labels, value: number): void {
    this.observeInto(this.entry(labels), value)
  }

  /** One label set's histogram, for a caller that observes it often: no label key is built per observation. */
  series(labels: Labels): HistogramSeries {
    const entry = this.entry(labels)
    return { observe: (value) => this.observeInto(entry, value) }
  }

  private entry(labels: Labels) {
    const key = labels.join('\u0001')
    let entry = this.entries.get(key)
    if (!entry) { entry = { labels: [...labels], counts: new Array<number>(this.buckets.length).fill(0), sum: 0, count: 0 }; this.entries.set(key, entry) }
    return entry
  }

  private observeInto(entry: { counts: number[]; sum: number; count: number }, value: number) {
    // Counted in the first bucket that holds it; render() accumulates, as Prometheus buckets are cumulative.
    const buckets = this.buckets
    for (let i = 0; i < buckets.length; i++) {
      if (value <= buckets[i]!) { entry.counts[i]!++; break }
    }
    entry.sum += value
    entry.count++
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`]
    for (const { labels, counts, sum, count } of this.entries.values()) {
      let cumulative = 0
      this.buckets.forEach((upper, i) => {
        cumulative += counts[i]!
        lines.push(`${this.name}_bucket${labelText(this.labelNames, labels, `le="${number(upper)}"`)} ${cumulative}`)
      })
      lines.push(`${this.name}_bucket${labelText(this.labelNames, labels, 'le="+Inf"')} ${count}`)
      lines.push(`${this.name}_sum${labelText(this.labelNames, labels)} ${number(sum)}`)
      lines.push(`${this.name}_count${labelText(this.labelNames, labels)} ${count}`)
    }
    return lines.join('\n')
  }
}

export interface GaugeSample { labels?: Labels; value: number }

/** A value read when scraped (queue depth, backlog, backend up), so nothing is kept up to date in between. */
class Gauge implements Metric {
  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly string[], private readonly read: () => GaugeSample[] | Promise<GaugeSample[]>) {}

  async render(): Promise<string> {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`]
    for (const { labels = [], value } of await this.read()) lines.push(`${this.name}${labelText(this.labelNames, labels)} ${number(value)}`)
    return lines.join('\n')
  }
}

export class MetricsRegistry {
  private readonly metrics: Metric[] = []

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.add(new Counter(name, help, labelNames))
  }

  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, labelNames, buckets))
  }

  gauge(name: string, help: string, labelNames: readonly string[], read: () => GaugeSample[] | Promise<GaugeSample[]>): Gauge {
    return this.add(new Gauge(name, help, labelNames, read))
  }

  /** The exposition text: every metric, each with its HELP and TYPE lines. */
  async render(): Promise<string> {
    const parts = await Promise.all(this.metrics.map((metric) => metric.render()))
    return parts.join('\n') + '\n'
  }

  private add<M extends Metric>(metric: M): M {
    this.metrics.push(metric)
    return metric
  }
}

/** Seconds, for request and flush latencies: 1 ms to 10 s. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const
/** Readings per flush. */
export const SIZE_BUCKETS = [1, 10, 100, 1_000, 5_000, 10_000, 50_000] as const
