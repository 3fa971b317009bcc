// The console's pages, as functions of what they show. No data access here: index.ts gathers, these render.
import { METRICS } from '../../db/reference/metrics.ts'
import type { Account } from '../accounts.ts'
import { maskedToken, type KeyRow } from '../auth/keys.ts'
import type { FieldError } from '../http/errors.ts'
import type { DeviceRow, presentDevice } from '../modules/sensors/service.ts'
import { CONSOLE_PATH, Html, html, notice } from './html.ts'

type PresentedDevice = ReturnType<typeof presentDevice>

/** "1 active key", "2 active keys". */
const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`
const when = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : 'never')
const csrfField = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}">`
const tags = (names: readonly string[]) => names.length ? names.map((n) => html`<span class="tag">${n}</span>`) : html`<span class="muted">none</span>`

export function signInBody(input: { csrf: string; next: string; error?: string }): Html {
  return html`${input.error ? notice('error', input.error) : ''}
<section><form method="post" action="${CONSOLE_PATH}/sign-in">${csrfField(input.csrf)}<input type="hidden" name="next" value="${input.next}">
<p>Sign in with a personal access key that holds the <code>keys:write</code> scope (the demo key printed at the first start holds every scope).</p>
<label for="token">Personal access key</label><input type="password" id="token" name="token" autocomplete="off" placeholder="hrs_pat_…" required>
<p><button type="submit">Sign in</button></p></form></section>`
}

export interface AccountFacts {
  account: Account
  apiAccess: boolean
  personalLimit: number
  deviceLimit: number
  windowSeconds: number
  /** Devices and animals are undefined where the signed-in key may not read them (sensors:read, animals:read). */
  usage: { activeKeys: number; devices: number | undefined; animals: number | undefined }
}

export function keysBody(input: {
  csrf: string; keys: KeyRow[]; held: readonly string[]; facts: AccountFacts; signedInKeyId: string
  created?: { key: KeyRow; token: string }; message?: Html; form?: { name?: string; scopes?: readonly string[]; expiresOn?: string }
}): Html {
  const { facts } = input
  const now = Date.now()
  const state = (k: KeyRow) => (k.revokedAt ? 'revoked' : k.expiresAt && k.expiresAt.getTime() <= now ? 'expired' : 'active')
  const ticked = new Set(input.form?.scopes ?? [])
  return html`${input.created ? html`<section class="created">${notice('ok', html`Key <strong>${input.created.key.name}</strong> created. Copy it now: it is shown this once.`)}
<div class="token"><code id="new-token">${input.created.token}</code><button type="button" class="secondary" data-copy="new-token">Copy</button></div></section>` : ''}
${input.message ?? ''}
<section><h2>Account</h2><dl class="facts">
<div><dt>Account</dt><dd>${facts.account.name}</dd></div>
<div><dt>Plan</dt><dd>${facts.account.plan}${facts.account.liveTestAllowlisted ? ' (live-test allowlist)' : ''}</dd></div>
<div><dt>API access</dt><dd>${facts.apiAccess ? 'yes' : 'no: needs the Breeder plan or above'}</dd></div>
<div><dt>Rate limit, personal keys</dt><dd>${facts.personalLimit} requests / ${facts.windowSeconds} s per key</dd></div>
<div><dt>Rate limit, device keys</dt><dd>${facts.deviceLimit} requests / ${facts.windowSeconds} s per device</dd></div>
<div><dt>Usage</dt><dd>${[count(facts.usage.activeKeys, 'active key'), facts.usage.devices === undefined ? '' : count(facts.usage.devices, 'device'), facts.usage.animals === undefined ? '' : count(facts.usage.animals, 'animal')].filter(Boolean).join(' · ')}</dd></div>
</dl></section>
<section><h2>Create a key</h2><form method="post" action="${CONSOLE_PATH}/keys">${csrfField(input.csrf)}
<label for="name">Name</label><input type="text" id="name" name="name" maxlength="100" required placeholder="e.g. feeding app" value="${input.form?.name ?? ''}">
<label>Scopes <span class="muted">(only those your key holds)</span></label><div class="scopes">${input.held.map((s) => html`<label><input type="checkbox" name="scope:${s}" value="on"${ticked.has(s) ? html` checked` : ''}> ${s}</label>`)}</div>
<label for="expires_on">Expires on <span class="muted">(optional, end of that day UTC)</span></label><input type="date" id="expires_on" name="expires_on" value="${input.form?.expiresOn ?? ''}">
<p><button type="submit">Create key</button></p></form></section>
<section><h2>Personal keys</h2><table class="stack"><thead><tr><th>Name</th><th>Key</th><th>Scopes</th><th>Last used</th><th>Expires</th><th>State</th><th></th></tr></thead><tbody>
${input.keys.map((k) => html`<tr data-key-id="${k.id}"><td data-label="Name">${k.name}${k.id === input.signedInKeyId ? html` <span class="tag">signed in</span>` : ''}</td><td data-label="Key"><code>${maskedToken(k)}</code></td>
<td data-label="Scopes">${tags(k.scopes)}</td><td data-label="Last used">${when(k.lastUsedAt)}</td><td data-label="Expires">${k.expiresAt ? when(k.expiresAt) : 'never'}</td><td data-label="State">${state(k)}</td>
<td>${state(k) === 'active' ? html`<form method="post" action="${CONSOLE_PATH}/keys/${k.id}/revoke">${csrfField(input.csrf)}<button type="submit" class="danger">Revoke</button></form>` : ''}</td></tr>`)}
</tbody></table></section>`
}

