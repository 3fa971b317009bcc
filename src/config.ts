// Environment → one typed, frozen Config. Every default is the embedded mode (CONTRACT §10).
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

export interface Config {
  readonly port: number
  readonly host: string
  /**
   * The service's own absolute origin (scheme, host, port, and a path prefix if a proxy adds one), with no trailing
   * slash: every absolute URL the service returns (problem types, a pairing's verification_uri) is built on it,
   * never on the request's Host or X-Forwarded-* headers, which the caller chooses.
   */
  readonly publicUrl: string
  /**
   * PUBLIC_URL was not set, so publicUrl is the loopback address the service listens on. Only then does the console
   * send a person who came by another loopback name (localhost for 127.0.0.1) to publicUrl's, so the session cookie
   * and the pairing links share one host. A service reachable from elsewhere must have PUBLIC_URL.
   */
  readonly publicUrlIsLoopbackDefault: boolean
  /** Browser origins allowed to call the API (CORS); undefined: no CORS headers at all. */
  readonly corsOrigins: readonly string[] | undefined
  /** PGlite data directory; `memory://` keeps the embedded database in memory (tests). */
  readonly dataDir: string
  readonly databaseUrl: string | undefined
  readonly redisUrl: string | undefined
  /** Prefix for every Redis key and channel, so several deployments (or test runs) can share one Redis. */
  readonly redisPrefix: string
  /** A Redis command slower than this fails, and the request falls back to the in-process store (kv/fallback.ts). */
  readonly redisCommandTimeoutMs: number
  /** How long start-up and each reconnect attempt wait for Redis. */
  readonly redisConnectTimeoutMs: number
  readonly questdbIlp: string | undefined
  readonly questdbPgUrl: string | undefined
  /** The QuestDB table readings go to (tests use one of their own). */
  readonly questdbTable: string
  readonly workers: number
  readonly webhookAllowPrivate: boolean
  readonly logLevel: LogLevel
  /** Bearer token for GET /metrics; without one, /metrics is served only when HOST is a loopback address. */
  readonly metricsToken: string | undefined
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
  /** Seconds between a failed webhook attempt and the next, one entry per retry (CONTRACT §8). */
  readonly webhookRetrySchedule: readonly number[]
  /** A receiver slower than this fails the attempt. */
  readonly webhookTimeoutMs: number
  /** How often an idle dispatcher looks for due deliveries. */
  readonly webhookPollMs: number
  /** Attempts in flight per process, and per endpoint (so one slow receiver cannot hold up the others). */
  readonly webhookConcurrency: number
  readonly webhookConcurrencyPerEndpoint: number
  /** Group commit: a batch is written at this many readings (default per readings store)… */
  readonly ingestBatchSize: number
  /** …or after this many milliseconds, whichever comes first. */
  readonly ingestFlushMs: number
  /** Readings held in memory (waiting or being written) before ingest answers 503. */
  readonly ingestMaxQueued: number
  /** Batches written to the store at once (default per readings store). */
  readonly ingestFlushConcurrency: number
  /** A store write slower than this fails its requests with 503 (the device retries; dedup absorbs a late success). */
  readonly ingestWriteTimeoutMs: number
  /**
   * The durable ingest log (NATS JetStream), off when undefined: the NATS servers (seeds of a cluster). With it, a
   * batch is acknowledged once the log has stored it, and writers drain the log into the readings store.
   */
  readonly ingestLog: IngestLogConfig | undefined
  /** Bounds on `GET /environment/readings` (ingest/planner.ts, ingest/query.ts): see `ReadingsQueryLimits`. */
  readonly readingsQueries: ReadingsQueryLimits
  /** How long readings and their rollups are kept: see `ReadingsRetention`. */
  readonly readingsRetention: ReadingsRetention
  /** The MQTT listener for devices (ingest/mqtt/), off when undefined: a machine with its own broker on 1883 still starts. */
  readonly mqtt: MqttConfig | undefined
  /** Server-Sent Event streams (src/streams/): see `StreamLimits`. */
  readonly streams: StreamLimits
}

