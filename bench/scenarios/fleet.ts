// A fleet over MQTT (issue 31): N devices (default 10,000; `--concurrency N` or BENCH_FLEET_DEVICES), each on its
// own MQTT 3.1.1 connection, connect; idle (the broker's memory per connection is sampled); publish one reading at
// QoS 1 every cadence (10 s) for the window (at least three cadences); then a reconnect storm: every connection
// dropped at once and opened again, all within 10 s of each other; one more reading each. Reported: connections
// held, memory per idle connection, connect rate, PUBACK p50/p99, refused connects (first and in the storm),
// stored = acknowledged, and the connected-devices gauge once all have gone.
//
// Beside it, in the same run, a private Mosquitto (Debian's `mosquitto`, no persistence, anonymous) takes the same
// generator: the transport's ceiling, as ratios of p99s and memory. With `--target URL --token T` the devices are
// made on that deployment and connect to its MQTT port (BENCH_MQTT_URL, default mqtt://<target host>:1883); the
// server's memory and the stored count are then not visible from here and are left out.
//
// Under the CI smoke (windows under 5 s) the fleet shrinks to 200 devices publishing every second, so the smoke
// stays short; the file-descriptor limit is checked up front (each connection is a descriptor in the broker and
// one in the generator, and a process cannot raise its hard limit): a fleet over it is cut to fit, and says so.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BUN, forEachLine, freePort, ourServer, ROOT, startServer, type Child } from '../lib/processes.ts'
import { serverMetrics, storedReadings } from '../lib/ingest.ts'
import { line, type Line, type Scenario, type ScenarioContext } from '../lib/report.ts'
import { accountAndToken, cleanRedis, createDevices, freshDatabase, serverEnv } from '../lib/setup.ts'

const NAME = 'fleet'
const MOSQUITTO = '/usr/sbin/mosquitto'
/** Descriptors a broker needs besides its devices' connections (database pool, Redis, files, listeners). */
const FD_HEADROOM = 200

interface FleetResult {
  devices: number
  connect: { ms: number; refused: number; closed: number; codes: Record<string, number> }
  publishSeconds: number
  published: number
  acknowledged: number
  puback: { p50: number; p99: number; max: number; count: number }
  storm: { ms: number; refused: number; closed: number; codes: Record<string, number>; pubackP99: number; acknowledged: number }
}

interface BrokerRun { result: FleetResult; idleRssMiB?: number; baseRssMiB?: number; kibPerConnection?: number; gaugeAfter?: number; stored?: number }

/** The soft and hard limits on open files of this process (children inherit them). */
function fdLimits(): { soft: number; hard: number } {
  const row = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'))!
  const [soft, hard] = row.replace('Max open files', '').trim().split(/\s+/).map((v) => (v === 'unlimited' ? Infinity : Number(v)))
  return { soft: soft!, hard: hard! }
}

/** Connections the first connect got accepted (memory is divided by these, not by the devices that tried). */
const held = (r: FleetResult) => r.devices - r.connect.refused - r.connect.closed

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024

/** Runs the device generator against `url`; `onConnected` is called while the fleet sits idle, all connected. */
async function drive(ctx: ScenarioContext, label: string, url: string, devices: { id: string; key: string }[], timing: Timing, onConnected: () => Promise<void> = async () => {}): Promise<FleetResult> {
  const dir = mkdtempSync(join(tmpdir(), 'hrs-fleet-'))
  const inputFile = join(dir, 'input.json')
  writeFileSync(inputFile, JSON.stringify({ url, devices, ...timing, connectParallel: 500, tsBase: Date.now() - 86_400_000 }))
  const proc = Bun.spawn([BUN, join(ROOT, 'bench', 'load', 'fleet-devices.ts')], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, FLEET_INPUT: inputFile }, stdout: 'pipe', stderr: 'pipe' })
  const killer = setTimeout(() => proc.kill('SIGKILL'), 10 * 60_000 + timing.publishMs)
  let result: FleetResult | undefined
  const sampled: Promise<void>[] = []
  try {
    const stderr = new Response(proc.stderr).text()
    await forEachLine(proc.stdout as ReadableStream<Uint8Array>, (text) => {
      if (text.startsWith('phase connected')) {
        ctx.log(`${NAME} ${label}: ${devices.length} connected ${text.slice('phase connected '.length)}; idle…`)
        // Half-way through the idle pause: the connections are set up and nothing is being published.
        sampled.push(Bun.sleep(timing.idleMs / 2).then(onConnected))
      } else if (text.startsWith('phase')) ctx.log(`${NAME} ${label}: ${text.slice(6)}…`)
      else if (text.startsWith('result ')) result = JSON.parse(text.slice(7))
    })
    const code = await proc.exited
    await Promise.all(sampled)
    if (code !== 0 || !result) throw new Error(`fleet generator (${label}) exited ${code}: ${(await stderr).slice(-2000)}`)
    return result
  } finally {
    clearTimeout(killer)
    rmSync(dir, { recursive: true, force: true })
  }
}

