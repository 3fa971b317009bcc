// The console and the docs page as a person meets them: Debian's Chromium, driven by playwright-core, against a
// real server on loopback. Every request the browser makes is checked: one that would leave loopback is aborted
// and fails the test, so the pages are proved to work offline. Skipped (and says so) when /usr/bin/chromium is
// absent; .ci/run installs it. UPDATE_SCREENSHOTS=1 writes the pictures to docs/screenshots/ (else a temp dir).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { seedDemoAccount } from '../../src/seed.ts'
import { createTestEnv, waitFor, type TestEnv } from '../helpers.ts'

const CHROMIUM = '/usr/bin/chromium'
const available = existsSync(CHROMIUM)
if (!available) console.warn(`console-browser tests skipped: ${CHROMIUM} is absent (apt-get install chromium)`)

const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(import.meta.dir, '..', '..', 'docs', 'screenshots') : mkdtempSync(join(tmpdir(), 'hrs-shots-'))
const PHONE = { width: 390, height: 844 }
const DESKTOP = { width: 1280, height: 860 }

describe.skipIf(!available)('in a browser', () => {
  let env: TestEnv
  let browser: import('playwright-core').Browser
  let page: import('playwright-core').Page
  let demoToken: string
  /** The device the pairing test pairs, for the tests after it. */
  let paired: { device_id: string; device_key: string }
  const leftLoopback: string[] = []

  beforeAll(async () => {
    const { chromium } = await import('playwright-core')
    env = await createTestEnv()
    demoToken = (await seedDemoAccount(env.deps))!.token
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'], timeout: 30_000 })
    const context = await browser.newContext({ viewport: DESKTOP, permissions: ['clipboard-read', 'clipboard-write'] })
    await context.route('**/*', (route) => {
      const url = new URL(route.request().url())
      if (url.hostname === '127.0.0.1' || url.hostname === 'localhost') return route.continue()
      leftLoopback.push(url.href)
      return route.abort('blockedbyclient')
    })
    page = await context.newPage()
    page.setDefaultTimeout(15_000)
    mkdirSync(SHOTS, { recursive: true })
  })
  afterAll(async () => {
    await browser?.close()
    await env?.close()
  })

  /**
   * The page as a phone and as a desktop shows it. A viewport-only picture scrolls `focus` into view at each size
   * (the page reflows, so a scroll offset right at one width lands elsewhere at the other).
   */
  async function screenshot(name: string, fullPage = true, focus?: import('playwright-core').Locator) {
    await page.setViewportSize(PHONE)
    await focus?.scrollIntoViewIfNeeded()
    await page.screenshot({ path: join(SHOTS, `${name}-phone.png`), fullPage })
    await page.setViewportSize(DESKTOP)
    await focus?.scrollIntoViewIfNeeded()
    await page.screenshot({ path: join(SHOTS, `${name}-desktop.png`), fullPage })
  }

  /** How wide the page is laid out; more than the viewport means the page scrolls sideways. */
  const pageWidth = () => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number)

  test('sign in with the demo key, create a key with two scopes, use it, revoke it', async () => {
    await page.goto(`${env.baseUrl}/console`)
    expect(new URL(page.url()).pathname).toBe('/console/sign-in')
    await screenshot('sign-in')
    await page.fill('#token', demoToken)
    await page.click('button:has-text("Sign in")')
    await page.waitForURL('**/console/keys')
    expect(await page.textContent('h1')).toBe('API keys')

    await page.fill('#name', 'feeding app')
    await page.check('input[name="scope:animals:read"]')
    await page.check('input[name="scope:activities:write"]')
    await page.click('button:has-text("Create key")')
    const token = (await page.textContent('#new-token'))!
    expect(token).toMatch(/^hrs_pat_/)
    await page.click('button[data-copy="new-token"]')
    expect(await page.evaluate(() => (navigator as any).clipboard.readText())).toBe(token)
    await screenshot('keys-created')

    // What a person does next with curl, done with fetch.
    const call = (path: string, init: RequestInit = {}) => fetch(env.baseUrl + path, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } })
    expect((await call('/api/v1/animals')).status).toBe(200)
    const forbidden = await call('/api/v1/animals', { method: 'POST', body: JSON.stringify({ name: 'Nope', species_id: 'python-regius' }) })
    expect(forbidden.status).toBe(403)
    expect((await forbidden.json()).required_scopes).toEqual(['animals:write'])

    await page.goto(`${env.baseUrl}/console/keys`)
    const row = page.locator('tr', { hasText: 'feeding app' })
    await row.locator('button:has-text("Revoke")').click()
    await page.waitForURL('**/console/keys?revoked=*')
    expect(await page.locator('tr', { hasText: 'feeding app' }).textContent()).toContain('revoked')
    expect((await call('/api/v1/animals')).status).toBe(401)
  })

  test('the scope checkboxes at 390 px and 1280 px: each label within its cell and the card, none over another', async () => {
    await page.goto(`${env.baseUrl}/console/keys`)
    for (const viewport of [PHONE, DESKTOP]) {
      await page.setViewportSize(viewport)
      const layout = await page.locator('.scopes').evaluate((grid) => {
        const card = grid.closest('section')!.getBoundingClientRect()
        return [...grid.querySelectorAll('label')].map((label) => {
          // The text as drawn: a label's box stays in its grid cell while text too long for it runs on past it.
          const range = (globalThis as any).document.createRange()
          range.selectNodeContents(label)
          const text = range.getBoundingClientRect()
          const cell = label.getBoundingClientRect()
          return { scope: label.textContent!.trim(), text: { left: text.left, right: text.right, top: text.top, bottom: text.bottom }, cellRight: cell.right, cardRight: card.right - 16 }
        })
      })
      expect(layout.length).toBeGreaterThan(10)
      for (const l of layout) {
        expect({ width: viewport.width, scope: l.scope, inCell: l.text.right <= l.cellRight + 0.5, inCard: l.text.right <= l.cardRight + 0.5 }).toEqual({ width: viewport.width, scope: l.scope, inCell: true, inCard: true })
      }
      const overlapping = layout.flatMap((a, i) => layout.slice(i + 1).filter((b) =>
        a.text.left < b.text.right - 0.5 && b.text.left < a.text.right - 0.5 && a.text.top < b.text.bottom - 0.5 && b.text.top < a.text.bottom - 0.5).map((b) => `${a.scope} / ${b.scope}`))
      expect({ width: viewport.width, overlapping }).toEqual({ width: viewport.width, overlapping: [] })
    }
    await screenshot('keys', true, page.locator('.scopes'))
  })

  test('complete a pairing: claim/start → the console → the polling device receives its key', async () => {
    const claim = await (await fetch(`${env.baseUrl}/api/v1/sensors/claim/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'TH-2 thermo-hygrometer', hardware_id: '24:6f:28:aa:01:02' }) })).json()
    const poll = async () => (await fetch(`${env.baseUrl}/api/v1/sensors/claim/status?claim_id=${claim.claim_id}`)).json()
    expect((await poll()).status).toBe('pending')

    // A person either types the code at verification_uri or follows verification_uri_complete (e.g. a QR code) and confirms it.
    await page.goto(claim.verification_uri)
    await page.fill('#user_code', claim.user_code)
    await page.fill('#name', 'Ball python rack')
    await page.fill('input[name="channel.0.key"]', 't1')
    await page.selectOption('select[name="channel.0.metric"]', 'temperature')
    await page.selectOption('select[name="channel.0.environment_id"]', { index: 1 })
    await page.fill('input[name="channel.1.key"]', 'h1')
    await page.selectOption('select[name="channel.1.metric"]', 'humidity')
    await screenshot('activate')
    await page.click('button:has-text("Approve device")')
    await page.waitForSelector('text=is paired')
    await screenshot('activate-done')

    // The device polls no faster than the interval (5 s) in real life; its first poll after approval gets the key.
    let state: any
    await waitFor(async () => { state = await poll(); return state.status === 'claimed' }, 10_000, 200)
    expect(state.device_key).toMatch(/^hrs_dev_/)
    paired = state

    const now = Date.now()
    const readings = Array.from({ length: 48 }, (_, i) => [
      { channel: 't1', value: 29 + 3 * Math.sin(i / 6), ts: now - (47 - i) * 20 * 60_000 },
      { channel: 'h1', value: 60 + 8 * Math.cos(i / 8), ts: now - (47 - i) * 20 * 60_000 },
      { channel: 'x9', value: 1 + i / 10, ts: now - (47 - i) * 20 * 60_000 },
    ]).flat()
    const sent = await fetch(`${env.baseUrl}/api/v1/sensors/readings`, { method: 'POST', headers: { authorization: `Bearer ${state.device_key}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings }) })
    expect(sent.status).toBe(202)
    // Last-seen and unmapped channels are recorded off the ingest hot path, shortly after the 202.
    await waitFor(async () => {
      const device = await (await fetch(`${env.baseUrl}/api/v1/sensors/devices/${state.device_id}`, { headers: { authorization: `Bearer ${state.device_key}` } })).json()
      return device.unmapped_channels.includes('x9') && device.last_seen_at !== null
    }, 10_000, 100)

    await page.goto(`${env.baseUrl}/console/devices`)
    const row = page.locator('tr', { hasText: 'Ball python rack' })
    expect(await row.textContent()).toContain('x9')
    await screenshot('devices')
    await row.locator('a').click()
    await page.waitForSelector('svg.chart polyline')
    expect(await page.locator('svg.chart polyline').count()).toBe(3)
  })

  test('the console on a phone: a chart per metric with its own axis, channels within the page, a grouped environment picker', async () => {
    await page.setViewportSize(PHONE)
    await page.goto(`${env.baseUrl}/console/devices`)
    expect(await pageWidth()).toBeLessThanOrEqual(PHONE.width)
    await page.locator('tr', { hasText: 'Ball python rack' }).locator('a').click()
    await page.waitForSelector('figure.chart')
    expect(await pageWidth()).toBeLessThanOrEqual(PHONE.width)

    // The previous test sent t1 = 29 ± 3 °C, h1 = 60 ± 8 % and x9 (unmapped) = 1 … 5.7.
    const charts = await page.locator('figure.chart').evaluateAll((figures) => figures.map((figure) => ({
      title: figure.querySelector('figcaption')!.textContent,
      axis: [...figure.querySelectorAll('text.y-label')].map((label) => Number(label.textContent)),
      smallestLabel: Math.min(...[...figure.querySelectorAll('text')].map((label) => label.getBoundingClientRect().height)),
    })))
    expect(charts.map((c) => c.title).sort()).toEqual(['Air temperature (°C)', 'Relative humidity (%)', 'x9 (unmapped)'])
    const axisOf = (title: string) => charts.find((c) => c.title === title)!.axis
    for (const [title, lowest, highest] of [['Air temperature (°C)', 26, 32], ['Relative humidity (%)', 52, 68], ['x9 (unmapped)', 1, 5.7]] as const) {
      expect({ title, lowest: Math.min(...axisOf(title)) <= lowest, highest: Math.max(...axisOf(title)) >= highest }).toEqual({ title, lowest: true, highest: true })
    }
    // Labels a person can read on the phone (they were about 6 px when all channels shared one wide chart).
    for (const chart of charts) expect({ title: chart.title, readable: chart.smallestLabel >= 11 }).toEqual({ title: chart.title, readable: true })

    const channels = page.locator('section', { has: page.locator('h2', { hasText: 'Channels' }) })
    const edge = (await channels.boundingBox())!
    const cells = await channels.locator('td').evaluateAll((tds) => tds.map((td) => ({ text: td.textContent, right: td.getBoundingClientRect().right })))
    expect(cells.length).toBe(8) // t1 and h1, four columns each
    for (const cell of cells) expect({ cell: cell.text, inside: cell.right <= edge.x + edge.width }).toEqual({ cell: cell.text, inside: true })

    // The demo's environments are grouped by where they are (a rack's tubs under "room › rack"), not 165 names in a row.
    await page.goto(`${env.baseUrl}/console/activate`)
    expect(await pageWidth()).toBeLessThanOrEqual(PHONE.width)
    const picker = await page.locator('select[name="channel.0.environment_id"]').evaluate((select) => ({
      groups: [...select.querySelectorAll('optgroup')].map((g) => ({ label: g.getAttribute('label')!, options: g.querySelectorAll('option').length })),
      ungrouped: select.querySelectorAll(':scope > option').length,
    }))
    expect(picker.ungrouped).toBe(1) // "environment…", the empty choice
    expect(picker.groups.reduce((n, g) => n + g.options, 0)).toBeGreaterThan(100)
    expect(picker.groups.some((g) => / › .+ rack /.test(g.label) && g.options === 18)).toBe(true)
    await page.setViewportSize(DESKTOP)
  })

  test('the time axis at 390 px and 1280 px: round, evenly spaced times, the date under the first and at midnight, no label over another', async () => {
    await page.goto(`${env.baseUrl}/console/devices/${paired.device_id}`)
    await page.waitForSelector('svg.chart polyline')
    for (const viewport of [PHONE, DESKTOP]) {
      await page.setViewportSize(viewport)
      const axes = await page.locator('svg.chart').evaluateAll((svgs) => svgs.map((svg) => {
        const box = svg.getBoundingClientRect()
        return {
          box: { left: box.left, right: box.right },
          labels: [...svg.querySelectorAll('text.x-label')].map((label) => {
            const rect = label.getBoundingClientRect()
            return { time: label.querySelector('tspan')!.textContent!, date: label.querySelector('.x-date')?.textContent ?? null, x: Number(label.querySelector('tspan')!.getAttribute('x')), left: rect.left, right: rect.right }
          }),
        }
      }))
      expect(axes.length).toBe(3)
      for (const axis of axes) {
        const { labels } = axis
        expect(labels.length).toBeGreaterThanOrEqual(3)
        // Round: whole hours, a whole number of steps apart; even: the same distance apart on the chart.
        const hours = labels.map((l) => { expect(l.time).toMatch(/^\d\d:00$/); return Number(l.time.slice(0, 2)) })
        const steps = hours.slice(1).map((hour, i) => (hour - hours[i]! + 24) % 24)
        expect(new Set(steps).size).toBe(1)
        expect(hours.every((hour) => hour % steps[0]! === 0)).toBe(true)
        const gaps = labels.slice(1).map((l, i) => l.x - labels[i]!.x)
        for (const gap of gaps) expect(Math.abs(gap - gaps[0]!)).toBeLessThan(0.2)
        // A 24-hour span names its day: the first label and any midnight carry the date ("26 Nov").
        expect(labels[0]!.date).toMatch(/^\d{1,2} [A-Z][a-z]{2}$/)
        for (const l of labels) expect({ time: l.time, dated: l.date !== null }).toEqual({ time: l.time, dated: l === labels[0] || l.time === '00:00' })
        for (const [i, l] of labels.entries()) {
          expect({ width: viewport.width, time: l.time, inside: l.left >= axis.box.left && l.right <= axis.box.right }).toEqual({ width: viewport.width, time: l.time, inside: true })
          if (i) expect({ width: viewport.width, time: l.time, clear: l.left > labels[i - 1]!.right }).toEqual({ width: viewport.width, time: l.time, clear: true })
        }
      }
    }
    await screenshot('device')
  })

  test('a device page lists a channel as unmapped as soon as its chart shows one (before ingest writes the channel back)', async () => {
    // Ingest notes a newly unmapped channel on the device row in the background, once a second; stopped here, so
    // the row never learns of x8 and the page has only the readings to go by.
    env.deps.ingest.devices.stop()
    const now = Date.now()
    const readings = Array.from({ length: 6 }, (_, i) => ({ channel: 'x8', value: 2 + i, ts: now - (5 - i) * 15 * 60_000 }))
    const sent = await fetch(`${env.baseUrl}/api/v1/sensors/readings`, { method: 'POST', headers: { authorization: `Bearer ${paired.device_key}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings }) })
    expect(sent.status).toBe(202)
    const device = await (await fetch(`${env.baseUrl}/api/v1/sensors/devices/${paired.device_id}`, { headers: { authorization: `Bearer ${paired.device_key}` } })).json()
    expect(device.unmapped_channels).toEqual(['x9'])

    await waitFor(async () => {
      await page.goto(`${env.baseUrl}/console/devices/${paired.device_id}`)
      return (await page.locator('figure.chart figcaption').allTextContents()).includes('x8 (unmapped)')
    }, 10_000, 100)
    const header = await page.locator('.facts div', { has: page.locator('dt', { hasText: 'Unmapped channels' }) }).locator('.tag').allTextContents()
    const charted = (await page.locator('figure.chart figcaption').allTextContents()).filter((title) => title.endsWith(' (unmapped)')).map((title) => title.split(' ')[0])
    expect(header).toEqual(['x8', 'x9'])
    expect(charted.sort()).toEqual(header)
  })

  test('the docs page renders offline and finds an operation', async () => {
    await page.goto(`${env.baseUrl}/api/v1/docs`)
    const operation = page.locator('.opblock-summary', { hasText: 'List animals' }).first()
    await operation.waitFor()
    await operation.click()
    await page.waitForSelector('.opblock.is-open >> text=Responses')
    expect(await page.locator('.opblock.is-open .opblock-summary-path').first().textContent()).toBe('/api/v1/animals')
    await screenshot('docs', false, page.locator('.opblock.is-open .opblock-summary').first())
  })

  test('the docs page on a phone: the operations render with no sideways scroll; a header parameter shows its description', async () => {
    await page.setViewportSize(PHONE)
    await page.goto(`${env.baseUrl}/api/v1/docs`)
    await page.locator('.opblock-summary').first().waitFor()
    expect(await page.locator('.opblock').count()).toBeGreaterThan(30)
    expect(await pageWidth()).toBeLessThanOrEqual(PHONE.width)

    // An opened operation (parameters, responses with their header tables) stays within the width too.
    const create = page.locator('.opblock', { has: page.locator('.opblock-summary', { hasText: 'Record an activity' }) })
    await create.locator('.opblock-summary').click()
    const idempotencyKey = create.locator('tr[data-param-name="idempotency-key"][data-param-in="header"]')
    expect(await idempotencyKey.locator('.parameters-col_description').textContent()).toContain('Makes a retry safe')
    await create.locator('.responses-wrapper').waitFor()
    expect(await pageWidth()).toBeLessThanOrEqual(PHONE.width)
    await page.setViewportSize(DESKTOP)
  })

  test('the docs page at 390 px and 1280 px: the first operation on the first screen, the guide folded above it and whole', async () => {
    for (const viewport of [PHONE, DESKTOP]) {
      await page.setViewportSize(viewport)
      await page.goto(`${env.baseUrl}/api/v1/docs`)
      const first = page.locator('.opblock').first()
      await first.waitFor()
      const top = (await first.boundingBox())!.y
      expect({ width: viewport.width, top, onFirstScreen: top + 40 <= viewport.height }).toEqual({ width: viewport.width, top, onFirstScreen: true })
      const guide = page.locator('details#guide')
      expect(await guide.getAttribute('open')).toBeNull()
      expect(await guide.locator('summary').textContent()).toContain('Authentication')
      // Nothing lost: every topic of the document's description is in the guide, shown when it is opened.
      const description: string = (await (await fetch(`${env.baseUrl}/api/v1/openapi.json`)).json()).info.description
      const topics = [...description.matchAll(/^- \*\*([^*]+)\*\*/gm)].map((m) => m[1]!)
      expect(topics.length).toBeGreaterThan(10)
      const body = guide.locator('.description')
      expect(await body.isVisible()).toBe(false)
      await guide.locator('summary').click()
      expect(await body.isVisible()).toBe(true)
      expect(await body.locator('li > strong:first-child').allTextContents()).toEqual(topics)
      // …and only there: the description Swagger UI draws under the title is empty.
      expect((await page.locator('.information-container .info > .info__description').textContent())!.trim()).toBe('')
      expect(await pageWidth()).toBeLessThanOrEqual(viewport.width)
    }
    // A link to the guide opens it.
    await page.goto(`${env.baseUrl}/api/v1/docs#guide`)
    await page.locator('details#guide').waitFor()
    expect(await page.locator('details#guide').getAttribute('open')).not.toBeNull()
    await page.goto(`${env.baseUrl}/api/v1/docs`)
    await page.locator('.opblock').first().waitFor()
    await screenshot('docs-first-screen', false)
  })

  test('pairing without PUBLIC_URL: signed in by localhost, the device\'s 127.0.0.1 link opens the activation form, not the sign-in page', async () => {
    // PUBLIC_URL unset: publicUrl is the loopback address served (here 127.0.0.1 and the test's port).
    const loopback = await createTestEnv({ publicUrlIsLoopbackDefault: true })
    const context = await browser.newContext({ viewport: PHONE })
    try {
      const person = await loopback.account({ scopes: ['keys:write', 'sensors:write'] })
      const tab = await context.newPage()
      tab.setDefaultTimeout(15_000)
      const byName = loopback.baseUrl.replace('127.0.0.1', 'localhost')
      await tab.goto(`${byName}/console`)
      await tab.fill('#token', person.token)
      await tab.click('button:has-text("Sign in")')
      await tab.waitForURL('**/console/keys')

      const claim = await (await fetch(`${byName}/api/v1/sensors/claim/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'TH-2 thermo-hygrometer' }) })).json()
      expect(claim.verification_uri_complete).toStartWith(`${loopback.baseUrl}/console/activate?user_code=`)
      for (const viewport of [PHONE, DESKTOP]) {
        await tab.setViewportSize(viewport)
        await tab.goto(claim.verification_uri_complete)
        expect({ width: viewport.width, heading: await tab.textContent('h1') }).toEqual({ width: viewport.width, heading: 'Activate a device' })
        expect(await tab.inputValue('#user_code')).toBe(claim.user_code)
      }
      // The console moved the person to PUBLIC_URL's name before they signed in.
      expect(new URL(tab.url()).origin).toBe(loopback.baseUrl)
    } finally {
      await context.close()
      await loopback.close()
    }
  })

  test('sign out ends the session', async () => {
    await page.goto(`${env.baseUrl}/console/keys`)
    await page.click('button:has-text("Sign out")')
    await page.waitForURL('**/console/sign-in')
    await page.goto(`${env.baseUrl}/console/keys`)
    expect(new URL(page.url()).pathname).toBe('/console/sign-in')
  })

  test('no request left loopback', () => {
    expect(leftLoopback).toEqual([])
  })
})
