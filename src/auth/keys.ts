import { and, desc, eq, isNull } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { apiKeys } from '../../db/schema/index.ts'
import { newId } from '../ids.ts'
import { generateToken, hashToken, TOKEN_PREFIX, type TokenKind } from '../tokens.ts'
import type { Authenticator } from './authenticator.ts'
import type { Scope } from './scopes.ts'

export type KeyRow = typeof apiKeys.$inferSelect

export interface CreatedKey { key: KeyRow; token: string }

/** Creates a key and returns its value: the only time the value exists outside the caller's hands. */
export async function createKey(db: Pick<Db, 'insert'>, input: {
  accountId: string; kind: TokenKind; name: string; scopes?: readonly Scope[]; deviceId?: string; expiresAt?: Date | null
}): Promise<CreatedKey> {
  const token = generateToken(input.kind)
  const [key] = await db.insert(apiKeys).values({
    id: newId('key'),
    accountId: input.accountId,
    kind: input.kind,
    name: input.name,
    tokenHash: hashToken(token),
    tokenPrefix: TOKEN_PREFIX[input.kind],
    lastFour: token.slice(-4),
    // Device keys carry no scopes: what they may call is fixed (CONTRACT §2).
    scopes: input.kind === 'device' ? [] : [...(input.scopes ?? [])],
    deviceId: input.deviceId ?? null,
    expiresAt: input.expiresAt ?? null,
  }).returning()
  return { key: key!, token }
}

export async function listKeys(db: Db, accountId: string): Promise<KeyRow[]> {
  return db.select().from(apiKeys).where(eq(apiKeys.accountId, accountId)).orderBy(desc(apiKeys.createdAt))
}

export async function findKeyById(db: Db, id: string): Promise<KeyRow | undefined> {
  const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, id))
  return row
}

/** Marks the key revoked; returns it (with its hash, for cache invalidation) or undefined if none was live. */
export async function revokeKey(db: Db, id: string): Promise<KeyRow | undefined> {
  const [row] = await db.update(apiKeys).set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt))).returning()
  return row
}

/** Revokes a key and makes every server process refuse it at once; undefined if no live key has this id. */
export async function revokeKeyEverywhere(db: Db, authenticator: Pick<Authenticator, 'invalidateKey'>, id: string): Promise<KeyRow | undefined> {
  const key = await revokeKey(db, id)
  if (key) await authenticator.invalidateKey(key.tokenHash)
  return key
}

/** How a key is shown after creation: never its value, only prefix and last four characters. */
export function maskedToken(key: Pick<KeyRow, 'tokenPrefix' | 'lastFour'>): string {
  return `${key.tokenPrefix}…${key.lastFour}`
}
