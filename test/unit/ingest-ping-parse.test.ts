// parsePing on its own: the fields of a /sensors/ping (HTTP) or a ping payload (MQTT) as readings, or every problem
// of a refused ping in a fixed order (the ping's time, then the ping as a whole, then each channel in the order sent).
import { describe, expect, test } from 'bun:test'
import type { DeviceInfo } from '../../ingest/devices.ts'
import { MAX_PING_CHANNELS, parsePing } from '../../ingest/parse.ts'

const NOW = Date.UTC(2026, 10, 27, 12)
const device: DeviceInfo = {
  id: 'dev_a', accountId: 'acct_a',
  channels: new Map([['t1', { metric: 'temperature', environmentId: 'env_a' }]]),
  unmapped: new Set(), configuration: [],
}

describe('parsePing', () => {
  test('every field but key and ts is a channel; mapped channels get their metric, others are noted unmapped', () => {
    const { parsed, problems } = parsePing({ key: 'k', ts: String(NOW - 1000), t1: '27.5', h1: 61 }, device, NOW, '/query')
    expect(problems).toEqual([])
    expect(parsed!.readings).toEqual([
      { accountId: 'acct_a', deviceId: 'dev_a', channel: 't1', ts: NOW - 1000, value: 27.5, metric: 'temperature', environmentId: 'env_a' },
      { accountId: 'acct_a', deviceId: 'dev_a', channel: 'h1', ts: NOW - 1000, value: 61, metric: null, environmentId: null },
    ])
    expect([...parsed!.unmapped]).toEqual(['h1'])
  })

  test('a refused ping lists its time first, then the ping as a whole, then each bad channel in the order sent', () => {
    const fields: Record<string, unknown> = { ts: 'yesterday', 'bad channel': '1', t1: '0x10' }
    for (let i = 0; i < MAX_PING_CHANNELS; i++) fields[`c${i}`] = '1'
    const { parsed, problems } = parsePing(fields, device, NOW, '/body')
    expect(parsed).toBeUndefined()
    expect(problems.map((p) => p.path)).toEqual(['/body/ts', '/body', '/body/bad channel', '/body/t1'])
    expect(problems[1]!.message).toBe(`at most ${MAX_PING_CHANNELS} channels per ping`)
  })

  test('a ping with no channel is refused', () => {
    expect(parsePing({ key: 'k' }, device, NOW, '/query').problems).toEqual([{ path: '/query', message: 'send at least one channel, e.g. t1=27.5' }])
  })
})