interface Timing { cadenceMs: number; publishMs: number; idleMs: number; stormSpreadMs: number }

/** Our server on a fresh database with its MQTT listener: the fleet made through the API, then driven. */
async function ours(ctx: ScenarioContext, count: number, timing: Timing): Promise<BrokerRun & { devices: { id: string; key: string }[] }> {
  const database = await freshDatabase('fleet')
  const mqttPort = freePort()
  const env = serverEnv(database, { MQTT_PORT: String(mqttPort) })
  let server: Child | undefined
  try {
    const { token } = await accountAndToken(env)
    server = await startServer('our server', ourServer('src/main.ts', NAME), env)
    ctx.log(`${NAME}: making ${count} devices through the API…`)
    const devices = await createDevices(server.baseUrl, token, count, 1, 32)
    const pid = server.pid
    await Bun.sleep(1000)
    const baseRssMiB = rssMiB(pid)
    let idleRssMiB = NaN
    const result = await drive(ctx, 'ours', `mqtt://127.0.0.1:${mqttPort}`, devices, timing, async () => { idleRssMiB = rssMiB(pid) })
    // Every device has gone: the gauge must read 0 again.
    await Bun.sleep(1000)
    const gaugeAfter = (await serverMetrics(server.baseUrl))('hrs_mqtt_connected_devices')
    await server.stop()
    const { stored } = await storedReadings(database.url)
    return { result, baseRssMiB, idleRssMiB, kibPerConnection: ((idleRssMiB - baseRssMiB) * 1024) / held(result), gaugeAfter, stored, devices }
  } finally {
    await server?.stop()
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}

/** A deployment (--target): its devices made through its API with the given token, its MQTT port driven. */
async function deployment(ctx: ScenarioContext, count: number, timing: Timing): Promise<BrokerRun & { devices: { id: string; key: string }[] }> {
  const { baseUrl, token } = ctx.options.target!
  const url = process.env.BENCH_MQTT_URL || `mqtt://${new URL(baseUrl).hostname}:1883`
  ctx.log(`${NAME}: making ${count} devices on ${baseUrl}…`)
  const devices = await createDevices(baseUrl, token, count, 1, 32)
  return { result: await drive(ctx, 'target', url, devices, timing), devices }
}

/** A private Mosquitto on a free loopback port (no persistence, anyone may connect), driven the same way. */
async function mosquitto(ctx: ScenarioContext, devices: { id: string; key: string }[], timing: Timing): Promise<BrokerRun | undefined> {
  if (!(await Bun.file(MOSQUITTO).exists())) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'hrs-mosquitto-'))
  const port = freePort()
  writeFileSync(join(dir, 'mosquitto.conf'), `listener ${port} 127.0.0.1\nallow_anonymous true\nmax_connections -1\npersistence false\nlog_dest none\n`)
  const proc = Bun.spawn([MOSQUITTO, '-c', join(dir, 'mosquitto.conf')], { stdout: 'ignore', stderr: 'pipe' })
  try {
    const deadline = Date.now() + 10_000
    for (;;) {
      const up = await new Promise<boolean>((resolve) => { const s = tcpConnect({ host: '127.0.0.1', port }, () => { s.destroy(); resolve(true) }); s.on('error', () => resolve(false)) })
      if (up) break
      if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`mosquitto did not start: ${await new Response(proc.stderr).text()}`)
      await Bun.sleep(50)
    }
    const baseRssMiB = rssMiB(proc.pid)
    let idleRssMiB = NaN
    const result = await drive(ctx, 'mosquitto', `mqtt://127.0.0.1:${port}`, devices, timing, async () => { idleRssMiB = rssMiB(proc.pid) })
    return { result, baseRssMiB, idleRssMiB, kibPerConnection: ((idleRssMiB - baseRssMiB) * 1024) / held(result) }
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
    rmSync(dir, { recursive: true, force: true })
  }
}

