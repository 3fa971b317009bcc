// Drift as a picture: every line with a target, its ratio (ours ÷ baseline) in each recorded run over time, one
// panel per line, from the run log (bench/results.jsonl). Lines are followed across runs by their measure with
// the numbers blanked (drift.ts's shape), so "… (10/page, 8 lanes)" and "… (50/page, 8 lanes)" share a panel:
// a point's tooltip names its run and measure. Self-contained SVG like plot.ts's.
import { shape } from './drift.ts'
import { clip, COLOURS, esc, HALO, text } from './plot.ts'
import type { LoggedRun } from './run-log.ts'

export interface RatioPoint {
  at: number
  ratio: number
  target: number
  result: string
  goal: boolean
  measure: string
  report: string
}

export interface RatioSeries {
  scenario: string
  /** The wording of the newest run that has the line. */
  measure: string
  points: RatioPoint[]
}

/** One series per line with a target and a ratio, in the order lines first appeared; points oldest first. */
export function ratioSeries(runs: LoggedRun[]): RatioSeries[] {
  const ordered = [...runs].sort((x, y) => Date.parse(x.record.startedAt) - Date.parse(y.record.startedAt))
  const series = new Map<string, RatioSeries>()
  for (const { record } of ordered) {
    for (const l of record.lines) {
      if (l.target === undefined || l.ratio === undefined || !Number.isFinite(l.ratio)) continue
      const key = shape(l)
      const s = series.get(key) ?? { scenario: l.scenario, measure: l.measure, points: [] }
      s.measure = l.measure
      s.points.push({ at: Date.parse(record.startedAt), ratio: l.ratio, target: l.target, result: l.result, goal: l.kind === 'goal', measure: l.measure, report: record.report })
      series.set(key, s)
    }
  }
  return [...series.values()]
}

const PANEL_W = 520
const PANEL_H = 150
const GAP_X = 40
const GAP_Y = 22
const COLUMNS = 2
const TOP = 70
const LEFT = 40
const PLOT_TOP = 34 // within a panel: its heading and subheading above the plot
const PLOT_BOTTOM = 18 // the date labels below it
const DAY = 86_400_000

/** The ratio axis of one panel: 0 to at least 1.2 (parity shows) and past the target, at most 3 or 2.5 × the target. */
function ratioAxis(s: RatioSeries): { max: number; step: number } {
  const largest = Math.max(1, ...s.points.flatMap((p) => [p.ratio, p.target]))
  const cap = Math.max(3, Math.ceil(s.points[s.points.length - 1]!.target * 2.5))
  const max = Math.min(cap, Math.max(1.2, Math.ceil(largest * 1.1 * 4) / 4))
  return { max, step: max <= 1.5 ? 0.25 : max <= 3 ? 0.5 : 1 }
}

/** 0.6666666666666666 → 0.667 */
const figure = (n: number) => String(Number(n.toPrecision(3)))

const dayLabel = (at: number) => new Date(at).toISOString().slice(5, 10)

