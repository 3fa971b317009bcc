// Headless pairing in the shape of the OAuth device flow (RFC 8628, CONTRACT §7): the device starts a claim
// and shows a short user code; the owner enters it with POST /sensors/devices; the device polls for its key.
//
// The claim id is the device's only secret: whoever presents it is handed the device key. So it is drawn fresh
// (80 random bits, `newSecretId`), kept only as a hash, and the device key is minted by the poll that presents it,
// never stored in plain text (issue 55: claim ids were one step from request ids, and the key waited in the table).
import { createHash, randomInt } from 'node:crypto'
import { and, eq, isNull } from 'drizzle-orm'
import { pairingClaims, sensorDevices } from '../../../db/schema/index.ts'
import { createKey } from '../../auth/keys.ts'
import type { Deps } from '../../deps.ts'
import { ApiError } from '../../http/errors.ts'
import { newSecretId } from '../../ids.ts'
import type { Executor } from '../../webhooks/outbox.ts'

/** RFC 8628 §6.1: consonants only (no words can form), none easily confused with another; 20^8 ≈ 2.6e10 codes. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'
export const CLAIM_TTL_SECONDS = 600
export const POLL_INTERVAL_SECONDS = 5
/**
 * Status polls one client address may make per minute, whatever the claim ids (unknown ones count too): a device
 * polls 12 times a minute, so a site pairing ten devices at once behind one address stays within it.
 */
export const CLAIM_POLLS_PER_MINUTE = 120
/** Wrong codes an account may enter per window before it is made to wait: guessing stays hopeless. */
const CLAIM_ATTEMPTS_PER_WINDOW = 10
const CLAIM_ATTEMPT_WINDOW_MS = 15 * 60 * 1000
/** The console page where the owner enters (or confirms) the code; see src/console. */
export const VERIFICATION_PATH = '/console/activate'

export type ClaimStatus = 'pending' | 'slow_down' | 'claimed' | 'expired'

export function newUserCode(): string {
  let code = ''
  for (let i = 0; i < 8; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]
  return `${code.slice(0, 4)}-${code.slice(4)}`
}

/** Accepts what people type: any case, with or without the hyphen or spaces. */
export function normalizeUserCode(input: string): string | undefined {
  const compact = input.toUpperCase().replace(/[\s-]/g, '')
  if (compact.length !== 8 || [...compact].some((c) => !USER_CODE_ALPHABET.includes(c))) return undefined
  return `${compact.slice(0, 4)}-${compact.slice(4)}`
}

/** How the table keeps a claim id: like a key, only its hash. */
export const claimHash = (claimId: string) => createHash('sha256').update(claimId).digest('hex')

export async function startClaim(deps: Pick<Deps, 'database'>, input: { model?: string; hardware_id?: string }): Promise<{ id: string; user_code: string }> {
  for (let attempt = 0; ; attempt++) {
    try {
      const id = newSecretId('claim')
      const [claim] = await deps.database.db.insert(pairingClaims).values({
        claim_hash: claimHash(id), user_code: newUserCode(), model: input.model ?? null, hardware_id: input.hardware_id ?? null,
        expires_at: new Date(Date.now() + CLAIM_TTL_SECONDS * 1000),
      }).returning({ user_code: pairingClaims.user_code })
      return { id, user_code: claim!.user_code }
    } catch (error) {
      // A live claim already holds this code (unique among pending claims): draw another.
      if (attempt < 3 && JSON.stringify(error).includes('pairing_claims_pending_code_idx')) continue
      throw error
    }
  }
}

/**
 * What a polling device learns. Polling faster than the interval answers slow_down (RFC 8628 §3.5); the first poll
 * after the claim mints the device key and carries it, so later polls carry only the device id.
 */