/** Bounds on the Server-Sent Event streams (src/streams/), each an operator setting. */
export interface StreamLimits {
  /** Open streams an account may hold on one process (STREAMS_PER_ACCOUNT); 429 beyond. */
  perAccount: number
  /** Bytes a stream may have waiting for a slow client (STREAM_BUFFER_BYTES) before it is told and dropped. */
  bufferBytes: number
  /** A comment line this often keeps proxies from closing an idle stream (STREAM_HEARTBEAT_MS). */
  heartbeatMs: number
  /** How far back a resumed readings stream is replayed from the store (STREAM_REPLAY_WINDOW_MS). */
  replayWindowMs: number
}

/**
 * What one readings query may cost, decided before it runs, and what it may hold while it runs. Defaults are
 * sized for a 2-core node (README, "Readings queries that cannot hurt anyone").
 */
export interface ReadingsQueryLimits {
  /** The most rows a query may give, counted from the request (series in scope × buckets in the window). */
  readonly maxBuckets: number
  /** A query bounded above this many rows is heavy: it takes one of the account's slots while it runs. */
  readonly heavyRows: number
  /** Heavy queries one account may have running at once, across every process sharing the store. */
  readonly perAccount: number
  /** Each store query is cancelled in the store after this long, and answered 422 query_timeout. */
  readonly timeoutMs: number
  /**
   * Rows read per step of a CSV file; unset (no environment variable), 5,000 for a heavy query's file and a JSON
   * page's most (10,000) for a light one's (ingest/query.ts). Tests set it small to walk files of several steps.
   */
  readonly csvStepRows?: number
  /**
   * The most bucket rows kept in this process from earlier reads of the same questions (ingest/kept-buckets.ts), the
   * least recently used dropped first; 0 keeps none. About 80 bytes a row: 2 million (160 MB) hold the dense site's
   * dashboards (25 rooms × 46,240 rows); with a million, dashboards cycling through the rooms (a cycle larger than
   * the room, where the least recently used is the next one asked) read 32% of their rows from the store.
   */
  readonly keptRows: number
  /** Connections of the readings queries' own pool (Postgres and QuestDB), apart from ingest's and the records'. */
  readonly connections: number
  /**
   * Heavy queries one process runs at once, whatever their accounts (ingest/lanes.ts): each keeps about a core busy
   * between the store and the process, so this is the share of the node's cores heavy queries may take.
   */
  readonly heavyConcurrency: number
}

/**
 * A million rows is a year of hourly buckets for 100 series, or of one-minute buckets for one; five seconds is far
 * more than any query within it takes from the rollups, and well under a client's patience (30 s is common). One
 * heavy query at a time per process leaves a 2-core node's other core to ingest, small reads and the records API.
 */
export const READINGS_QUERY_DEFAULTS: ReadingsQueryLimits = { maxBuckets: 1_000_000, heavyRows: 20_000, perAccount: 2, timeoutMs: 5_000, connections: 2, heavyConcurrency: 1, keptRows: 2_000_000 }

/**
 * The readings queries' connections by store (the dense site, issue 57, on 2 cores). Postgres: each bucket read keeps
 * its CPU busy, and each one more at once takes CPU from the writes and latest values beside it; two pairs of runs (2
 * days, 60 s) gave latest p99 175 and 427 ms, ack p99 178 and 582 ms with 4, and 107 and 98, 105 and 114 with 2, the
 * walks alike (their first asks set their p99 either way); at full size with 2, latest p99 196 ms and ack 131 (400
 * and 364 with 4 in an earlier session's run). QuestDB runs its own workers (at least this + 2 of them, questdb.ts)
 * and took 4 better at full size: walk p50 72 against 192 ms, walks after their first p99 527 against 1,289,
 * latest p99 138 against 281, ack 124 against 186, the export 14.1 against 19.7 s. Raise either with the store's cores.
 */
const READINGS_CONNECTIONS = { sql: READINGS_QUERY_DEFAULTS.connections, questdb: 4 } as const

