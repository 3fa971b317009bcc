// Applies the committed migrations to the configured database (the server also does this at start-up).
import { loadConfig } from '../src/config.ts'
import { openDatabase } from '../src/deps.ts'

const config = loadConfig()
const database = await openDatabase(config)
await database.migrate()
console.log(`migrations applied (${database.kind})`)
await database.close()
