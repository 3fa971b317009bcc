// Heavy readings reads wait for a lull in the light requests in flight (ingest/foreground.ts): at once when there
// are none, when the last one leaves, and never longer than the bound they are given.
import { expect, test } from 'bun:test'
import { Foreground } from '../../ingest/foreground.ts'

test('with no light request in flight, a lull is now', async () => {
  expect(await new Foreground().lull(1_000)).toBe(0)
})

test('a lull comes when the last light request leaves, not before; a second leave changes nothing', async () => {
  const foreground = new Foreground()
  const first = foreground.enter()
  const second = foreground.enter()
  let waited: number | undefined
  const lull = foreground.lull(5_000).then((seconds) => { waited = seconds })
  await Bun.sleep(20)
  first()
  first()
  await Bun.sleep(20)
  expect(waited).toBeUndefined()
  second()
  await lull
  expect(waited).toBeGreaterThan(0.03)
  expect(waited).toBeLessThan(5)
  // Everyone left: the next lull is at once.
  expect(await foreground.lull(5_000)).toBe(0)
})

test('a steady stream of light requests holds a heavy read back at most the bound', async () => {
  const foreground = new Foreground()
  let leave = foreground.enter()
  // Each request enters before the one before it leaves: never a moment without one.
  const stream = setInterval(() => { const before = leave; leave = foreground.enter(); before() }, 5)
  try {
    const waited = await foreground.lull(100)
    expect(waited).toBeGreaterThanOrEqual(0.09)
    expect(waited).toBeLessThan(1)
  } finally {
    clearInterval(stream)
    leave()
  }
})
