// The rows every store baseline writes (COPY, the SQL store alone, the QuestDB client, raw ILP): the same
// readings as the API run (same devices, channels, metrics, timestamps, count), request by request with the
// lanes taking turns. Plain data, made before the clock starts.
import { readingsOf } from '../load/generator.ts'

export interface RowsSpec {
  accountId: string
  /** One device per lane, as in the API run. */
  deviceIds: string[]
  perRequest: number
  channels: number
  tsBase: number
  rows: number
  /** Channel index → metric, as the devices map them. */
  metrics: string[]
}

export interface Row { accountId: string; deviceId: string; channel: string; metric: string; ts: number; value: number }

export function makeRows(spec: RowsSpec): Row[] {
  const out: Row[] = []
  const lanes = spec.deviceIds.length
  const body = { kind: 'readings' as const, perRequest: spec.perRequest, channels: spec.channels, tsBase: spec.tsBase }
  for (let k = 0; out.length < spec.rows; k++) {
    for (let lane = 0; lane < lanes && out.length < spec.rows; lane++) {
      for (const r of readingsOf(body, lane, k, 1, lanes)) {
        if (out.length >= spec.rows) break
        out.push({ accountId: spec.accountId, deviceId: spec.deviceIds[lane]!, channel: r.channel, metric: spec.metrics[Number(r.channel.slice(1)) % spec.metrics.length]!, ts: r.ts, value: r.value })
      }
    }
  }
  return out
}
