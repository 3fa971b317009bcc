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

class Counter implements Metric {
  private readonly values = new Map<string, { labels: Labels; value: number }>()
  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly string[] = []) {}

  inc(labels: Labels = [], by = 1): void {
    const key = labels.join('\u0001')
    const entry = this.values.get(key)
    if (entry) entry.value += by
    else this.values.set(key, { labels: [...labels], value: by })
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
}

class Histogram implements Metric {
  private readonly series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>()
  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly string[], readonly buckets: readonly number[]) {}

  observe(labels: Labels, value: number): void {
    const key = labels.join('\u0001')
    let entry = this.series.get(key)
    if (!entry) { entry = { labels: [...labels], counts: new Array(this.buckets.length).fill(0), sum: 0, count: 0 }; this.series.set(key, entry) }
    // Counted in the first bucket that holds it; render() accumulates, as Prometheus buckets are cumulative.
    const i = this.buckets.findIndex((upper) => value <= upper)
    if (i !== -1) entry.counts[i]!++
    entry.sum += value
    entry.count++
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`]
    for (const { labels, counts, sum, count } of this.series.values()) {
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
