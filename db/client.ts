// The only place that picks a database driver: postgres.js when DATABASE_URL is set, PGlite otherwise.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import * as schema from './schema/index.ts'

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>

export interface Database {
  readonly db: Db
  readonly kind: 'postgres' | 'pglite'
  /** Runs the committed migrations (idempotent). */
  migrate(): Promise<void>
  /** A cheap round trip for readiness checks. */
  ping(): Promise<void>
  close(): Promise<void>
}

export const MIGRATIONS_FOLDER = join(import.meta.dir, 'migrations')

export async function openDatabase(options: { databaseUrl?: string; dataDir: string }): Promise<Database> {
  if (options.databaseUrl) {
    const { default: postgres } = await import('postgres')
    const { drizzle } = await import('drizzle-orm/postgres-js')
    const { migrate } = await import('drizzle-orm/postgres-js/migrator')
    const client = postgres(options.databaseUrl, { max: 10, onnotice: () => {} })
    const db = drizzle({ client, schema })
    return {
      db: db as unknown as Db,
      kind: 'postgres',
      migrate: () => migrate(db, { migrationsFolder: MIGRATIONS_FOLDER }),
      ping: async () => { await client`select 1` },
      close: () => client.end({ timeout: 5 }),
    }
  }
  const { PGlite } = await import('@electric-sql/pglite')
  const { drizzle } = await import('drizzle-orm/pglite')
  const { migrate } = await import('drizzle-orm/pglite/migrator')
  const inMemory = options.dataDir === 'memory://'
  if (!inMemory) mkdirSync(options.dataDir, { recursive: true })
  const client = inMemory ? new PGlite() : new PGlite(options.dataDir)
  await client.waitReady
  const db = drizzle({ client, schema })
  return {
    db: db as unknown as Db,
    kind: 'pglite',
    migrate: () => migrate(db, { migrationsFolder: MIGRATIONS_FOLDER }),
    ping: async () => { await client.query('select 1') },
    close: () => client.close(),
  }
}
