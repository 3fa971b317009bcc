// The only place that picks implementations: embedded twins by default, real services when configured. A core every
// entry point opens, and the features the server (or a writer) starts on it.
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
import { sqlStore } from '../ingest/stores/sql.ts'
import { markingWrites } from '../ingest/kept-buckets.ts'
import { keepingLatest } from '../ingest/kept-latest.ts'
import { retentionHorizons } from '../ingest/planner.ts'
import { SeriesCatalogue } from '../ingest/series.ts'
import { AlertEvaluator } from './modules/alerts/evaluator.ts'
import { StreamHub } from './streams/hub.ts'

/**
 * What every entry point opens (the server, `npm run dispatcher`, `npm run writer`, the CLI): configuration, logs,
 * metrics, the database, the shared store, cursors, keys' cache and invalidation, the platform's status. Cheap:
 * no readings store, no alert rules, no timers beyond the shared store's own.
 */
export interface Core {
  readonly config: Config
  readonly log: Logger
  readonly metrics: Metrics
  readonly database: Database
  readonly shared: SharedStore
  readonly cursors: CursorCodec
  readonly authenticator: Authenticator
  readonly platform: PlatformStatusSource
  close(): Promise<void>
}

/** What the server starts on its core: the readings store and ingest, alert rules, rate limits, webhook delivery. */
export interface Features {
  readonly rateLimiter: RateLimiter
  readonly readings: ReadingsStore
  /** Every series readings were stored under (the readings planner bounds a query's cost from it). */
  readonly series: SeriesCatalogue
  readonly ingest: Ingest
  /** Checks written readings against alert rules; notices silent sensors. */
  readonly alerts: AlertEvaluator
  /** Started by the server (and by `bun run dispatcher`), not here: tests drive it themselves. */
  readonly dispatcher: Dispatcher
  /** The Server-Sent Event streams open on this process, and the fan-out of readings to them (src/streams/). */
  readonly streams: StreamHub
}

/** Everything the server has; services and helpers take `Pick<Deps, …>` of the few pieces they use. */
export interface Deps extends Core, Features {}

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

export async function openCore(config: Config, options: Pick<DepsOptions, 'migrate' | 'log'> = {}): Promise<Core> {
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
  const platform = new PlatformStatusSource(database.db)
  await platform.refresh()
  // Every process must sign cursors alike, so the secret lives in the database, made once.
  const cursorSecret = await settingOrCreate(database.db, 'cursor_secret', () => randomBytes(32).toString('base64url'))
  return {
    config, log, metrics: createMetrics(), database, shared, authenticator, platform,
    cursors: new CursorCodec(cursorSecret),
    async close() {
      await shared.close()
      await database.close()
      await log.flush()
    },
  }
}

/** The server's features, started on an open core; closing the result closes both. */
async function startFeatures(core: Core, options: Pick<DepsOptions, 'readings' | 'clock'> = {}): Promise<Deps> {
  const { config, database, shared, log, metrics } = core
  const rateLimiter = new RateLimiter(shared)
  const catalogue = new SeriesCatalogue(database)
  const reader = { connections: config.readingsQueries.connections, statementTimeoutMs: config.readingsQueries.timeoutMs + 1_000 }
  // The QuestDB store is loaded only where it is configured: with its official client it held 0.5 MB (5,000
  // objects) of a 15.4 MB live heap that every full collection marks, in servers that never use it (2026-11-29).
  // Every write marks what it touched, for the buckets readings queries keep (ingest/kept-buckets.ts).
  // On QuestDB each series' newest reading is kept as it is written, for the latest values (ingest/kept-latest.ts);
  // the SQL store keeps its own in the write's transaction.
  const store = options.readings ? options.readings(database) : config.questdbIlp
    ? await (await import('../ingest/stores/questdb.ts')).questdbStore(config, catalogue, { records: database, log: (message, error) => log.warn(message, error === undefined ? {} : { error: String(error) }) })
    : sqlStore(database, reader, catalogue)
  const marked = markingWrites(store, shared)
  const readings = store.kind === 'questdb'
    ? keepingLatest(marked, shared, catalogue, { rawHorizon: () => retentionHorizons(config.readingsRetention, Date.now()).raw, onAnswer: (source) => metrics.readingsLatest.inc([source]) })
    : marked
  const dispatcher = new Dispatcher(database, config, log, systemResolver, { onAttempt: (outcome) => metrics.webhookAttempts.inc([outcome]) })
  const alerts = new AlertEvaluator({ db: database.db, shared, readings, log, now: options.clock })
  await alerts.start()
  const streams = new StreamHub({ shared, authenticator: core.authenticator, config, log })
  await streams.start()
  const ingest = await createIngest({ config, database, shared, readings, log, metrics, onWritten: (batch) => { alerts.observe(batch); streams.publish(batch) }, clock: options.clock })
  if (ingest.log) streams.listenToLog(ingest.log.nc, ingest.log.config.subjectPrefix)
  return {
    ...core, rateLimiter, readings, series: catalogue, ingest, alerts, dispatcher, streams,
    async close() {
      streams.drain()
      rateLimiter.stop()
      await dispatcher.stop()
      await ingest.drain()
      await alerts.close()
      await readings.close()
      await core.close()
    },
  }
}

/** The server's whole set: the core and every feature. */
export async function createDeps(config: Config, options: DepsOptions = {}): Promise<Deps> {
  return startFeatures(await openCore(config, options), options)
}
