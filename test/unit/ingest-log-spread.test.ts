// Which lane the ingest log asks to elect another leader (ingest/log/index.ts, laneToStepDown), from the streams'
// cluster state as JetStream reports it.
import { describe, expect, test } from 'bun:test'
import type { JetStreamManager } from '@nats-io/jetstream'
import { laneToStepDown } from '../../ingest/log/index.ts'

const peer = (name: string, up = true) => ({ name, current: up, offline: !up, active: 0, lag: 0 })
/** A manager whose streams.info answers from `leaders` (stream → its leader and replicas). */
const jsmOf = (leaders: Record<string, { leader?: string; replicas: ReturnType<typeof peer>[] }>) =>
  ({ streams: { info: async (name: string) => ({ config: { name }, cluster: leaders[name] }) } }) as unknown as JetStreamManager

describe('spreading the lanes\' leaders', () => {
  test('three lanes led from three nodes: nothing to do', async () => {
    expect(await laneToStepDown(jsmOf({
      L0: { leader: 'n1', replicas: [peer('n2'), peer('n3')] },
      L1: { leader: 'n2', replicas: [peer('n1'), peer('n3')] },
      L2: { leader: 'n3', replicas: [peer('n1'), peer('n2')] },
    }), ['L0', 'L1', 'L2'])).toBeUndefined()
  })

  test('two lanes led from one node while another leads none: one of them steps down', async () => {
    expect(await laneToStepDown(jsmOf({
      L0: { leader: 'n1', replicas: [peer('n2'), peer('n3')] },
      L1: { leader: 'n1', replicas: [peer('n2'), peer('n3')] },
      L2: { leader: 'n2', replicas: [peer('n1'), peer('n3')] },
    }), ['L0', 'L1', 'L2'])).toEqual({ stream: 'L0', leader: 'n1' })
  })

  test('a node lost: three lanes on the two left is their share, nothing to do', async () => {
    expect(await laneToStepDown(jsmOf({
      L0: { leader: 'n1', replicas: [peer('n2'), peer('n3', false)] },
      L1: { leader: 'n1', replicas: [peer('n2'), peer('n3', false)] },
      L2: { leader: 'n2', replicas: [peer('n1'), peer('n3', false)] },
    }), ['L0', 'L1', 'L2'])).toBeUndefined()
  })

  test('the only node leading fewer holds no current replica of the crowded lanes (still catching up): no step-down', async () => {
    const catchingUp = { ...peer('n3'), current: false }
    expect(await laneToStepDown(jsmOf({
      L0: { leader: 'n1', replicas: [peer('n2'), catchingUp] },
      L1: { leader: 'n1', replicas: [peer('n2'), catchingUp] },
      L2: { leader: 'n2', replicas: [peer('n1'), peer('n3')] },
    }), ['L0', 'L1', 'L2'])).toBeUndefined()
  })
})
