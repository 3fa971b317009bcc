// The webhook dispatcher alone, without the API (`bun run dispatcher`): for deployments that scale delivery
// apart from request serving. Any number may run beside the servers; row locks keep their work apart.
import { loadConfig } from './config.ts'
import { openCore } from './deps.ts'
import { Dispatcher } from './webhooks/dispatcher.ts'
import { systemResolver } from './webhooks/url-guard.ts'

// The core and the dispatcher only: no readings store, no ingest, no alert rules or their timers.
const core = await openCore(loadConfig(process.env, { ingestLog: undefined }), { migrate: false })
const dispatcher = new Dispatcher(core.database, core.config, core.log, systemResolver, { onAttempt: (outcome) => core.metrics.webhookAttempts.inc([outcome]) })
dispatcher.start()
console.log('webhook dispatcher running')
const stop = async () => {
  await dispatcher.stop()
  await core.close()
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
process.on('SIGINT', () => void stop())