/**
 * Days each level of readings is kept, deployment-wide (0: forever). Expiry drops whole partitions (a day of raw
 * readings, of minute rollups; a month of hour and day rollups), never rows one by one, so an account's plan cannot
 * decide it: the partitions hold every account. Each level is kept at least as long as the level below it, so a
 * window the raw readings no longer hold is answered from rollups wherever an interval of theirs fits.
 */
export interface ReadingsRetention {
  readonly rawDays: number
  /** The minute and the 5-minute rollups alike. */
  readonly minuteDays: number
  readonly hourDays: number
  readonly dayDays: number
}

/**
 * Raw readings for 90 days (a dense site at 10,000 readings/s holds 78 billion of them in that time), minute
 * rollups for a year, hour rollups for five years, day rollups forever: "history of years" stays answerable
 * at hourly resolution, which is what charts of a year ask for.
 */
export const READINGS_RETENTION_DEFAULTS: ReadingsRetention = { rawDays: 90, minuteDays: 365, hourDays: 1825, dayDays: 0 }

function readingsRetention(env: Record<string, string | undefined>): ReadingsRetention {
  const forever = (days: number) => (days === 0 ? Infinity : days)
  const levels = [
    ['READINGS_RETENTION_DAYS', READINGS_RETENTION_DEFAULTS.rawDays], ['READINGS_MINUTE_ROLLUP_RETENTION_DAYS', READINGS_RETENTION_DEFAULTS.minuteDays],
    ['READINGS_HOUR_ROLLUP_RETENTION_DAYS', READINGS_RETENTION_DEFAULTS.hourDays], ['READINGS_DAY_ROLLUP_RETENTION_DAYS', READINGS_RETENTION_DEFAULTS.dayDays],
  ] as const
  const days: number[] = []
  for (let i = 0; i < levels.length; i++) {
    const [name, fallback] = levels[i]!
    const finer = days[i - 1]
    // A level left unset is kept at least as long as the one below it (READINGS_RETENTION_DAYS=400 alone works).
    const value = int(env, name, finer !== undefined && forever(finer) > forever(fallback) ? finer : fallback, 0)
    if (finer !== undefined && forever(value) < forever(finer)) {
      throw new Error(`${name} (${value || 'forever'}) must be at least ${levels[i - 1]![0]} (${finer || 'forever'}): a coarser level is kept at least as long`)
    }
    days.push(value)
  }
  const [rawDays, minuteDays, hourDays, dayDays] = days as [number, number, number, number]
  return { rawDays, minuteDays, hourDays, dayDays }
}

export interface MqttConfig {
  /** Plain MQTT (3.1.1 and 5) on HOST; undefined: no plain listener. 0 picks a free port (tests). */
  readonly port: number | undefined
  /** MQTT over TLS, when a certificate and its key are configured. */
  readonly tlsPort: number | undefined
  readonly tlsCertFile: string | undefined
  readonly tlsKeyFile: string | undefined
}

export interface IngestLogConfig {
  readonly servers: readonly string[]
  /** The JetStream stream; its subjects are `<subjectPrefix>.<account id>` (codec.ts says why not per device). */
  readonly stream: string
  readonly subjectPrefix: string
  /** Copies of each message: 1 on one server, 3 in a cluster (survives the loss of one node). */
  readonly replicas: number
  /** What the log keeps while writers cannot drain it; past either limit ingest answers 503. */
  readonly maxAgeSeconds: number
  readonly maxBytes: number
  /** Run a writer in this process (server processes do by default; `npm run writer` runs one alone). */
  readonly writer: boolean
  /**
   * A writer's store writes: up to this many readings, gathered for up to this long. Larger and fewer than the
   * direct path's group commits, since no device waits for them (their acknowledgement came from the log): QuestDB
   * merges each transaction into the partition's tail, so fewer transactions cost it less CPU per row.
   */
  readonly writerBatchSize: number
  readonly writerFlushMs: number
  /** A message not acknowledged by its writer this long after delivery goes to another writer. */
  readonly ackWaitSeconds: number
  /** Status and readiness report degraded while readings wait longer than this to become visible. */
  readonly lagBoundSeconds: number
  /**
   * Streams the log is made of (ingest/log/index.ts): 1 (the default) is one stream, as on a single node or with R1;
   * 3 on a 3-node R3 cluster lets ingest append to another lane while one lane's leader is being elected again.
   */
  readonly lanes?: number
  /** With several lanes: how long an append waits for its lane before it is made to another lane (default 300 ms). */
  readonly laneTimeoutMs?: number
}

