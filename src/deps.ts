// The only place that picks implementations: embedded twins by default, real services when configured.
import { randomBytes } from 'node:crypto'
import { openPglite, openPostgres, type Database } from '../db/client.ts'
import { Authenticator } from './auth/authenticator.ts'
import type { Config } from './config.ts'
import { CursorCodec } from './http/cursor.ts'
import { RateLimiter } from './http/rate-limit.ts'
import { Dispatcher } from './webhooks/dispatcher.ts'
import { systemResolver } from './webhooks/url-guard.ts'
import { createMetrics, type Metrics } from './observability.ts'
import type { SharedStore } from './kv/interface.ts'
import { memoryStore } from './kv/memory.ts'
import { redisStore } from './kv/redis.ts'
import { withFallback } from './kv/fallback.ts'
import { PlatformStatusSource, settingOrCreate } from './platform.ts'
import { createLogger, type Logger } from './log.ts'
import { createIngest, type Ingest } from '../ingest/index.ts'
import type { ReadingsStore } from '../ingest/stores/interface.ts'
import { questdbStore } from '../ingest/stores/questdb.ts'
import { sqlStore } from '../ingest/stores/sql.ts'
import { AlertEvaluator } from './modules/alerts/evaluator.ts'

export interface Deps {
  readonly config: Config
  readonly database: Database
  readonly shared: SharedStore
  readonly authenticator: Authenticator
  readonly platform: PlatformStatusSource
  readonly cursors: CursorCodec
  readonly rateLimiter: RateLimiter
  readonly readings: ReadingsStore
  readonly ingest: Ingest
  /** Checks written readings against alert rules; notices silent sensors. */
  readonly alerts: AlertEvaluator
  /** Started by the server (and by `bun run dispatcher`), not here: tests drive it themselves. */
  readonly dispatcher: Dispatcher
  readonly log: Logger
  readonly metrics: Metrics
  close(): Promise<void>
}

/** Postgres when DATABASE_URL is set, the embedded PGlite otherwise. */
export function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): Promise<Database> {
  return config.databaseUrl ? openPostgres(config.databaseUrl) : openPglite(config.dataDir)
}

export interface DepsOptions {
  migrate?: boolean
  /** A readings store to use instead of the configured one (tests inject failures through it). */
  readings?: (database: Database) => ReadingsStore
  /** A logger to use instead of stderr's (tests read the access log through it). */
  log?: Logger
  /** The clock (epoch ms) of the alert evaluator and of the batcher's recovery pause, so tests can make a sensor
   *  stale or a store's Retry-After pass without waiting. */
  clock?: () => number
}

export async function createDeps(config: Config, options: DepsOptions = {}): Promise<Deps> {
  const log = options.log ?? createLogger(config.logLevel)
  const database = await openDatabase(config)
  if (options.migrate ?? true) await database.migrate()
  // Redis, when configured, is an accelerator: while it is unreachable the in-process store stands in (kv/fallback.ts).
  const shared = config.redisUrl
    ? withFallback(await redisStore(config.redisUrl, config.redisPrefix, { commandTimeoutMs: config.redisCommandTimeoutMs, connectTimeoutMs: config.redisConnectTimeoutMs }),
      memoryStore(), { probeMs: 1_000, log })
    : memoryStore()
  const authenticator = new Authenticator(database.db, shared, config.keyCacheTtlMs)
  await authenticator.start()
  const rateLimiter = new RateLimiter(shared)
  const platform = new PlatformStatusSource(database.db)
  await platform.refresh()
  // Every process must sign cursors alike, so the secret lives in the database, made once.
  const cursorSecret = await settingOrCreate(database.db, 'cursor_secret', () => randomBytes(32).toString('base64url'))
  const readings = options.readings ? options.readings(database) : config.questdbIlp ? await questdbStore(config) : sqlStore(database)
  const metrics = createMetrics()
  const dispatcher = new Dispatcher(database, config, log, systemResolver, { onAttempt: (outcome) => metrics.webhookAttempts.inc([outcome]) })
  const alerts = new AlertEvaluator({ db: database.db, shared, readings, log, now: options.clock })
  await alerts.start()
  const ingest = await createIngest({ config, database, shared, readings, log, metrics, onWritten: (batch) => alerts.observe(batch), clock: options.clock })
  return {
    config, database, shared, authenticator, platform, log, metrics,
    cursors: new CursorCodec(cursorSecret),
    rateLimiter, readings, ingest, alerts,
    dispatcher,
    async close() {
      rateLimiter.stop()
      await dispatcher.stop()
      await ingest.drain()
      await alerts.close()
      await readings.close()
      await shared.close()
      await database.close()
      await log.flush()
    },
  }
}
