import { sql } from 'drizzle-orm'
import { accounts } from '../db/schema/index.ts'
import { createAccount } from './accounts.ts'
import { createKey } from './auth/keys.ts'
import { ALL_SCOPES } from './auth/scopes.ts'
import { isEmbedded, type Config } from './config.ts'
import type { Deps } from './deps.ts'

/** Whether this start may seed the demo account: `DEMO=1` always, `DEMO=0` never, else only in embedded mode. */
export function demoEnabled(config: Config): boolean {
  return config.demo ?? isEmbedded(config)
}

/** On an empty store, creates a demo account and returns a key holding every scope; otherwise undefined. */
export async function seedDemoAccount(deps: Deps): Promise<{ accountId: string; token: string } | undefined> {
  const [row] = await deps.database.db.select({ n: sql<number>`count(*)::int` }).from(accounts)
  if ((row?.n ?? 0) > 0) return undefined
  const account = await createAccount(deps.database.db, { name: 'Demo account', plan: 'breeder' })
  const { token } = await createKey(deps.database.db, { accountId: account.id, kind: 'personal', name: 'demo key', scopes: ALL_SCOPES })
  return { accountId: account.id, token }
}