/** A loopback name or address: only this machine reaches a service listening there. */
export const isLoopbackHost = (host: string) => host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)

/**
 * HOST, and PUBLIC_URL: an absolute http(s) URL without query or fragment, its trailing slash dropped. Without
 * PUBLIC_URL the service listens on loopback only (HOST defaults to 127.0.0.1, or 0.0.0.0 when PUBLIC_URL is set) and
 * PUBLIC_URL is that address; a HOST that others can reach needs PUBLIC_URL, since absolute URLs are never built on
 * the request's Host (the caller chooses it), so the start is refused rather than hand out links nobody can follow.
 */
function listenAddress(env: Record<string, string | undefined>, port: number, overrides: Partial<Config>): Pick<Config, 'host' | 'publicUrl' | 'publicUrlIsLoopbackDefault'> {
  const raw = overrides.publicUrl ?? env.PUBLIC_URL
  if (raw === undefined || raw === '') {
    const host = overrides.host ?? (env.HOST || '127.0.0.1')
    if (!isLoopbackHost(host)) {
      throw new Error(`PUBLIC_URL must be set when HOST (${host}) is not a loopback address: set it to the URL people and devices use to reach this service (e.g. PUBLIC_URL=http://192.168.1.20:${port}); pairing links and problem types are built on it, never on the request's Host`)
    }
    return { host, publicUrl: `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`, publicUrlIsLoopbackDefault: true }
  }
  let url: URL
  try { url = new URL(raw) } catch { throw new Error(`PUBLIC_URL must be an absolute URL such as https://records.example.com, got "${raw}"`) }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username || url.password) {
    throw new Error(`PUBLIC_URL must be an http(s) URL without credentials, query or fragment, got "${raw}"`)
  }
  return { host: overrides.host ?? (env.HOST || '0.0.0.0'), publicUrl: url.href.replace(/\/+$/, ''), publicUrlIsLoopbackDefault: false }
}

function ingestLog(env: Record<string, string | undefined>): IngestLogConfig | undefined {
  const raw = env.INGEST_LOG
  if (raw === undefined || raw.trim() === '') return undefined
  const servers = raw.split(',').map((s) => s.trim()).filter(Boolean)
  const prefix = env.INGEST_LOG_SUBJECT_PREFIX || 'hrs.readings'
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(prefix)) throw new Error(`INGEST_LOG_SUBJECT_PREFIX must be dot-separated tokens, got "${prefix}"`)
  return {
    servers,
    stream: env.INGEST_LOG_STREAM || 'HRS_READINGS',
    subjectPrefix: prefix,
    replicas: int(env, 'INGEST_LOG_REPLICAS', 1, 1),
    maxAgeSeconds: int(env, 'INGEST_LOG_MAX_AGE_SECONDS', 7 * 24 * 3600, 1),
    maxBytes: int(env, 'INGEST_LOG_MAX_BYTES', 1024 ** 3, 1024),
    writer: flag(env, 'INGEST_LOG_WRITER') ?? true,
    writerBatchSize: int(env, 'INGEST_LOG_WRITER_BATCH_SIZE', 20_000, 1),
    writerFlushMs: int(env, 'INGEST_LOG_WRITER_FLUSH_MS', 100, 0),
    ackWaitSeconds: int(env, 'INGEST_LOG_ACK_WAIT_SECONDS', 30, 1),
    lagBoundSeconds: int(env, 'INGEST_LOG_LAG_BOUND_SECONDS', 30, 1),
    lanes: int(env, 'INGEST_LOG_LANES', 1, 1),
    laneTimeoutMs: int(env, 'INGEST_LOG_LANE_TIMEOUT_MS', 300, 10),
  }
}

