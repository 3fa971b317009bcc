import { sql } from 'drizzle-orm'
import { accounts } from '../db/schema/index.ts'
import { createAccount } from './accounts.ts'
import { createKey } from './auth/keys.ts'
import { ALL_SCOPES } from './auth/scopes.ts'
import { isEmbedded, type Config } from './config.ts'
import type { Deps } from './deps.ts'
import { fillDemoAccount } from './tools/demo-data.ts'

/** Whether this start may seed the demo account: `DEMO=1` always, `DEMO=0` never, else only in embedded mode. */
export function demoEnabled(config: Config): boolean {
  return config.demo ?? isEmbedded(config)
}

/**
 * How many animals the first start puts in the demo account. Smaller than the `demo` command's default (300) so
 * the first start stays quick (a second or two on PGlite); `bun run cli demo` makes a bigger collection.
 */
const SEED_DEMO_ANIMALS = 120

/**
 * On an empty store, creates a demo account filled with a generated collection (so the key has data behind it) and
 * returns a key holding every scope; otherwise undefined.
 */
export async function seedDemoAccount(deps: Pick<Deps, 'database' | 'log'>): Promise<{ accountId: string; token: string } | undefined> {
  const [row] = await deps.database.db.select({ n: sql<number>`count(*)::int` }).from(accounts)
  if ((row?.n ?? 0) > 0) return undefined
  const account = await createAccount(deps.database.db, { name: 'Demo account', plan: 'breeder' })
  const { token } = await createKey(deps.database.db, { accountId: account.id, kind: 'personal', name: 'demo key', scopes: ALL_SCOPES })
  try {
    await fillDemoAccount(deps, account.id, { animals: SEED_DEMO_ANIMALS })
  } catch (error) {
    // The account and key are made; an empty demo account is still better than a server that does not start.
    deps.log.warn('the demo account could not be filled', { error: (error as Error).message })
  }
  return { accountId: account.id, token }
}
