// A picture of one run, as a self-contained SVG (no fonts, scripts or libraries): one row per measure, with
// ours ÷ baseline as a bar (a tick at the target where there is one, a dashed line at parity) and, for lines
// with a load run behind them, p50/p95/p99 latency on a logarithmic axis beside it.
import { fmt, verdict, type Line } from './report.ts'

const ROW = 22
const TOP = 78
const BOTTOM = 28
const SCENARIO_X = 10
const MEASURE_X = 130
const MEASURE_CHARS = 68 // what fits before the ratio panel at 11 px
const RATIO_X = 560
const RATIO_W = 300
const RATIO_VALUE_X = RATIO_X + RATIO_W + 10 // the figure sits in a column of its own, clear of bars and ticks
const LATENCY_X = RATIO_X + RATIO_W + 90
const LATENCY_W = 220
const WIDTH_WITH_LATENCY = LATENCY_X + LATENCY_W + 80 // room for the p99 figure
const WIDTH_RATIO_ONLY = RATIO_VALUE_X + 60

export const COLOURS = { pass: '#2e7d32', miss: '#c62828', goalMiss: '#ef6c00', info: '#78909c', p50: '#1565c0', p95: '#6a1b9a', p99: '#c62828', grid: '#cfd8dc', text: '#263238', muted: '#78909c' }

export const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
export const clip = (s: string, chars: number) => (s.length > chars ? `${s.slice(0, chars - 1)}…` : s)
export const text = (x: number, y: number, content: string, attrs = '') => `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}"${attrs ? ` ${attrs}` : ''}>${esc(content)}</text>`
/** A light outline that keeps text readable where it crosses gridlines. */
export const HALO = 'paint-order="stroke" stroke="#ffffff" stroke-width="3" stroke-linejoin="round"'

function barColour(l: Line): string {
  const result = verdict(l)
  if (result === 'pass') return COLOURS.pass
  if (result === 'miss') return l.kind === 'goal' ? COLOURS.goalMiss : COLOURS.miss
  return COLOURS.info
}

/** The ratio axis: at least 0–1.2 so parity always shows, at most 0–3 (larger ratios are clipped and labelled). */
function ratioScale(lines: Line[]): { max: number; step: number } {
  const largest = Math.max(1, ...lines.flatMap((l) => [l.ratio ?? 0, l.target ?? 0]))
  const max = Math.min(3, Math.max(1.2, Math.ceil(largest * 1.1 * 4) / 4))
  return { max, step: max <= 1.5 ? 0.25 : 0.5 }
}

/** Decades covering every latency shown, and the 1-2-5 gridlines inside them. */
function latencyScale(values: number[]): { lo: number; hi: number; ticks: number[]; labelled: (t: number) => boolean } {
  const positive = values.filter((v) => v > 0 && Number.isFinite(v))
  const lo = positive.length ? 10 ** Math.floor(Math.log10(Math.min(...positive))) : 1
  let hi = positive.length ? 10 ** Math.ceil(Math.log10(Math.max(...positive))) : 1000
  if (hi <= lo) hi = lo * 10
  const decades = Math.round(Math.log10(hi / lo))
  const ticks: number[] = []
  for (let d = lo; d < hi * 1.001; d *= 10) for (const m of [1, 2, 5]) if (d * m <= hi * 1.001) ticks.push(d * m)
  // With more than two decades the 2s and 5s would crowd their labels: only the powers of ten get one.
  return { lo, hi, ticks, labelled: (t) => decades <= 2 || Math.abs(Math.log10(t) % 1) < 1e-9 }
}

const latencyLabel = (ms: number) => (ms >= 1000 ? `${Number((ms / 1000).toPrecision(3))} s` : `${Number(ms.toPrecision(3))}`)

