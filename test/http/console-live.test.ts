// The console's device page updates live (issue 59): Debian's Chromium (playwright-core) opens a device page, its
// EventSource holds the device's stream, and a reading the device posts shows in the page's live table, last-seen
// time and chart without a reload and without polling (the page makes no request after the stream's). Skipped when
// /usr/bin/chromium is absent.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { seedDemoAccount } from '../../src/seed.ts'
import { backendLabel, createTestEnv, type TestEnv } from '../helpers.ts'

const CHROMIUM = '/usr/bin/chromium'
const available = existsSync(CHROMIUM)
if (!available) console.warn(`console-live tests skipped: ${CHROMIUM} is absent (apt-get install chromium)`)

describe.skipIf(!available)(`the device page in a browser (${backendLabel})`, () => {
  let env: TestEnv
  let browser: import('playwright-core').Browser
  let demoToken: string

  beforeAll(async () => {
    const { chromium } = await import('playwright-core')
    env = await createTestEnv({ deviceRateLimitPerMinute: 1_000_000 })
    demoToken = (await seedDemoAccount(env.deps))!.token
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'], timeout: 30_000 })
  })
  afterAll(async () => {
    await browser?.close()
    await env?.close()
  })

  test('a reading posted by the device appears on its open page, through EventSource, with no polling', async () => {
    const device = await (await env.request('POST', '/api/v1/sensors/devices', { token: demoToken, body: { name: 'Live one', channels: [{ key: 't1', metric: 'temperature' }] } })).json()
    const post = (value: number) => env.request('POST', '/api/v1/sensors/readings', { token: device.key, body: { readings: [{ channel: 't1', value }] } })
    expect((await post(20)).status).toBe(202)
    const page = await browser.newPage()
    page.setDefaultTimeout(15_000)
    await page.goto(`${env.baseUrl}/console`)
    await page.fill('#token', demoToken)
    await page.click('button:has-text("Sign in")')
    await page.waitForURL('**/console/keys')
    await page.goto(`${env.baseUrl}/console/devices/${device.id}`)
    await page.waitForSelector('[data-live-state]:has-text("Live:")')
    const pointsBefore = (await page.getAttribute('polyline[data-channel="t1"]', 'points'))!.split(' ').length
    const requests: string[] = []
    page.on('request', (request) => requests.push(request.url()))
    expect((await post(23.25)).status).toBe(202)
    await page.waitForSelector('[data-live] tbody tr[data-channel="t1"] td:has-text("23.25")')
    const pointsAfter = (await page.getAttribute('polyline[data-channel="t1"]', 'points'))!.split(' ').length
    expect(pointsAfter).toBe(pointsBefore + 1)
    expect(await page.textContent('[data-last-seen] dd')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/)
    // Another reading, and still no request from the page: the stream carried both.
    expect((await post(24.5)).status).toBe(202)
    await page.waitForSelector('[data-live] tbody tr[data-channel="t1"] td:has-text("24.5")')
    expect(requests).toEqual([])
    expect(env.deps.streams.openStreams).toBe(1)
    await page.close()
  }, 60_000)
})
