// What ingest learns about a device is written back once a second; until that write commits, the process still
// answers with the newer sighting (the console's "Last seen" read "never" while the statement was in flight).
import { expect, test } from 'bun:test'
import type { Db } from '../../db/client.ts'
import { DeviceDirectory, type DeviceInfo } from '../../ingest/devices.ts'
import { memoryStore } from '../../src/kv/memory.ts'

test('a sighting being written back is still pending until its statement finishes, and only then forgotten', async () => {
  const held: (() => void)[] = []
  let statements = 0
  // A database whose statements wait until the test lets them finish.
  const db = { execute: () => { statements++; return new Promise<void>((resolve) => held.push(resolve)) } } as unknown as Db
  const directory = new DeviceDirectory(db, memoryStore())
  const device: DeviceInfo = { id: 'dev_1', accountId: 'acc_1', channels: new Map(), unmapped: new Set(), configuration: [] }
  expect(directory.pendingLastSeen(device.id)).toBeUndefined()
  directory.seen(device, new Set())
  const seenAt = directory.pendingLastSeen(device.id)
  expect(seenAt).toBeNumber()
  const writing = directory.writeBack()
  expect(statements).toBe(1)
  expect(directory.pendingLastSeen(device.id)).toBe(seenAt!)
  for (const resolve of held.splice(0)) resolve()
  await writing
  expect(directory.pendingLastSeen(device.id)).toBeUndefined()
})

test('a newer sighting during the write is kept when the older write finishes', async () => {
  const held: (() => void)[] = []
  const db = { execute: () => new Promise<void>((resolve) => held.push(resolve)) } as unknown as Db
  const directory = new DeviceDirectory(db, memoryStore())
  const device: DeviceInfo = { id: 'dev_2', accountId: 'acc_1', channels: new Map(), unmapped: new Set(), configuration: [] }
  directory.seen(device, new Set())
  const writing = directory.writeBack()
  await Bun.sleep(2)
  directory.seen(device, new Set())
  const newer = directory.pendingLastSeen(device.id)!
  for (const resolve of held.splice(0)) resolve()
  await writing
  expect(directory.pendingLastSeen(device.id)).toBe(newer)
})
