// The webhook dispatcher alone, without the API (`bun run dispatcher`): for deployments that scale delivery
// apart from request serving. Any number may run beside the servers; row locks keep their work apart.
import { loadConfig } from './config.ts'
import { createDeps } from './deps.ts'

const deps = await createDeps(loadConfig(), { migrate: false })
deps.dispatcher.start()
console.log('webhook dispatcher running')
const stop = async () => {
  await deps.close()
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
process.on('SIGINT', () => void stop())
