// autocannon, the well-kept Node load tool, driven the way our generator is driven, for the generator-check
// scenario: run under Node (the bench bundles this file with autocannon left external), a warm-up run, then the
// measured run between `mark start` and `mark end` on stdout (the parent samples CPU from /proc then), then one
// `result {json}` line. One process, no workers, `connections` keep-alive connections, no pipelining: what our
// generator's closed-loop lanes do.
import autocannon from 'autocannon'

export interface AutocannonConfig {
  url: string
  method: 'GET' | 'POST'
  headers: Record<string, string>
  body?: string
  connections: number
  warmupSeconds: number
  seconds: number
}

export interface AutocannonResult {
  /** Answers of the measured run by status, and "error" for connection errors and timeouts. */
  statuses: Record<string, number>
  okRequests: number
  /** Length of the measured run as autocannon timed it, seconds. */
  seconds: number
  requestsPerSecond: number
  /** Latency of 2xx answers, ms (autocannon has no p95; p97.5 is the nearest). */
  latency: { p50: number; p97_5: number; p99: number; max: number }
}

const run = (config: AutocannonConfig, seconds: number) => autocannon({
  url: config.url, method: config.method, headers: config.headers, body: config.body,
  connections: config.connections, pipelining: 1, duration: seconds,
})

const config = JSON.parse(process.argv[2] ?? '{}') as AutocannonConfig
if (config.warmupSeconds > 0) await run(config, config.warmupSeconds)
console.log('mark start')
const measured = await run(config, config.seconds)
console.log('mark end')
const statuses: Record<string, number> = {}
for (const [status, { count }] of Object.entries(measured.statusCodeStats ?? {})) statuses[status] = count ?? 0
if (measured.errors) statuses.error = measured.errors
const result: AutocannonResult = {
  statuses, okRequests: measured['2xx'], seconds: measured.duration, requestsPerSecond: measured['2xx'] / measured.duration,
  latency: { p50: measured.latency.p50, p97_5: measured.latency.p97_5, p99: measured.latency.p99, max: measured.latency.max },
}
console.log(`result ${JSON.stringify(result)}`)
process.exit(0)
