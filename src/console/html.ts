// The console's markup: a tagged template that escapes every interpolated value, the page frame, and the one
// stylesheet and script the pages load (served by the console itself; nothing comes from elsewhere).

/** Markup that is already safe to insert. */
export class Html {
  constructor(readonly text: string) {}
  toString() { return this.text }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escape = (value: string) => value.replace(/[&<>"']/g, (c) => ESCAPES[c]!)

type Part = Html | string | number | null | undefined | false | readonly Part[]
const render = (part: Part): string =>
  part instanceof Html ? part.text : Array.isArray(part) ? part.map(render).join('') : part === null || part === undefined || part === false ? '' : escape(String(part))

/** html`<p>${value}</p>`: values are escaped unless they are Html themselves (or lists of it). */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  return new Html(strings.reduce((out, s, i) => out + s + (i < values.length ? render(values[i]) : ''), ''))
}

export const CONSOLE_PATH = '/console'
export const ASSET_PATH = `${CONSOLE_PATH}/assets`

export interface Frame {
  title: string
  /** The signed-in person's view, or undefined on the sign-in page. */
  nav?: { active: 'keys' | 'devices' | 'activate'; accountName: string; csrf: string; offers: { devices: boolean; activate: boolean } }
  body: Html
}

export function page({ title, nav, body }: Frame): string {
  const link = (href: string, name: string, key: string) =>
    html`<a href="${CONSOLE_PATH}/${href}"${nav?.active === key ? html` aria-current="page"` : ''}>${name}</a>`
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Husbandry Records console</title>
<link rel="icon" href="${ASSET_PATH}/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="${ASSET_PATH}/console.css"><script src="${ASSET_PATH}/console.js" defer></script></head>
<body><header><span class="brand">Husbandry Records</span>${nav ? html`
<nav>${link('keys', 'API', 'keys')}${nav.offers.devices ? link('devices', 'Devices', 'devices') : ''}${nav.offers.activate ? link('activate', 'Activate a device', 'activate') : ''}</nav>
<form method="post" action="${CONSOLE_PATH}/sign-out" class="sign-out"><input type="hidden" name="csrf" value="${nav.csrf}">
<span class="account">${nav.accountName}</span><button type="submit" class="link">Sign out</button></form>` : ''}</header>
<main><h1>${title}</h1>${body}</main>
<footer><a href="/api/v1/docs">API reference</a></footer></body></html>`.text
}

export const notice = (kind: 'error' | 'ok', message: Part) => html`<p class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${message}</p>`

export const CONSOLE_CSS = `
:root { --fg: #1d2521; --muted: #5b6660; --line: #d5dbd7; --bg: #f6f7f5; --card: #fff; --accent: #2f6b4f; --danger: #a3302a; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; padding: .6rem 1rem; background: var(--accent); color: #fff; }
header a, header .link { color: #fff; }
.brand { font-weight: 700; margin-right: auto; }
nav { display: flex; gap: .9rem; flex-wrap: wrap; }
nav a { text-decoration: none; padding: .2rem 0; border-bottom: 2px solid transparent; }
nav a[aria-current] { border-bottom-color: #fff; font-weight: 600; }
.sign-out { display: flex; gap: .6rem; align-items: center; margin: 0; font-size: .9rem; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.4rem; margin: .4rem 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .6rem; }
section > h2:first-child { margin-top: 0; }
section, .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem; margin-bottom: 1rem; }
label { display: block; font-weight: 600; margin: .6rem 0 .25rem; }
input[type=text], input[type=password], input[type=date], select { width: 100%; padding: .55rem .6rem; font: inherit; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
button, .button { font: inherit; padding: .5rem 1rem; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: #fff; color: var(--danger); border-color: var(--danger); }
button.link { background: none; border: 0; padding: 0; text-decoration: underline; }
/* Columns as wide as the longest scope ("environment:write") and its box; one column when the card is narrower. */
.scopes { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 12.5rem), 1fr)); gap: .25rem .75rem; margin: .25rem 0 .5rem; }
.scopes label { font-weight: 400; margin: 0; display: flex; gap: .4rem; align-items: center; min-width: 0; overflow-wrap: anywhere; }
.scopes input { flex: none; }
.notice { padding: .6rem .8rem; border-radius: 6px; border: 1px solid; }
.notice.error { color: var(--danger); border-color: var(--danger); background: #fbefee; }
.notice.ok { color: var(--accent); border-color: var(--accent); background: #eef6f1; }
.token { display: flex; gap: .5rem; flex-wrap: wrap; align-items: center; }
.token code { font-size: .95rem; padding: .45rem .6rem; background: #f0f2f0; border-radius: 6px; word-break: break-all; flex: 1 1 16rem; }
table { width: 100%; border-collapse: collapse; font-size: .93rem; }
th, td { text-align: left; padding: .45rem .4rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td code { white-space: nowrap; }
pre { overflow-x: auto; padding: .6rem .75rem; background: #f0f2f0; border-radius: 6px; font-size: .85rem; }
h3 { font-size: 1rem; margin: 1rem 0 .35rem; }
.scroll { overflow-x: auto; }
.muted { color: var(--muted); }
.tag { display: inline-block; font-size: .78rem; background: #eef1ee; border-radius: 4px; padding: 0 .35rem; margin: 0 .2rem .2rem 0; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(12rem, 1fr)); gap: .5rem 1rem; margin: 0; }
.facts dt { color: var(--muted); font-size: .85rem; } .facts dd { margin: 0; font-weight: 600; }
.row { display: grid; grid-template-columns: 1fr 1fr 1fr; gap: .5rem; margin-bottom: .6rem; }
.code-input { font-size: 1.4rem; letter-spacing: .15em; text-transform: uppercase; max-width: 14rem; }
svg.chart { width: 100%; height: auto; background: #fff; border: 1px solid var(--line); border-radius: 6px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(17rem, 1fr)); gap: 1rem; margin-bottom: 1rem; }
figure.chart { margin: 0; } figure.chart figcaption { font-weight: 600; margin-bottom: .3rem; }
footer { max-width: 60rem; margin: 0 auto; padding: 1rem; font-size: .9rem; }
/* On a phone a table.stack shows each row as a card of "label: value" lines instead of columns cut off at the edge. */
@media (max-width: 40rem) {
  table.stack thead { display: none; }
  table.stack tr { display: block; border-bottom: 1px solid var(--line); padding: .4rem 0; }
  table.stack td { display: block; border: 0; padding: .15rem 0; }
  table.stack td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); }
  .row { grid-template-columns: 1fr; padding-bottom: .6rem; border-bottom: 1px dashed var(--line); }
}
`

/**
 * Copy buttons; and a device page's live readings: an EventSource on the device's stream (no polling), each reading
 * updating its channel's row, the device's last-seen time, and its chart's line (the chart carries its frame:
 * time span, value range and geometry, so a point lands where the server would have drawn it).
 */
export const CONSOLE_JS = `
const live = document.querySelector('[data-live]')
if (live && window.EventSource) {
  const state = live.querySelector('[data-live-state]')
  const source = new EventSource(live.dataset.live)
  source.onopen = () => { state.textContent = 'Live: updates as the device reports.' }
  source.onerror = () => { state.textContent = 'Reconnecting…' }
  source.addEventListener('reading', (event) => {
    const r = JSON.parse(event.data)
    const at = r.ts.replace('T', ' ').slice(0, 19)
    let row = [...live.querySelectorAll('tbody tr')].find((tr) => tr.dataset.channel === r.channel)
    if (!row) { row = live.querySelector('tbody').insertRow(); row.dataset.channel = r.channel; for (let i = 0; i < 3; i++) row.insertCell() }
    row.cells[0].textContent = r.channel; row.cells[1].textContent = String(r.value); row.cells[2].textContent = at
    const seen = document.querySelector('[data-last-seen] dd')
    if (seen) seen.textContent = at.slice(0, 16) + ' UTC'
    const line = [...document.querySelectorAll('polyline[data-channel]')].find((l) => l.dataset.channel === r.channel)
    if (!line) return
    const [t0, t1, lo, hi, w, h, left, right, top, bottom] = line.closest('svg').dataset.frame.split(',').map(Number)
    const ts = Date.parse(r.ts)
    const x = Math.min(w - right, left + ((ts - t0) / Math.max(1, t1 - t0)) * (w - left - right))
    const y = Math.max(top, Math.min(h - bottom, h - bottom - ((r.value - lo) / (hi - lo)) * (h - top - bottom)))
    line.setAttribute('points', line.getAttribute('points') + ' ' + x.toFixed(1) + ',' + y.toFixed(1))
  })
}
document.addEventListener('click', async (event) => {
  const button = event.target.closest('[data-copy]')
  if (!button) return
  const text = document.getElementById(button.dataset.copy).textContent
  try { await navigator.clipboard.writeText(text); button.textContent = 'Copied' }
  catch { const range = document.createRange(); range.selectNodeContents(document.getElementById(button.dataset.copy)); getSelection().removeAllRanges(); getSelection().addRange(range); button.textContent = 'Selected: press Ctrl+C' }
})
`

/** The console's icon: a green leaf on a dark disc, drawn here (nothing loads from elsewhere). */
export const FAVICON_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><circle cx="16" cy="16" r="16" fill="#1f2a24"/><path d="M9 22c0-8 6-13 15-13-1 9-6 15-13 15l-2 2-1-1 2-2c-.7-.3-1-.6-1-1z" fill="#5fbf7f"/></svg>'
