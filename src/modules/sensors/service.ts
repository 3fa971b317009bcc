// Sensor devices: registration (directly or by completing a pairing claim), channel mapping, deletion.
import { and, eq, gte, isNull, sql } from 'drizzle-orm'
import { METRICS } from '../../../db/reference/metrics.ts'
import { apiKeys, environments, sensorDevices, type DeviceChannel } from '../../../db/schema/index.ts'
import { createKey } from '../../auth/keys.ts'
import type { Deps } from '../../deps.ts'
import { ApiError, type FieldError } from '../../http/errors.ts'
import { DEVICE_CHANNEL } from '../../kv/channels.ts'
import { requireMatch } from '../../http/etag.ts'
import { mergePatch } from '../../http/merge-patch.ts'
import { newId } from '../../ids.ts'
import { atOrAfter } from '../../records/filters.ts'
import { listPage } from '../../records/list.ts'
import { presentRow } from '../../records/rows.ts'
import { appendEvent, type Executor } from '../../webhooks/outbox.ts'
import { claimForDevice, type ClaimRow } from './pairing.ts'

export type DeviceRow = typeof sensorDevices.$inferSelect
export const presentDevice = (row: DeviceRow) => presentRow(row)

const metricUnits = new Map(METRICS.map((m) => [m.id, m.unit]))

export interface ChannelInput { key: string; metric?: string | null; unit?: string | null; environment_id?: string | null }
export interface DeviceInput { name?: string; model?: string | null; hardware_id?: string | null; channels?: ChannelInput[]; claim_code?: string }

export async function getDevice(db: Executor, accountId: string, id: string, lock = false): Promise<DeviceRow | undefined> {
  const query = db.select().from(sensorDevices).where(and(eq(sensorDevices.account_id, accountId), eq(sensorDevices.id, id), isNull(sensorDevices.deleted_at)))
  const [row] = await (lock ? query.for('update') : query)
  return row
}

/** Normalises channels (a metric's unit by default) and checks what the schema cannot. */
async function resolveChannels(db: Executor, accountId: string, channels: ChannelInput[]): Promise<DeviceChannel[]> {
  const errors: FieldError[] = []
  const seen = new Set<string>()
  const environmentIds = [...new Set(channels.map((c) => c.environment_id).filter((id): id is string => Boolean(id)))]
  const known = new Set(environmentIds.length
    ? (await db.select({ id: environments.id }).from(environments).where(and(eq(environments.account_id, accountId), sql`${environments.id} = any(${sql.param(environmentIds)}::text[])`))).map((r) => r.id)
    : [])
  const resolved = channels.map((channel, i) => {
    if (seen.has(channel.key)) errors.push({ path: `/body/channels/${i}/key`, message: 'is used by another channel of this device' })
    seen.add(channel.key)
    if (channel.metric && !metricUnits.has(channel.metric)) errors.push({ path: `/body/channels/${i}/metric`, message: 'is not a metric (see GET /environment/metrics)' })
    if (channel.environment_id && !known.has(channel.environment_id)) errors.push({ path: `/body/channels/${i}/environment_id`, message: 'is not an environment of this account' })
    const metric = channel.metric ?? null
    return { key: channel.key, metric, unit: channel.unit ?? (metric ? metricUnits.get(metric) ?? null : null), environment_id: channel.environment_id ?? null }
  })
  if (errors.length) throw new ApiError('validation_failed', 'Some channels are not valid.', { errors })
  return resolved
}

export interface DeviceListQuery { limit?: number; cursor?: string; environment_id?: string; updated_since?: string }

export function listDevices(deps: Pick<Deps, 'cursors' | 'database'>, accountId: string, query: DeviceListQuery) {
  const { limit, cursor, ...filters } = query
  return listPage(deps, {
    list: 'sensor-devices', accountId, table: sensorDevices, filters, limit, cursor,
    conditions: (f) => [
      isNull(sensorDevices.deleted_at),
      f.environment_id ? sql`${sensorDevices.channels} @> jsonb_build_array(jsonb_build_object('environment_id', ${f.environment_id}::text))` : undefined,
      atOrAfter(sensorDevices.updated_at, f.updated_since),
    ],
  }, presentDevice)
}

/**
 * Registers a device and mints its key. With `claim_code` it completes a pairing claim instead: the key is then
 * minted by the device's next poll and goes only to it, never to the caller, so it exists in exactly one place.
 */
