// The webhook dispatcher alone, without the API (`bun run dispatcher`): for deployments that scale delivery
// apart from request serving. Any number may run beside the servers; row locks keep their work apart.
import { loadConfig } from './config.ts'
import { createDeps } from './deps.ts'

// It takes no readings: no ingest log connection, no writer.
const deps = await createDeps(loadConfig(process.env, { ingestLog: undefined }), { migrate: false })
deps.dispatcher.start()
console.log('webhook dispatcher running')
const stop = async () => {
  await deps.close()
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
process.on('SIGINT', () => void stop())
