// A writer alone, without the API (`npm run writer`): drains the ingest log (INGEST_LOG) into the readings store
// and judges alert rules on what it wrote. Any number may run beside the servers (every server process runs one
// too, unless INGEST_LOG_WRITER=0): JetStream shares the log's messages between them.
import { loadConfig } from './config.ts'
import { createDeps } from './deps.ts'

const config = loadConfig()
if (!config.ingestLog) {
  console.error('npm run writer needs INGEST_LOG (the NATS servers of the ingest log).')
  process.exit(2)
}
const deps = await createDeps(loadConfig(process.env, { ingestLog: { ...config.ingestLog, writer: true } }), { migrate: false })
console.log(`ingest log writer running (${config.ingestLog.stream} → ${deps.readings.kind} store)`)
const stop = async () => {
  await deps.close()
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
process.on('SIGINT', () => void stop())
