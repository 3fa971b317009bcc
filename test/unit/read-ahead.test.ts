// The page a walk reads ahead (ingest/read-ahead.ts): given once, to the key it was read for, never stale past
// READ_AHEAD_MS, and a failed read gives nothing (the page is read again by whoever asks).
import { afterEach, expect, setSystemTime, test } from 'bun:test'
import { READ_AHEAD_MS, ReadAhead } from '../../ingest/read-ahead.ts'

afterEach(() => setSystemTime())

test('a page read ahead is given once, and only under its own key', async () => {
  const ahead = new ReadAhead<number[]>()
  let reads = 0
  ahead.start('acct_a\u000010\u0000cursor-2', async () => { reads++; return [1, 2, 3] })
  expect(await ahead.take('acct_b\u000010\u0000cursor-2')).toBeUndefined()
  expect(await ahead.take('acct_a\u000020\u0000cursor-2')).toBeUndefined()
  expect(await ahead.take('acct_a\u000010\u0000cursor-2')).toEqual([1, 2, 3])
  expect(await ahead.take('acct_a\u000010\u0000cursor-2')).toBeUndefined()
  expect(reads).toBe(1)
})

test('a page older than READ_AHEAD_MS is not given', async () => {
  const ahead = new ReadAhead<string>()
  const start = Date.now()
  setSystemTime(start)
  ahead.start('k', async () => 'page')
  setSystemTime(start + READ_AHEAD_MS + 1)
  expect(await ahead.take('k')).toBeUndefined()
})

test('a read that failed (no free slot, past its deadline) gives nothing, and nothing is thrown', async () => {
  const ahead = new ReadAhead<string>()
  ahead.start('k', async () => { throw new Error('too_many_queries') })
  expect(await ahead.take('k')).toBeUndefined()
})

test('at most 16 pages wait at once; the same key is not read twice', async () => {
  const ahead = new ReadAhead<number>()
  let reads = 0
  for (let i = 0; i < 20; i++) ahead.start(`k${i}`, async () => { reads++; return i })
  ahead.start('k0', async () => { reads++; return -1 })
  expect(reads).toBe(16)
  expect(await ahead.take('k0')).toBe(0)
  expect(await ahead.take('k16')).toBeUndefined()
})
