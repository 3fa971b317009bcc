// Heavy readings queries run a few at a time per process (ingest/lanes.ts): first come first served, and a waiter
// whose deadline passes leaves the queue without taking a lane.
import { expect, test } from 'bun:test'
import { Lanes } from '../../ingest/lanes.ts'

const never = new AbortController().signal

test('one lane: the second waits until the first leaves, the third after it, in order', async () => {
  const lanes = new Lanes(1)
  const order: string[] = []
  expect(await lanes.enter(never)).toBe(true)
  const second = lanes.enter(never).then((ok) => { order.push('second'); return ok })
  const third = lanes.enter(never).then((ok) => { order.push('third'); return ok })
  await Bun.sleep(5)
  expect(order).toEqual([])
  lanes.leave()
  expect(await second).toBe(true)
  expect(order).toEqual(['second'])
  lanes.leave()
  expect(await third).toBe(true)
  expect(order).toEqual(['second', 'third'])
})

test('a waiter whose signal aborts gets false and gives up its place; the lane goes to the next', async () => {
  const lanes = new Lanes(1)
  await lanes.enter(never)
  const deadline = new AbortController()
  const late = lanes.enter(deadline.signal)
  const next = lanes.enter(never)
  deadline.abort()
  expect(await late).toBe(false)
  lanes.leave()
  expect(await next).toBe(true)
  // The aborted waiter took nothing: one lane is in use, so another enter waits.
  let entered = false
  void lanes.enter(never).then(() => { entered = true })
  await Bun.sleep(5)
  expect(entered).toBe(false)
})

test('two lanes admit two at once; an aborted signal is refused at once', async () => {
  const lanes = new Lanes(2)
  expect(await lanes.enter(never)).toBe(true)
  expect(await lanes.enter(never)).toBe(true)
  expect(await lanes.enter(AbortSignal.abort())).toBe(false)
})