export function ratioHistorySvg(series: RatioSeries[], heading: string, subheading: string): string {
  const rows = Math.max(1, Math.ceil(series.length / COLUMNS))
  const width = LEFT + COLUMNS * PANEL_W + (COLUMNS - 1) * GAP_X + 20
  const height = TOP + rows * (PANEL_H + GAP_Y) + 10
  const times = series.flatMap((s) => s.points.map((p) => p.at))
  const first = times.length ? Math.floor(Math.min(...times) / DAY) * DAY : 0
  const last = times.length ? Math.ceil((Math.max(...times) + 1) / DAY) * DAY : DAY
  const dayStep = Math.max(1, Math.ceil((last - first) / DAY / 12))
  const plotW = PANEL_W - 50

  const out: string[] = []
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="11" fill="${COLOURS.text}">`)
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`)
  out.push(text(10, 20, heading, 'font-size="15" font-weight="bold"'))
  out.push(text(10, 38, subheading, `fill="${COLOURS.muted}"`))
  const legend = 10
  out.push(`<circle cx="${legend + 4}" cy="54" r="3.5" fill="${COLOURS.pass}"/>` + text(legend + 11, 58, 'pass'))
  out.push(`<circle cx="${legend + 49}" cy="54" r="3.5" fill="${COLOURS.miss}"/>` + text(legend + 56, 58, 'miss'))
  out.push(`<circle cx="${legend + 94}" cy="54" r="3.5" fill="${COLOURS.goalMiss}"/>` + text(legend + 101, 58, 'goal missed'))
  out.push(`<line x1="${legend + 170}" y1="54" x2="${legend + 195}" y2="54" stroke="#000" stroke-width="1.5" stroke-dasharray="5 3"/>` + text(legend + 200, 58, 'target'))
  out.push(`<line x1="${legend + 245}" y1="54" x2="${legend + 270}" y2="54" stroke="#90a4ae" stroke-width="1"/>` + text(legend + 275, 58, 'parity (1.0)'))

  series.forEach((s, i) => {
    const px = LEFT + (i % COLUMNS) * (PANEL_W + GAP_X)
    const py = TOP + Math.floor(i / COLUMNS) * (PANEL_H + GAP_Y)
    const top = py + PLOT_TOP
    const bottom = py + PANEL_H - PLOT_BOTTOM
    const axis = ratioAxis(s)
    const x = (at: number) => px + ((at - first) / (last - first)) * plotW
    const y = (ratio: number) => bottom - (Math.min(ratio, axis.max) / axis.max) * (bottom - top)
    const newest = s.points[s.points.length - 1]!
    const passed = s.points.filter((p) => p.result === 'pass').length

    out.push(text(px, py + 12, clip(`${s.scenario} · ${s.measure}`, 82), 'font-weight="bold"'))
    out.push(text(px, py + 26, `target ≥ ${figure(newest.target)}${newest.goal ? ' (goal)' : ''} · ${s.points.length} run${s.points.length === 1 ? '' : 's'}, ${passed} met · last ${newest.ratio.toFixed(2)} (${newest.report})`, `fill="${COLOURS.muted}"`))
    for (let t = 0; t <= axis.max + 1e-9; t += axis.step) {
      const style = Math.abs(t - 1) < 1e-9 ? 'stroke="#90a4ae"' : `stroke="${COLOURS.grid}" stroke-width="0.5"`
      out.push(`<line x1="${px}" y1="${y(t).toFixed(1)}" x2="${px + plotW}" y2="${y(t).toFixed(1)}" ${style}/>`)
      out.push(text(px + plotW + 4, y(t) + 3.5, t.toFixed(2).replace(/0$/, ''), `fill="${COLOURS.muted}" font-size="9"`))
    }
    for (let day = first; day <= last; day += dayStep * DAY) {
      out.push(`<line x1="${x(day).toFixed(1)}" y1="${top}" x2="${x(day).toFixed(1)}" y2="${bottom}" stroke="${COLOURS.grid}" stroke-width="0.5"/>`)
      out.push(text(x(day), bottom + 12, dayLabel(day), `text-anchor="middle" fill="${COLOURS.muted}" font-size="9"`))
    }
    const targetY = y(newest.target).toFixed(1)
    out.push(`<line x1="${px}" y1="${targetY}" x2="${px + plotW}" y2="${targetY}" stroke="#000" stroke-width="1.5" stroke-dasharray="5 3"/>`)
    out.push(`<polyline points="${s.points.map((p) => `${x(p.at).toFixed(1)},${y(p.ratio).toFixed(1)}`).join(' ')}" fill="none" stroke="#b0bec5" stroke-width="1"/>`)
    for (const p of s.points) {
      const colour = p.result === 'pass' ? COLOURS.pass : p.goal ? COLOURS.goalMiss : COLOURS.miss
      // A ratio beyond the axis sits on its top edge as a triangle.
      const mark = p.ratio > axis.max
        ? `<path d="M${x(p.at).toFixed(1)} ${(y(p.ratio) - 1).toFixed(1)} l3.5 6 l-7 0 z" fill="${colour}"/>`
        : `<circle cx="${x(p.at).toFixed(1)}" cy="${y(p.ratio).toFixed(1)}" r="2.8" fill="${colour}"/>`
      out.push(`<g><title>${esc(`${p.report}: ${p.ratio.toFixed(2)} (target ≥ ${figure(p.target)}: ${p.result})\n${p.measure}`)}</title>${mark}</g>`)
    }
    out.push(text(x(newest.at) + 4, y(newest.ratio) - 5, newest.ratio.toFixed(2), `font-weight="bold" font-size="10" ${HALO}`))
  })
  if (!series.length) out.push(text(10, TOP + 15, 'no recorded run has a line with a target', `fill="${COLOURS.muted}"`))
  out.push('</svg>')
  return out.join('\n') + '\n'
}