export interface ChannelRowInput { key: string; metric: string; environment_id: string }

/** An environment as the pickers need it. */
export interface Place { id: string; name: string; parent_id: string | null }
interface Option { value: string; label: string }
interface OptionGroup { label: string; options: Option[] }

/**
 * The environments grouped under their parent, each group labelled by the parent's path ("Snake room › Python rack
 * A"), in tree order, the top-level ones first. A collection's places are mostly tubs named A01…A18 per rack: in one
 * flat list of 165 names they could not be told apart or found. One group only (no parents at all) stays flat.
 */
export function placeGroups(places: readonly Place[]): OptionGroup[] {
  const known = new Set(places.map((p) => p.id))
  const children = new Map<string | null, Place[]>()
  for (const place of places) {
    const parent = place.parent_id && known.has(place.parent_id) ? place.parent_id : null
    children.set(parent, [...(children.get(parent) ?? []), place])
  }
  const groups: OptionGroup[] = []
  const visit = (parent: string | null, path: string) => {
    const kids = children.get(parent) ?? []
    if (kids.length) groups.push({ label: path, options: kids.map((p) => ({ value: p.id, label: p.name })) })
    for (const kid of kids) visit(kid.id, parent === null ? kid.name : `${path} › ${kid.name}`)
  }
  visit(null, 'Top level')
  return groups
}

export function activateBody(input: {
  /** Undefined where the key may not read environments: the rows then offer no environment picker. */
  csrf: string; userCode: string; name: string; channels: ChannelRowInput[]; environments: readonly Place[] | undefined
  canPair: boolean; errors?: FieldError[]; error?: string
}): Html {
  const option = (o: Option, chosen: string) => html`<option value="${o.value}"${o.value === chosen ? html` selected` : ''}>${o.label}</option>`
  const select = (name: string, groups: OptionGroup[], chosen: string, empty: string) =>
    html`<select name="${name}" aria-label="${name}"><option value="">${empty}</option>${groups.length === 1
      ? groups[0]!.options.map((o) => option(o, chosen))
      : groups.map((g) => html`<optgroup label="${g.label}">${g.options.map((o) => option(o, chosen))}</optgroup>`)}</select>`
  const metrics = [{ label: 'Metrics', options: METRICS.map((m) => ({ value: m.id, label: `${m.name} (${m.unit})` })) }]
  const places = input.environments && placeGroups(input.environments)
  return html`${input.error ? notice('error', input.error) : ''}${input.errors?.length ? notice('error', html`The device was not paired:<br>${input.errors.map((e) => html`${e.path.replace('/body/', '')}: ${e.message}<br>`)}`) : ''}
${input.canPair ? '' : notice('error', html`Your key lacks the <code>sensors:write</code> scope, which pairing a device needs.`)}
<section><form method="post" action="${CONSOLE_PATH}/activate">${csrfField(input.csrf)}
<p>Enter the code your device shows (or confirm it, if you followed the device's link).</p>
<label for="user_code">Device code</label><input type="text" class="code-input" id="user_code" name="user_code" required maxlength="20" autocomplete="off" placeholder="BCDF-GHJK" value="${input.userCode}">
<label for="name">Device name <span class="muted">(optional)</span></label><input type="text" id="name" name="name" maxlength="100" placeholder="e.g. Python rack thermostat" value="${input.name}">
<h2>Channels</h2><p class="muted">Map what the device reports (e.g. <code>t1</code>) to a metric${input.environments ? ' and an enclosure' : html` (an enclosure too with a key holding <code>environment:read</code>)`}. Leave rows empty to map later; readings on unmapped channels are kept.</p>
${input.channels.map((c, i) => html`<div class="row"><input type="text" name="channel.${i}.key" aria-label="channel ${i + 1} key" placeholder="channel, e.g. t${i + 1}" maxlength="32" value="${c.key}">
${select(`channel.${i}.metric`, metrics, c.metric, 'metric…')}${places ? select(`channel.${i}.environment_id`, places, c.environment_id, 'environment…') : ''}</div>`)}
<p><button type="submit"${input.canPair ? '' : html` disabled`}>Approve device</button></p></form></section>`
}

