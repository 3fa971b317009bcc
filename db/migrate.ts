// Applies the committed migrations to the configured database (the server also does this at start-up).
import { loadConfig } from '../src/config.ts'
import { openDatabase } from './client.ts'

const config = loadConfig()
const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
await database.migrate()
console.log(`migrations applied (${database.kind})`)
await database.close()
