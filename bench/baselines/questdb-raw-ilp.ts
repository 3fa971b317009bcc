// The store's own ceiling: the same rows as ILP text built by hand (symbols need no escaping: ids, channel keys
// and metric names are plain) and POSTed to QuestDB's /write with fetch, `batch` rows per request, `inFlight`
// requests at a time. Each request is still one transaction, as with the client.
import { cpuWindow } from '../lib/proc.ts'
import { makeRows, type RowsSpec } from './rows.ts'

export interface RawIlpConfig {
  http: string
  table: string
  spec: RowsSpec
  batch: number
  inFlight: number
  /** Processes whose CPU to report over the timed window (QuestDB's JVM). */
  watch?: Record<string, number[]>
}

if (import.meta.main) {
  const config = JSON.parse(process.argv[2]!) as RawIlpConfig
  const rows = makeRows(config.spec)
  const url = `${config.http}/write?precision=ms`
  const window = cpuWindow(config.watch ?? {})
  const cpu0 = process.cpuUsage()
  const started = performance.now()
  let next = 0
  await Promise.all(Array.from({ length: config.inFlight }, async () => {
    for (;;) {
      const from = next
      if (from >= rows.length) return
      next = Math.min(rows.length, from + config.batch)
      let body = ''
      for (let i = from; i < next; i++) {
        const r = rows[i]!
        body += `${config.table},account_id=${r.accountId},device_id=${r.deviceId},channel=${r.channel},metric=${r.metric} value=${r.value} ${r.ts}\n`
      }
      const res = await fetch(url, { method: 'POST', body })
      if (res.status !== 204) throw new Error(`/write answered ${res.status}: ${await res.text()}`)
    }
  }))
  const ms = performance.now() - started
  const cpu = process.cpuUsage(cpu0)
  const machine = window()
  console.log(`result ${JSON.stringify({ rows: rows.length, ms, rowsPerSecond: (rows.length / ms) * 1000, cpu: (cpu.user + cpu.system) / 1000 / ms, machineCores: machine.machineCores, watchedCores: machine.cores })}`)
  process.exit(0)
}