export async function createDevice(deps: Pick<Deps, 'database' | 'rateLimiter'>, accountId: string, input: DeviceInput): Promise<{ row: DeviceRow; key: string | null }> {
  const result = await deps.database.db.transaction(async (tx) => {
    let claim: ClaimRow | undefined
    if (input.claim_code !== undefined) claim = await claimForDevice(deps, tx, accountId, input.claim_code)
    const channels = await resolveChannels(tx, accountId, input.channels ?? [])
    const id = newId('device')
    const [row] = await tx.insert(sensorDevices).values({
      id, account_id: accountId, name: input.name ?? (claim?.model ? `${claim.model} ${claim.user_code}` : `Device ${claim?.user_code ?? ''}`.trim()),
      model: input.model ?? claim?.model ?? null, hardware_id: input.hardware_id ?? claim?.hardware_id ?? null, channels,
    }).returning()
    await appendEvent(tx, accountId, 'sensor_device.created', presentDevice(row!))
    if (claim) {
      // No key yet: the device's own poll mints it (pairing.ts), so it never exists anywhere but with the device.
      await claim.complete(id)
      // The code the owner entered, not the claim id: that is the device's secret, and events travel to webhooks.
      await appendEvent(tx, accountId, 'sensor_device.paired', { ...presentDevice(row!), user_code: claim.user_code })
      return { row: row!, key: null }
    }
    const { token } = await createKey(tx, { accountId, kind: 'device', name: `device ${id}`, deviceId: id })
    return { row: row!, key: token }
  })
  return result
}

const WRITABLE = ['name', 'model', 'hardware_id', 'channels'] as const

export async function updateDevice(deps: Pick<Deps, 'database' | 'shared'>, accountId: string, id: string, patch: Record<string, unknown>, ifMatch: string | null): Promise<DeviceRow> {
  const row = await deps.database.db.transaction(async (tx) => {
    const current = await getDevice(tx, accountId, id, true)
    if (!current) throw new ApiError('not_found', 'No such device.')
    requireMatch(ifMatch, current.version)
    const before = Object.fromEntries(WRITABLE.map((f) => [f, current[f]]))
    // channels is a list, so a merge patch replaces it whole; null clears it.
    const merged = { channels: [], model: null, hardware_id: null, ...(mergePatch(before, patch) as object) } as Record<string, any>
    const channels = await resolveChannels(tx, accountId, merged.channels)
    const next = { name: merged.name as string, model: merged.model, hardware_id: merged.hardware_id, channels }
    const changed = WRITABLE.filter((f) => JSON.stringify(next[f]) !== JSON.stringify(current[f]))
    if (!changed.length) return current
    // A channel mapped now is no longer unmapped.
    const unmapped = current.unmapped_channels.filter((key) => !channels.some((c) => c.key === key && c.metric))
    const [updated] = await tx.update(sensorDevices).set({ ...next, unmapped_channels: unmapped, version: current.version + 1, updated_at: new Date() })
      .where(eq(sensorDevices.id, id)).returning()
    await appendEvent(tx, accountId, 'sensor_device.updated', presentDevice(updated!), presentRow(Object.fromEntries(changed.map((f) => [f, current[f]]))))
    return updated!
  })
  await deps.shared.publish(DEVICE_CHANNEL, id)
  return row
}

/** Soft delete; the device's keys are revoked in the same transaction and dropped from every process's cache. */
export async function deleteDevice(deps: Pick<Deps, 'authenticator' | 'database' | 'shared'>, accountId: string, id: string, ifMatch: string | null): Promise<void> {
  const revoked = await deps.database.db.transaction(async (tx) => {
    const current = await getDevice(tx, accountId, id, true)
    if (!current) throw new ApiError('not_found', 'No such device.')
    requireMatch(ifMatch, current.version)
    const now = new Date()
    const [row] = await tx.update(sensorDevices).set({ deleted_at: now, updated_at: now, version: current.version + 1 }).where(eq(sensorDevices.id, id)).returning()
    const keys = await tx.update(apiKeys).set({ revokedAt: now })
      .where(and(eq(apiKeys.accountId, accountId), eq(apiKeys.deviceId, id), isNull(apiKeys.revokedAt))).returning({ tokenHash: apiKeys.tokenHash })
    await appendEvent(tx, accountId, 'sensor_device.deleted', presentDevice(row!))
    return keys.map((k) => k.tokenHash)
  })
  await Promise.all(revoked.map((hash) => deps.authenticator.invalidateKey(hash)))
  await deps.shared.publish(DEVICE_CHANNEL, id)
}

