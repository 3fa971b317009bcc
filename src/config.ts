// Environment → one typed, frozen Config. Every default is the embedded mode (CONTRACT §10).
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

export interface Config {
  readonly port: number
  readonly host: string
  /** PGlite data directory; `memory://` keeps the embedded database in memory (tests). */
  readonly dataDir: string
  readonly databaseUrl: string | undefined
  readonly redisUrl: string | undefined
  /** Prefix for every Redis key and channel, so several deployments (or test runs) can share one Redis. */
  readonly redisPrefix: string
  readonly questdbIlp: string | undefined
  readonly questdbPgUrl: string | undefined
  readonly workers: number
  readonly webhookAllowPrivate: boolean
  readonly logLevel: LogLevel
  /** Seed a demo account on an empty store: true/false, or undefined for "embedded mode only". */
  readonly demo: boolean | undefined
  /** Requests per minute for personal tokens and device keys (plans may raise them). */
  readonly rateLimitPerMinute: number
  readonly deviceRateLimitPerMinute: number
  /** Length of a rate-limit window; the limits above are per this window (60 s unless testing resets). */
  readonly rateLimitWindowSeconds: number
  /** How long a verified key stays in a process's cache without being re-read (revocation is pushed sooner). */
  readonly keyCacheTtlMs: number
  /** Register routes that exist only for tests (a deprecated route). */
  readonly testRoutes: boolean
}

function int(env: Record<string, string | undefined>, name: string, fallback: number, min = 0): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got "${raw}"`)
  return n
}

function flag(env: Record<string, string | undefined>, name: string): boolean | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (raw === '1' || raw === 'true') return true
  if (raw === '0' || raw === 'false') return false
  throw new Error(`${name} must be 1 or 0, got "${raw}"`)
}

const levels: LogLevel[] = ['debug', 'info', 'warn', 'error']

export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const logLevel = (env.LOG_LEVEL ?? 'info') as LogLevel
  if (!levels.includes(logLevel)) throw new Error(`LOG_LEVEL must be one of ${levels.join(', ')}`)
  const config: Config = {
    port: int(env, 'PORT', 3000),
    host: env.HOST || '0.0.0.0',
    dataDir: env.DATA_DIR || './.data',
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    redisPrefix: env.REDIS_PREFIX || 'hrs:',
    questdbIlp: env.QUESTDB_ILP || undefined,
    questdbPgUrl: env.QUESTDB_PG_URL || undefined,
    workers: int(env, 'WORKERS', 1, 1),
    webhookAllowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE') ?? false,
    logLevel,
    demo: flag(env, 'DEMO'),
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 600, 1),
    deviceRateLimitPerMinute: int(env, 'DEVICE_RATE_LIMIT_PER_MINUTE', 120, 1),
    rateLimitWindowSeconds: int(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1),
    keyCacheTtlMs: int(env, 'KEY_CACHE_TTL_MS', 60_000, 0),
    testRoutes: flag(env, 'TEST_ROUTES') ?? false,
    ...overrides,
  }
  return Object.freeze(config)
}

/** True when no external database is configured: PGlite holds the records. */
export const isEmbedded = (config: Config) => config.databaseUrl === undefined