export async function pollClaim(deps: Pick<Deps, 'database'>, claimId: string): Promise<{ status: ClaimStatus; device_id?: string; device_key?: string }> {
  const db = deps.database.db
  const hash = claimHash(claimId)
  const [claim] = await db.select().from(pairingClaims).where(eq(pairingClaims.claim_hash, hash))
  if (!claim) throw new ApiError('not_found', 'No such claim.')
  const now = new Date()
  if (claim.status === 'claimed') {
    if (claim.key_issued_at) return { status: 'claimed', device_id: claim.device_id! }
    const issued = await issueDeviceKey(deps, hash, now)
    if (issued === 'device deleted') return { status: 'expired' }
    return issued ? { status: 'claimed', device_id: claim.device_id!, device_key: issued.token } : { status: 'claimed', device_id: claim.device_id! }
  }
  if (claim.status === 'expired') return { status: 'expired' }
  if (claim.expires_at <= now) {
    await db.update(pairingClaims).set({ status: 'expired' }).where(and(eq(pairingClaims.claim_hash, hash), eq(pairingClaims.status, 'pending')))
    return { status: 'expired' }
  }
  await db.update(pairingClaims).set({ last_polled_at: now }).where(eq(pairingClaims.claim_hash, hash))
  const tooSoon = claim.last_polled_at !== null && now.getTime() - claim.last_polled_at.getTime() < POLL_INTERVAL_SECONDS * 1000
  return { status: tooSoon ? 'slow_down' : 'pending' }
}

/**
 * Mints the key of a claimed device for the poll that proved the claim id. Only the poll whose update marks the key
 * issued mints it, however many polls race; a device deleted before its key was handed over gets none.
 */
async function issueDeviceKey(deps: Pick<Deps, 'database'>, hash: string, now: Date): Promise<{ token: string } | 'device deleted' | undefined> {
  return deps.database.db.transaction(async (tx) => {
    const [won] = await tx.update(pairingClaims).set({ key_issued_at: now, last_polled_at: now })
      .where(and(eq(pairingClaims.claim_hash, hash), eq(pairingClaims.status, 'claimed'), isNull(pairingClaims.key_issued_at)))
      .returning({ accountId: pairingClaims.account_id, deviceId: pairingClaims.device_id })
    if (!won) return undefined
    const [device] = await tx.select({ id: sensorDevices.id }).from(sensorDevices)
      .where(and(eq(sensorDevices.id, won.deviceId!), eq(sensorDevices.account_id, won.accountId!), isNull(sensorDevices.deleted_at)))
    if (!device) return 'device deleted'
    const { token } = await createKey(tx, { accountId: won.accountId!, kind: 'device', name: `device ${device.id}`, deviceId: device.id })
    return { token }
  })
}

export interface ClaimRow {
  user_code: string; model: string | null; hardware_id: string | null
  /** Marks the claim done for this device; its key is minted later, by the device's own poll. */
  complete(deviceId: string): Promise<void>
}

/** Finds the pending claim a user code names, inside the device-creating transaction; counts every attempt. */
export async function claimForDevice(deps: Pick<Deps, 'rateLimiter'>, tx: Executor, accountId: string, code: string): Promise<ClaimRow> {
  const { count, resetMs } = await deps.rateLimiter.exact(`claim-attempts:${accountId}`, CLAIM_ATTEMPT_WINDOW_MS)
  if (count > CLAIM_ATTEMPTS_PER_WINDOW) {
    const seconds = Math.ceil(resetMs / 1000)
    throw new ApiError('rate_limited', `Too many pairing codes entered; try again in ${seconds} s.`, { headers: { 'retry-after': String(seconds) } })
  }
  const normalized = normalizeUserCode(code)
  const invalid = () => new ApiError('validation_failed', 'No pending pairing claim has this code (it may have expired).', { errors: [{ path: '/body/claim_code', message: 'matches no pending claim' }] })
  if (!normalized) throw invalid()
  const [claim] = await tx.select().from(pairingClaims).where(and(eq(pairingClaims.user_code, normalized), eq(pairingClaims.status, 'pending'))).for('update')
  if (!claim || claim.expires_at <= new Date()) throw invalid()
  return {
    user_code: claim.user_code, model: claim.model, hardware_id: claim.hardware_id,
    async complete(deviceId) {
      await tx.update(pairingClaims).set({ status: 'claimed', account_id: accountId, device_id: deviceId }).where(eq(pairingClaims.claim_hash, claim.claim_hash))
    },
  }
}