export function pairedBody(device: DeviceRow): Html {
  return html`${notice('ok', html`<strong>${device.name}</strong> is paired. The device receives its key on its next poll; nothing else to copy.`)}
<p><a href="${CONSOLE_PATH}/devices/${device.id}">See the device</a> · <a href="${CONSOLE_PATH}/activate">Activate another</a></p>`
}

export function devicesBody(devices: PresentedDevice[]): Html {
  if (!devices.length) return html`<section><p>No devices yet. <a href="${CONSOLE_PATH}/activate">Activate one</a> with the code it shows.</p></section>`
  return html`<section><table class="stack"><thead><tr><th>Device</th><th>Model</th><th>Last seen</th><th>Channels</th><th>Unmapped channels</th></tr></thead><tbody>
${devices.map((d) => html`<tr><td data-label="Device"><a href="${CONSOLE_PATH}/devices/${d.id}">${d.name}</a></td><td data-label="Model">${d.model ?? '—'}</td><td data-label="Last seen">${when(d.last_seen_at)}</td>
<td data-label="Channels">${tags(d.channels.map((c) => c.metric ? `${c.key} → ${c.metric}` : c.key))}</td><td data-label="Unmapped">${tags(d.unmapped_channels)}</td></tr>`)}
</tbody></table></section>`
}

const round = (n: number) => Math.round(n * 100) / 100
const PALETTE = ['#2f6b4f', '#b5542d', '#2d5fb5', '#8a3fa0', '#9a7a10', '#1f8a8a']
const METRIC_BY_ID = new Map(METRICS.map((m) => [m.id, m]))
const HOUR_MS = 3600 * 1000
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
/** Hours and minutes, UTC. */
const clock = (ts: number) => new Date(ts).toISOString().slice(11, 16)
/** "26 Nov", UTC. */
const day = (ts: number) => `${new Date(ts).getUTCDate()} ${MONTHS[new Date(ts).getUTCMonth()]}`

/** A point of a channel's series (a bucket's average). */
export interface ChartPoint { ts: number; channel: string; metric: string | null; value: number }

/** Round tick values (1, 2 or 5 times a power of ten) spanning [lo, hi] in about three steps. */
function ticksFor(lo: number, hi: number): { ticks: number[]; decimals: number } {
  if (hi - lo < 1e-9) { lo -= 1; hi += 1 }
  const raw = (hi - lo) / 3
  const power = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 5, 10].map((m) => m * power).find((candidate) => candidate >= raw)!
  const ticks: number[] = []
  for (let i = Math.floor(lo / step); i <= Math.ceil(hi / step); i++) ticks.push(i * step)
  return { ticks, decimals: Math.min(3, Math.max(0, -Math.floor(Math.log10(step)))) }
}

/**
 * Round times (whole multiples of 1, 2, 3, 6 or 12 hours, UTC) at most five to the span, so labels are evenly
 * spaced and name hours a person reads at a glance; the first one and each midnight also carry the date.
 */
export function timeTicksFor(from: number, to: number): { ts: number; date: boolean }[] {
  const step = [1, 2, 3, 6, 12, 24].map((hours) => hours * HOUR_MS).find((candidate) => (to - from) / candidate <= 5) ?? 24 * HOUR_MS
  const ticks: { ts: number; date: boolean }[] = []
  for (let ts = Math.ceil(from / step) * step; ts <= to; ts += step) ticks.push({ ts, date: !ticks.length || ts % (24 * HOUR_MS) === 0 })
  return ticks
}

/**
 * The channels the device page calls unmapped: those ingest recorded as such, and any whose latest reading shown
 * arrived without a metric (ingest writes the former back up to a second after the readings can be read, so the
 * header said "none" above an unmapped channel's chart), less those mapped since.
 */