export const fleet: Scenario = async (ctx) => {
  const smoke = ctx.seconds < 5
  const wanted = ctx.options.concurrency ?? Number(process.env.BENCH_FLEET_DEVICES || (smoke ? 200 : 10_000))
  const { soft, hard } = fdLimits()
  // Bun raises its soft limit to the hard one; the generator and the broker each hold one descriptor per device.
  const room = Math.max(0, Math.min(soft, hard) - FD_HEADROOM)
  const count = Math.min(wanted, room)
  const limitNote = count < wanted
    ? `${wanted} devices asked, ${count} run: open files are limited to ${hard} (hard limit; a process cannot raise it, set \`ulimit -n\` / LimitNOFILE for the service and the bench)`
    : `open-file limit ${hard} (hard) leaves room for ${room} devices`
  ctx.log(`${NAME}: ${limitNote}`)
  const timing: Timing = smoke
    ? { cadenceMs: 1_000, publishMs: 2_000, idleMs: 500, stormSpreadMs: 500 }
    : { cadenceMs: 10_000, publishMs: Math.max(ctx.seconds * 1000, 30_000), idleMs: 4_000, stormSpreadMs: 10_000 }
  const run = ctx.options.target ? await deployment(ctx, count, timing) : await ours(ctx, count, timing)
  const ceiling = await mosquitto(ctx, run.devices, timing)
  if (!ceiling) ctx.log(`${NAME}: Mosquitto not installed (${MOSQUITTO}): no ceiling line (Debian: apt-get install mosquitto)`)

  const r = run.result
  const m = ceiling?.result
  const where = `${r.devices} devices × 1 reading/${timing.cadenceMs / 1000} s`
  const lines: Line[] = []
  const refusedNote = (x: FleetResult['connect']) => `${x.refused} refused${Object.keys(x.codes).length ? ` (CONNACK ${JSON.stringify(x.codes)})` : ''}, ${x.closed} closed without CONNACK`
  lines.push(line(NAME, `connections held (${where})`, held(r), m ? held(m) : undefined, 'conns', undefined, 'target', `${limitNote}; first connect: ${refusedNote(r.connect)}`))
  if (run.kibPerConnection !== undefined) {
    lines.push(line(NAME, 'memory per idle connection, ours ÷ Mosquitto (target ≤ 8 KiB)', run.kibPerConnection, ceiling?.kibPerConnection, 'KiB', undefined, 'target',
      `RSS ${run.baseRssMiB!.toFixed(0)} MiB with no device connected → ${run.idleRssMiB!.toFixed(0)} MiB with ${held(r)} idle; Mosquitto ${ceiling ? `${ceiling.baseRssMiB!.toFixed(1)} → ${ceiling.idleRssMiB!.toFixed(1)} MiB` : 'not run'}`))
  }
  lines.push(line(NAME, 'connect rate (first connect, 500 at a time)', (r.devices * 1000) / r.connect.ms, m ? (m.devices * 1000) / m.connect.ms : undefined, 'conns/s'))
  lines.push(line(NAME, `PUBACK p99 (${where}), ours ÷ Mosquitto (target < 100 ms)`, r.puback.p99, m?.puback.p99, 'ms', undefined, 'target',
    `p50 ${r.puback.p50.toFixed(1)} ms, max ${r.puback.max.toFixed(0)} ms over ${r.puback.count} acknowledgements; Mosquitto p50 ${m ? m.puback.p50.toFixed(2) : '-'} ms`))
  // Every acknowledged reading must be stored; a publish whose PUBACK was lost in the storm may be stored unacknowledged.
  const stored = run.stored === undefined ? 'stored not checked (a --target deployment)'
    : run.stored >= r.acknowledged && run.stored <= r.published ? `every acknowledged reading stored (${run.stored} stored, ${r.acknowledged} acknowledged, ${r.published} published)`
      : `STORED ${run.stored}, ACKNOWLEDGED ${r.acknowledged}, PUBLISHED ${r.published}: acknowledged readings missing`
  lines.push(line(NAME, `reconnect storm: refused of ${r.devices} reconnecting within ${timing.stormSpreadMs / 1000} s`, r.storm.refused + r.storm.closed, m ? m.storm.refused + m.storm.closed : undefined, 'conns', undefined, 'target',
    `${refusedNote(r.storm)}; all back in ${(r.storm.ms / 1000).toFixed(1)} s; then one reading each, PUBACK p99 ${r.storm.pubackP99.toFixed(0)} ms (${r.storm.acknowledged} acknowledged); ${stored}; gauge after all left: ${run.gaugeAfter ?? 'not read'}`))
  const { devices: _keys, ...measured } = run
  return { lines, details: { devices: r.devices, fdLimit: { soft, hard }, timing, ours: measured, mosquitto: ceiling } }
}