/** MQTT_PORT, MQTTS_PORT (+ MQTT_TLS_CERT and MQTT_TLS_KEY, PEM files): either port turns the listener on. */
function mqtt(env: Record<string, string | undefined>): MqttConfig | undefined {
  const port = env.MQTT_PORT ? int(env, 'MQTT_PORT', 0) : undefined
  const tlsPort = env.MQTTS_PORT ? int(env, 'MQTTS_PORT', 0) : undefined
  const tlsCertFile = env.MQTT_TLS_CERT || undefined
  const tlsKeyFile = env.MQTT_TLS_KEY || undefined
  if (tlsPort !== undefined && (!tlsCertFile || !tlsKeyFile)) throw new Error('MQTTS_PORT needs MQTT_TLS_CERT and MQTT_TLS_KEY (PEM files of the certificate and its private key)')
  if (port === undefined && tlsPort === undefined) return undefined
  return { port, tlsPort, tlsCertFile, tlsKeyFile }
}

/** CORS_ORIGINS: comma-separated origins (`https://app.example.com`), each scheme://host[:port] with nothing after. */
function corsOrigins(env: Record<string, string | undefined>): string[] | undefined {
  const raw = env.CORS_ORIGINS
  if (raw === undefined || raw.trim() === '') return undefined
  return raw.split(',').map((o) => o.trim()).filter(Boolean).map((origin) => {
    let url: URL
    try { url = new URL(origin) } catch { throw new Error(`CORS_ORIGINS: "${origin}" is not an origin such as https://app.example.com`) }
    if (url.origin !== origin) throw new Error(`CORS_ORIGINS: "${origin}" must be an origin (scheme://host[:port], no path or slash), e.g. ${url.origin}`)
    return origin
  })
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

/** A comma-separated list of non-negative seconds (fractions allowed, for tests). */
function seconds(env: Record<string, string | undefined>, name: string, fallback: number[]): number[] {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const list = raw.split(',').map((x) => Number(x.trim()))
  if (!list.length || list.some((n) => !Number.isFinite(n) || n < 0)) throw new Error(`${name} must be comma-separated seconds, got "${raw}"`)
  return list
}

const levels: LogLevel[] = ['debug', 'info', 'warn', 'error']

/**
 * Group-commit defaults follow the readings store (issue 12), measured with `bun run bench ingest-questdb` and
 * `ingest-postgres` (128 devices × 100 readings per request, 2 cores): the most readings/s whose p99 ack latency
 * at half that rate stays under 100 ms. Postgres takes big batches best, one INSERT per batch and two at a time.
 * QuestDB parses each /write on its HTTP workers and commits it to the WAL: smaller requests, more of them at once
 * (2000 rows × 4 in flight: 119k readings/s, p99 90 ms at half rate; 10000 × 2: 89k, p99 426 ms).
 */
const INGEST_DEFAULTS = {
  sql: { batchSize: 10_000, flushConcurrency: 2 },
  questdb: { batchSize: 2000, flushConcurrency: 4 },
} as const

export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const logLevel = (env.LOG_LEVEL ?? 'info') as LogLevel
  if (!levels.includes(logLevel)) throw new Error(`LOG_LEVEL must be one of ${levels.join(', ')}`)
  const readingsStore = (overrides.questdbIlp ?? env.QUESTDB_ILP) ? 'questdb' : 'sql'
  const ingest = INGEST_DEFAULTS[readingsStore]
  const port = overrides.port ?? int(env, 'PORT', 3000)
  const config: Config = {
    port,
    ...listenAddress(env, port, overrides),
    corsOrigins: corsOrigins(env),
    dataDir: env.DATA_DIR || './.data',
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    redisPrefix: env.REDIS_PREFIX || 'hrs:',
    redisCommandTimeoutMs: int(env, 'REDIS_COMMAND_TIMEOUT_MS', 500, 1),
    redisConnectTimeoutMs: int(env, 'REDIS_CONNECT_TIMEOUT_MS', 2_000, 1),
    questdbIlp: env.QUESTDB_ILP || undefined,
    questdbPgUrl: env.QUESTDB_PG_URL || undefined,
    questdbTable: env.QUESTDB_TABLE || 'sensor_readings',
    workers: int(env, 'WORKERS', 1, 1),
    webhookAllowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE') ?? false,
    logLevel,
    metricsToken: env.METRICS_TOKEN || undefined,
    demo: flag(env, 'DEMO'),
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 600, 1),
    deviceRateLimitPerMinute: int(env, 'DEVICE_RATE_LIMIT_PER_MINUTE', 120, 1),
    rateLimitWindowSeconds: int(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1),
    keyCacheTtlMs: int(env, 'KEY_CACHE_TTL_MS', 60_000, 0),
    testRoutes: flag(env, 'TEST_ROUTES') ?? false,
    webhookRetrySchedule: seconds(env, 'WEBHOOK_RETRY_SCHEDULE', [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400]),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 15_000, 1),
    webhookPollMs: int(env, 'WEBHOOK_POLL_MS', 500, 1),
    webhookConcurrency: int(env, 'WEBHOOK_CONCURRENCY', 16, 1),
    webhookConcurrencyPerEndpoint: int(env, 'WEBHOOK_CONCURRENCY_PER_ENDPOINT', 2, 1),
    ingestBatchSize: int(env, 'INGEST_BATCH_SIZE', ingest.batchSize, 1),
    ingestFlushMs: int(env, 'INGEST_FLUSH_MS', 10, 0),
    ingestMaxQueued: int(env, 'INGEST_MAX_QUEUED', 200_000, 1),
    ingestFlushConcurrency: int(env, 'INGEST_FLUSH_CONCURRENCY', ingest.flushConcurrency, 1),
    ingestWriteTimeoutMs: int(env, 'INGEST_WRITE_TIMEOUT_MS', 10_000, 1),
    ingestLog: ingestLog(env),
    mqtt: mqtt(env),
    readingsQueries: {
      maxBuckets: int(env, 'READINGS_MAX_BUCKETS', READINGS_QUERY_DEFAULTS.maxBuckets, 1),
      heavyRows: int(env, 'READINGS_HEAVY_ROWS', READINGS_QUERY_DEFAULTS.heavyRows, 1),
      perAccount: int(env, 'READINGS_QUERIES_PER_ACCOUNT', READINGS_QUERY_DEFAULTS.perAccount, 1),
      timeoutMs: int(env, 'READINGS_QUERY_TIMEOUT_MS', READINGS_QUERY_DEFAULTS.timeoutMs, 100),
      connections: int(env, 'READINGS_QUERY_CONNECTIONS', READINGS_CONNECTIONS[readingsStore], 1),
      heavyConcurrency: int(env, 'READINGS_HEAVY_CONCURRENCY', READINGS_QUERY_DEFAULTS.heavyConcurrency, 1),
      keptRows: int(env, 'READINGS_KEPT_ROWS', READINGS_QUERY_DEFAULTS.keptRows, 0),
    },
    readingsRetention: readingsRetention(env),
    streams: {
      perAccount: int(env, 'STREAMS_PER_ACCOUNT', 20, 1),
      bufferBytes: int(env, 'STREAM_BUFFER_BYTES', 1 << 20, 1024),
      heartbeatMs: int(env, 'STREAM_HEARTBEAT_MS', 15_000, 100),
      replayWindowMs: int(env, 'STREAM_REPLAY_WINDOW_MS', 15 * 60_000, 0),
    },
    ...overrides,
  }
  return Object.freeze(config)
}

/** True when no external database is configured: PGlite holds the records. */
export const isEmbedded = (config: Config) => config.databaseUrl === undefined