export function unmappedChannels(device: PresentedDevice, rows: readonly ChartPoint[]): string[] {
  const latest = new Map<string, ChartPoint>()
  for (const row of rows) if ((latest.get(row.channel)?.ts ?? -Infinity) <= row.ts) latest.set(row.channel, row)
  const mapped = new Set(device.channels.filter((c) => c.metric).map((c) => c.key))
  const recorded = [...latest.values()].filter((row) => row.metric === null).map((row) => row.channel)
  return [...new Set([...device.unmapped_channels, ...recorded])].filter((channel) => !mapped.has(channel)).sort()
}

/**
 * One chart per metric (units differ, so each gets its own y-axis in its unit), an unmapped channel on its own;
 * all share the time axis, which spans `window` (the last 24 hours). Sized so that on a phone the SVG is drawn at
 * about its own scale, and its 12-unit labels are about 12 px: one chart of every channel, each scaled to its own
 * range, drew 11-unit labels at about 6 px there. `unmapped` is the page's list, so a chart's title agrees with it.
 */
export function readingsChart(rows: readonly ChartPoint[], window: { from: number; to: number }, unmapped: readonly string[]): Html {
  if (!rows.length) return html`<p class="muted">No readings in the last 24 hours.</p>`
  const byChannel = new Map<string, ChartPoint[]>()
  for (const row of rows) byChannel.set(row.channel, [...(byChannel.get(row.channel) ?? []), row])
  const channels = [...byChannel].map(([channel, series], i) => ({ channel, series, color: PALETTE[i % PALETTE.length]!, metric: series.at(-1)!.metric }))
  const groups = new Map<string, typeof channels>()
  for (const c of channels) {
    const group = c.metric ?? `channel:${c.channel}`
    groups.set(group, [...(groups.get(group) ?? []), c])
  }
  const [w, h, left, right, top, bottom] = [320, 184, 44, 22, 10, 44]
  const t0 = Math.min(window.from, ...rows.map((r) => r.ts))
  const t1 = Math.max(window.to, ...rows.map((r) => r.ts))
  const x = (ts: number) => left + ((ts - t0) / Math.max(1, t1 - t0)) * (w - left - right)
  const timeLabels = timeTicksFor(t0, t1).map(({ ts, date }) => html`<line x1="${x(ts).toFixed(1)}" y1="${h - bottom}" x2="${x(ts).toFixed(1)}" y2="${h - bottom + 4}" stroke="#9aa39e"/><text class="x-label" text-anchor="middle" y="${h - bottom + 17}"><tspan x="${x(ts).toFixed(1)}">${clock(ts)}</tspan>${date ? html`<tspan class="x-date" x="${x(ts).toFixed(1)}" dy="14">${day(ts)}</tspan>` : ''}</text>`)
  const charts = [...groups.values()].map((members) => {
    const values = members.flatMap((m) => m.series.map((r) => r.value))
    const { ticks, decimals } = ticksFor(Math.min(...values), Math.max(...values))
    const [lo, hi] = [ticks[0]!, ticks.at(-1)!]
    const y = (v: number) => h - bottom - ((v - lo) / (hi - lo)) * (h - top - bottom)
    const first = members[0]!
    const metric = first.metric ? METRIC_BY_ID.get(first.metric) : undefined
    const title = metric ? `${metric.name} (${metric.unit})` : first.metric ?? `${first.channel} (${unmapped.includes(first.channel) ? 'unmapped' : 'no metric when recorded'})`
    const grid = ticks.map((v) => html`<line x1="${left}" y1="${y(v).toFixed(1)}" x2="${w - right}" y2="${y(v).toFixed(1)}" stroke="#e6eae7"/><text class="y-label" x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${v.toFixed(decimals)}</text>`)
    const lines = members.map((m) => html`<polyline data-channel="${m.channel}" fill="none" stroke="${m.color}" stroke-width="2" points="${m.series.map((r) => `${x(r.ts).toFixed(1)},${y(r.value).toFixed(1)}`).join(' ')}"/>`)
    return html`<figure class="chart"><figcaption>${title}</figcaption>
<svg class="chart" data-frame="${[t0, t1, lo, hi, w, h, left, right, top, bottom].join(',')}" viewBox="0 0 ${w} ${h}" role="img" aria-label="${title}, last 24 hours" font-size="12" fill="#5b6660">${grid}
<line x1="${left}" y1="${h - bottom}" x2="${w - right}" y2="${h - bottom}" stroke="#9aa39e"/>${timeLabels}${lines}</svg></figure>`
  })
  const summary = channels.map((c) => {
    const values = c.series.map((r) => r.value)
    return { ...c, lo: Math.min(...values), hi: Math.max(...values), last: values.at(-1)! }
  })
  return html`<p class="muted">Times in UTC.</p><div class="charts">${charts}</div>
<div class="scroll"><table><thead><tr><th>Channel</th><th>Metric</th><th>Latest (15-min avg)</th><th>Range (24 h)</th></tr></thead><tbody>
${summary.map((l) => html`<tr><td><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${l.color}"/></svg> ${l.channel}</td><td>${l.metric ?? html`<span class="muted">unmapped</span>`}</td><td>${round(l.last)}</td><td>${round(l.lo)} – ${round(l.hi)}</td></tr>`)}</tbody></table></div>`
}

