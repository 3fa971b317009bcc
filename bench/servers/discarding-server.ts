// Our server exactly as src/main.ts builds it (config from the environment → createDeps → createApp → listen with
// the same options), except that the readings store discards what it is given: the bench measures the HTTP
// layer alone (pipeline, auth, parse, validate, group commit) without the store's cost. Bench only: nothing in
// src/ knows about it; the store is injected through createDeps's `readings` option, as tests do.
import { createApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createDeps } from '../../src/deps.ts'
import { discardingStore } from './discarding-store.ts'

const { store, discarded } = discardingStore()

const config = loadConfig()
const deps = await createDeps(config, { readings: () => store })
const app = createApp(deps)
app.listen({ port: config.port, hostname: config.host, reusePort: false })
console.log(`listening on http://${config.host}:${app.server!.port}/api/v1 (${deps.database.kind}, ${deps.shared.kind} store, discarding readings)`)

const shutdown = async () => {
  await app.server!.stop(false)
  await deps.close()
  console.log(`discarded ${discarded.readings} readings in ${discarded.batches} batches`)
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown())
process.on('SIGINT', () => void shutdown())
