// The only place that picks implementations: embedded twins by default, real services when configured.
import { randomBytes } from 'node:crypto'
import { openDatabase, type Database } from '../db/client.ts'
import { Authenticator } from './auth/authenticator.ts'
import type { Config } from './config.ts'
import { CursorCodec } from './http/cursor.ts'
import type { SharedStore } from './kv/interface.ts'
import { memoryStore } from './kv/memory.ts'
import { redisStore } from './kv/redis.ts'
import { PlatformStatusSource, settingOrCreate } from './platform.ts'
import { createLogger, type Logger } from './log.ts'

export interface Deps {
  readonly config: Config
  readonly database: Database
  readonly shared: SharedStore
  readonly authenticator: Authenticator
  readonly platform: PlatformStatusSource
  readonly cursors: CursorCodec
  readonly log: Logger
  close(): Promise<void>
}

export async function createDeps(config: Config, options: { migrate?: boolean } = {}): Promise<Deps> {
  const log = createLogger(config.logLevel)
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  if (options.migrate ?? true) await database.migrate()
  const shared = config.redisUrl ? await redisStore(config.redisUrl, config.redisPrefix) : memoryStore()
  const authenticator = new Authenticator(database.db, shared, config.keyCacheTtlMs)
  await authenticator.start()
  const platform = new PlatformStatusSource(database.db)
  await platform.refresh()
  // Every process must sign cursors alike, so the secret lives in the database, made once.
  const cursorSecret = await settingOrCreate(database.db, 'cursor_secret', () => randomBytes(32).toString('base64url'))
  return {
    config, database, shared, authenticator, platform, log,
    cursors: new CursorCodec(cursorSecret),
    async close() {
      await shared.close()
      await database.close()
    },
  }
}
