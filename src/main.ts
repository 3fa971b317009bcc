// config → deps → app → listen. With WORKERS=n the first process prepares the store, then starts n server
// processes sharing the port (SO_REUSEPORT) and relays signals to them. SIGTERM drains and exits cleanly.
import { createApp } from './app.ts'
import { isEmbedded, loadConfig } from './config.ts'
import { createDeps } from './deps.ts'
import { purgeExpiredIdempotencyKeys } from './http/idempotency.ts'
import { watchEventLoop } from './observability.ts'
import { demoEnabled, seedDemoAccount } from './seed.ts'
import { startMqttListener } from '../ingest/mqtt.ts'
import { keepServingThroughOrphanedConnectionErrors } from './process-guard.ts'
import { DataDirInUse } from '../db/client.ts'

/**
 * A start that cannot go on because of how it was configured (a bad variable, a port already taken) ends with one
 * line saying what to change, and exit code 2: no stack, which would point at our code instead of the setting.
 */
function refuseStart(message: string): never {
  console.error(message)
  process.exit(2)
}

/** The one line for a listener that could not open its port, naming the variable that chose it. */
function listenRefusal(variable: string, port: number | undefined, host: string, error: unknown): string {
  const code = (error as { code?: string } | undefined)?.code
  const where = `${variable}=${port} on ${host}`
  if (code === 'EADDRINUSE') return `${where}: the port is already in use by another process; stop it or set ${variable} to a free port.`
  if (code === 'EACCES') return `${where}: not allowed to listen on this port (ports below 1024 need privileges); set ${variable} to 1024 or above.`
  if (code === 'EADDRNOTAVAIL') return `${where}: HOST is not an address of this machine; set HOST to one of its addresses (0.0.0.0 for all).`
  return `${where}: cannot listen (${(error as Error)?.message ?? String(error)}).`
}

let config: ReturnType<typeof loadConfig>
try { config = loadConfig() } catch (error) { refuseStart(`configuration: ${(error as Error).message}`) }
const isWorker = process.env.HRS_WORKER === '1'

/** The features on the configured backends; a data directory another server holds is a one-line refusal. */
async function openDeps(options?: Parameters<typeof createDeps>[1]) {
  try {
    return await createDeps(config, options)
  } catch (error) {
    if (error instanceof DataDirInUse) refuseStart(`DATA_DIR=${config.dataDir}: ${error.message}.`)
    throw error
  }
}

async function prepareStore() {
  const deps = await openDeps()
  if (demoEnabled(config)) {
    const demo = await seedDemoAccount(deps)
    if (demo) console.log(`demo key: ${demo.token}`)
  }
  return deps
}

async function serve() {
  const deps = isWorker ? await openDeps({ migrate: false }) : await prepareStore()
  keepServingThroughOrphanedConnectionErrors(deps.log)
  const app = createApp(deps)
  deps.dispatcher.start()
  try {
    app.listen({ port: config.port, hostname: config.host, reusePort: config.workers > 1 })
  } catch (error) {
    await deps.close()
    refuseStart(listenRefusal('PORT', config.port, config.host, error))
  }
  const server = app.server!
  watchEventLoop(deps.metrics)
  // Devices over MQTT, on the same ingest service (MQTT_PORT / MQTTS_PORT; off unless configured).
  const mqttConfig = config.mqtt
  const mqtt = mqttConfig ? await startMqttListener({ ...deps, config: { ...config, mqtt: mqttConfig } }).catch(async (error) => {
    const tls = mqttConfig.tlsPort !== undefined && (error as { port?: number })?.port === mqttConfig.tlsPort && mqttConfig.tlsPort !== mqttConfig.port
    await server.stop(true)
    await deps.close()
    return refuseStart(listenRefusal(tls ? 'MQTTS_PORT' : 'MQTT_PORT', tls ? mqttConfig.tlsPort : mqttConfig.port, config.host, error))
  }) : undefined
  // Stored idempotent responses are kept 24 h; every process sweeps now and then (the delete is idempotent).
  const sweep = setInterval(() => purgeExpiredIdempotencyKeys(deps).catch((error) => deps.log.warn('idempotency sweep failed', { error: String(error) })), 3600_000)
  sweep.unref()
  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    clearInterval(sweep)
    deps.log.info('shutting down', { signal, pid: process.pid })
    // Event streams never finish by themselves: they end now (a `shutdown` event, clients reconnect elsewhere), so
    // stop() below is not held up by them.
    deps.streams.drain()
    // stop() without force stops accepting and resolves once in-flight requests have been answered.
    await Promise.all([server.stop(false), mqtt?.close()])
    await deps.close()
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
  // Only now, with the signal handlers in place: whoever reads this line may send SIGTERM at once (a test did, in the
  // moment between the line and the handlers, on a loaded machine, and the process died of the signal).
  // A worker tells its supervisor it is serving, so "listening" is printed only once every worker is.
  if (isWorker) process.send?.('ready')
  else {
    const host = config.host === '0.0.0.0' ? 'localhost' : config.host
    console.log(`listening on http://${host}:${server.port}/api/v1 (${deps.database.kind}, ${deps.shared.kind} store)`)
    if (mqtt?.port !== undefined) console.log(`mqtt listening on mqtt://${host}:${mqtt.port}`)
    if (mqtt?.tlsPort !== undefined) console.log(`mqtt listening on mqtts://${host}:${mqtt.tlsPort}`)
  }
}

async function supervise() {
  if (isEmbedded(config) || !config.redisUrl) {
    console.error('WORKERS > 1 needs DATABASE_URL and REDIS_URL: the embedded database and in-process stores live in one process.')
    process.exit(2)
  }
  const deps = await prepareStore()
  await deps.close()
  let ready = 0
  let allReady!: () => void
  const serving = new Promise<void>((resolve) => { allReady = resolve })
  const children = Array.from({ length: config.workers }, () =>
    Bun.spawn([process.execPath, import.meta.path], {
      env: { ...process.env, HRS_WORKER: '1' }, stdout: 'inherit', stderr: 'inherit',
      ipc(message) { if (message === 'ready' && ++ready === config.workers) allReady() },
    }))
  const firstExit = Promise.race(children.map((c) => c.exited))
  const outcome = await Promise.race([serving.then(() => 'serving' as const), firstExit])
  if (outcome !== 'serving') {
    console.error(`a worker exited during start-up (code ${outcome})`)
    for (const child of children) child.kill('SIGTERM')
    process.exit(1)
  }
  const relay = (signal: NodeJS.Signals) => { for (const child of children) child.kill(signal) }
  process.on('SIGTERM', () => relay('SIGTERM'))
  process.on('SIGINT', () => relay('SIGINT'))
  // After the handlers, as in serve(): whoever reads this line may signal at once.
  console.log(`listening on http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${config.port}/api/v1 (${config.workers} workers)`)
  const codes = await Promise.all(children.map((c) => c.exited))
  process.exit(codes.every((c) => c === 0) ? 0 : 1)
}

if (config.workers > 1 && !isWorker) await supervise()
else await serve()