export function plotSvg(lines: Line[], heading: string, subheading: string): string {
  const withLatency = lines.filter((l) => l.stats?.p50 !== undefined || l.stats?.p99 !== undefined)
  const width = withLatency.length ? WIDTH_WITH_LATENCY : WIDTH_RATIO_ONLY
  const height = TOP + Math.max(1, lines.length) * ROW + BOTTOM
  const ratio = ratioScale(lines)
  const xRatio = (r: number) => RATIO_X + (Math.min(r, ratio.max) / ratio.max) * RATIO_W
  const latency = latencyScale(withLatency.flatMap((l) => [l.stats?.p50, l.stats?.p95, l.stats?.p99].filter((v): v is number => v !== undefined)))
  const xLatency = (ms: number) => LATENCY_X + (Math.log10(Math.max(ms, latency.lo) / latency.lo) / Math.log10(latency.hi / latency.lo)) * LATENCY_W
  const rowsTop = TOP
  const rowsBottom = TOP + lines.length * ROW

  const out: string[] = []
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="11" fill="${COLOURS.text}">`)
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`)
  out.push(text(SCENARIO_X, 20, heading, 'font-size="15" font-weight="bold"'))
  out.push(text(SCENARIO_X, 38, subheading, `fill="${COLOURS.muted}"`))

  // Panel headings and legends.
  out.push(text(RATIO_X, 58, 'ours ÷ baseline', 'font-weight="bold"'))
  const legend = RATIO_X + 110
  out.push(`<rect x="${legend}" y="50" width="10" height="9" fill="${COLOURS.pass}"/>` + text(legend + 13, 58, 'pass'))
  out.push(`<rect x="${legend + 45}" y="50" width="10" height="9" fill="${COLOURS.miss}"/>` + text(legend + 58, 58, 'miss'))
  out.push(`<rect x="${legend + 90}" y="50" width="10" height="9" fill="${COLOURS.info}"/>` + text(legend + 103, 58, 'info'))
  out.push(`<line x1="${legend + 135}" y1="49" x2="${legend + 135}" y2="60" stroke="#000" stroke-width="2"/>` + text(legend + 140, 58, 'target'))
  if (withLatency.length) {
    out.push(text(LATENCY_X, 58, 'latency, ms', 'font-weight="bold"'))
    const key = LATENCY_X + 80
    out.push(`<circle cx="${key + 4}" cy="54.5" r="4" fill="${COLOURS.p50}"/>` + text(key + 11, 58, 'p50'))
    out.push(`<path d="M${key + 44} 50 l4.5 4.5 l-4.5 4.5 l-4.5 -4.5 z" fill="${COLOURS.p95}"/>` + text(key + 51, 58, 'p95'))
    out.push(`<rect x="${key + 80}" y="50.5" width="8" height="8" fill="${COLOURS.p99}"/>` + text(key + 91, 58, 'p99'))
  }

  // Zebra rows, and a rule where the scenario changes.
  lines.forEach((l, i) => {
    const y = rowsTop + i * ROW
    if (i % 2 === 1) out.push(`<rect x="0" y="${y}" width="${width}" height="${ROW}" fill="#f5f7f8"/>`)
    if (i > 0 && lines[i - 1]!.scenario !== l.scenario) out.push(`<line x1="${SCENARIO_X}" y1="${y}" x2="${width - 10}" y2="${y}" stroke="#90a4ae"/>`)
  })

  // Gridlines and axis labels.
  for (let t = 0; t <= ratio.max + 1e-9; t += ratio.step) {
    const x = xRatio(t)
    // Parity (ours = baseline) stands out from the other gridlines.
    const style = Math.abs(t - 1) < 1e-9 ? 'stroke="#546e7a" stroke-width="1.5" stroke-dasharray="4 3"' : `stroke="${COLOURS.grid}"`
    out.push(`<line x1="${x.toFixed(1)}" y1="${rowsTop}" x2="${x.toFixed(1)}" y2="${rowsBottom}" ${style}/>`)
    out.push(text(x, rowsBottom + 14, t.toFixed(2).replace(/0$/, ''), `text-anchor="middle" fill="${COLOURS.muted}" font-size="10"`))
  }
  if (withLatency.length) {
    for (const t of latency.ticks) {
      const x = xLatency(t)
      out.push(`<line x1="${x.toFixed(1)}" y1="${rowsTop}" x2="${x.toFixed(1)}" y2="${rowsBottom}" stroke="${COLOURS.grid}"/>`)
      if (latency.labelled(t)) out.push(text(x, rowsBottom + 14, latencyLabel(t), `text-anchor="middle" fill="${COLOURS.muted}" font-size="10"`))
    }
  }

  lines.forEach((l, i) => {
    const y = rowsTop + i * ROW
    const mid = y + ROW / 2
    const baseline = mid + 4
    const s = l.stats
    const tooltip = [
      `${l.scenario} / ${l.measure}`,
      `ours ${fmt(l.ours, 1)} ${l.unit}${l.baseline !== undefined ? `, baseline ${fmt(l.baseline, 1)} ${l.unit}` : ''}`,
      l.ratio !== undefined ? `ratio ${l.ratio.toFixed(2)}${l.target !== undefined ? ` (target ≥ ${l.target}${l.kind === 'goal' ? ', goal' : ''}: ${verdict(l)})` : ''}` : '',
      s ? `p50 ${fmt(s.p50, 1)} ms, p95 ${fmt(s.p95, 1)} ms, p99 ${fmt(s.p99, 1)} ms, errors ${s.errors ?? '-'}` : '',
    ].filter(Boolean).join('\n')
    out.push(`<g><title>${esc(tooltip)}</title>`)
    if (i === 0 || lines[i - 1]!.scenario !== l.scenario) out.push(text(SCENARIO_X, baseline, clip(l.scenario, 19), 'font-weight="bold"'))
    out.push(text(MEASURE_X, baseline, clip(l.measure, MEASURE_CHARS)))

    if (l.ratio !== undefined) {
      const end = xRatio(l.ratio)
      out.push(`<rect x="${RATIO_X}" y="${(mid - 6).toFixed(1)}" width="${Math.max(1, end - RATIO_X).toFixed(1)}" height="12" fill="${barColour(l)}"/>`)
      // A ratio beyond the axis gets an arrow at the bar's end; its figure is in the column either way.
      if (l.ratio > ratio.max) out.push(text(end - 3, baseline, '▸', 'text-anchor="end" fill="#ffffff" font-weight="bold"'))
      out.push(text(RATIO_VALUE_X, baseline, l.ratio.toFixed(2), l.target !== undefined ? 'font-weight="bold"' : ''))
      if (l.target !== undefined) {
        const x = xRatio(l.target)
        out.push(`<line x1="${x.toFixed(1)}" y1="${(mid - 9).toFixed(1)}" x2="${x.toFixed(1)}" y2="${(mid + 9).toFixed(1)}" stroke="#000" stroke-width="2"/>`)
      }
    } else {
      out.push(text(RATIO_X + 4, baseline, `${fmt(l.ours, l.ours < 100 ? 1 : 0)} ${l.unit} (no baseline)`, `fill="${COLOURS.muted}" font-style="italic" ${HALO}`))
    }

    if (s && withLatency.length) {
      const points = ([['p50', s.p50], ['p95', s.p95], ['p99', s.p99]] as const).filter((p): p is readonly ['p50' | 'p95' | 'p99', number] => p[1] !== undefined && p[1] > 0)
      if (points.length > 1) out.push(`<line x1="${xLatency(points[0]![1]).toFixed(1)}" y1="${mid}" x2="${xLatency(points[points.length - 1]![1]).toFixed(1)}" y2="${mid}" stroke="#90a4ae" stroke-width="2"/>`)
      for (const [which, ms] of points) {
        const x = xLatency(ms)
        if (which === 'p50') out.push(`<circle cx="${x.toFixed(1)}" cy="${mid}" r="4" fill="${COLOURS.p50}"/>`)
        else if (which === 'p95') out.push(`<path d="M${x.toFixed(1)} ${mid - 4.5} l4.5 4.5 l-4.5 4.5 l-4.5 -4.5 z" fill="${COLOURS.p95}"/>`)
        else out.push(`<rect x="${(x - 4).toFixed(1)}" y="${mid - 4}" width="8" height="8" fill="${COLOURS.p99}"/>`)
      }
      if (s.p99 !== undefined) out.push(text(LATENCY_X + LATENCY_W + 10, baseline, `p99 ${fmt(s.p99, s.p99 < 100 ? 1 : 0)}`, `fill="${COLOURS.muted}"`))
    }
    out.push('</g>')
  })
  if (!lines.length) out.push(text(SCENARIO_X, TOP + 15, 'no lines: every scenario was skipped or failed', `fill="${COLOURS.muted}"`))
  out.push('</svg>')
  return out.join('\n') + '\n'
}