/**
 * How the tools a site already runs write to this device (README, "Readings from InfluxDB clients"): Telegraf, Home
 * Assistant and curl, pointed at the service's public URL, with the device key's place marked (the console never has
 * the key: it was shown once, at registration or to the device's own poll).
 */
export function lineProtocolSnippets(publicUrl: string): Html {
  const url = new URL(publicUrl)
  const tls = url.protocol === 'https:'
  const port = url.port || (tls ? '443' : '80')
  const base = publicUrl.replace(/\/$/, '')
  const telegraf = `[[outputs.influxdb_v2]]\n  urls = ["${base}"]\n  token = "hrs_dev_…"        # this device's key\n  organization = "site"      # accepted, not read\n  bucket = "readings"        # accepted, not read\n  content_encoding = "gzip"`
  const homeAssistant = `influxdb:\n  api_version: 2\n  host: ${url.hostname}\n  port: ${port}\n  ssl: ${tls}\n  token: hrs_dev_…           # this device's key\n  organization: site\n  bucket: readings`
  const curl = `curl -i "${base}/api/v2/write?precision=s" -H "Authorization: Token $DEVICE_KEY" \\\n  --data-binary "weather,room=viv_1 temp=27.5,hum=61i $(date +%s)"`
  return html`<section><h2>Send readings from InfluxDB tools</h2>
<p class="muted">Collectors that write InfluxDB line protocol write here with this device's key in place of <code>hrs_dev_…</code>. Each series (measurement, tags, field) arrives as a channel of this device, unmapped until you map it.</p>
<h3>Telegraf</h3><pre><code>${telegraf}</code></pre>
<h3>Home Assistant (<code>configuration.yaml</code>)</h3><pre><code>${homeAssistant}</code></pre>
<h3>curl</h3><pre><code>${curl}</code></pre></section>`
}

/** `live`: the page opens the device's readings stream (the viewer may read readings) and updates as they arrive. */
export function deviceBody(device: PresentedDevice, places: Map<string, string>, chart: Html, snippets: Html, live = false): Html {
  return html`<section><dl class="facts"><div><dt>Model</dt><dd>${device.model ?? '—'}</dd></div><div><dt>Hardware id</dt><dd>${device.hardware_id ?? '—'}</dd></div>
<div data-last-seen><dt>Last seen</dt><dd>${when(device.last_seen_at)}</dd></div><div><dt>Unmapped channels</dt><dd>${tags(device.unmapped_channels)}</dd></div></dl></section>
<section><h2>Channels</h2>${device.channels.length ? html`<table class="stack"><thead><tr><th>Channel</th><th>Metric</th><th>Unit</th><th>Environment</th></tr></thead><tbody>
${device.channels.map((c) => html`<tr><td data-label="Channel">${c.key}</td><td data-label="Metric">${c.metric ?? '—'}</td><td data-label="Unit">${c.unit ?? '—'}</td><td data-label="Environment">${c.environment_id ? places.get(c.environment_id) ?? c.environment_id : '—'}</td></tr>`)}</tbody></table>` : html`<p class="muted">None mapped.</p>`}</section>
<section><h2>Latest readings</h2>${chart}</section>${live ? html`
<section data-live="${CONSOLE_PATH}/devices/${device.id}/stream"><h2>Live</h2><p class="muted" data-live-state>Connecting…</p>
<table><thead><tr><th>Channel</th><th>Value</th><th>At (UTC)</th></tr></thead><tbody></tbody></table></section>` : ''}
${snippets}`
}

export const errorBody = (message: string) => html`${notice('error', message)}<p><a href="${CONSOLE_PATH}/keys">Back to the console</a></p>`
