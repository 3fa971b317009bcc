import { eq } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { accounts, PLANS, type Plan } from '../db/schema/index.ts'
import { newId } from './ids.ts'

export type Account = typeof accounts.$inferSelect

export function isPlan(value: string): value is Plan {
  return (PLANS as readonly string[]).includes(value)
}

export async function createAccount(db: Db, input: { name: string; email?: string; plan?: Plan; liveTestAllowlisted?: boolean }): Promise<Account> {
  const [row] = await db.insert(accounts).values({
    id: newId('account'),
    name: input.name,
    email: input.email ?? null,
    plan: input.plan ?? 'breeder',
    liveTestAllowlisted: input.liveTestAllowlisted ?? false,
  }).returning()
  return row!
}

export async function getAccount(db: Db, id: string): Promise<Account | undefined> {
  const [row] = await db.select().from(accounts).where(eq(accounts.id, id))
  return row
}

export async function listAccounts(db: Db): Promise<Account[]> {
  return db.select().from(accounts).orderBy(accounts.id)
}

export async function updateAccount(db: Db, id: string, changes: { plan?: Plan; liveTestAllowlisted?: boolean; name?: string }): Promise<Account | undefined> {
  const [row] = await db.update(accounts).set({ ...changes, updatedAt: new Date() }).where(eq(accounts.id, id)).returning()
  return row
}
