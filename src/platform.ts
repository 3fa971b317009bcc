import { eq } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { platformSettings } from '../db/schema/index.ts'
import type { PlatformStatus } from './plans.ts'

export const API_VERSION = '1.0.0'
export const RELEASE_DATE = '2026-09-11'
const STATUS_CACHE_MS = 1_000

async function readSetting(db: Db, key: string): Promise<string | undefined> {
  const [row] = await db.select({ value: platformSettings.value }).from(platformSettings).where(eq(platformSettings.key, key))
  return row?.value
}

async function writeSetting(db: Db, key: string, value: string): Promise<void> {
  await db.insert(platformSettings).values({ key, value })
    .onConflictDoUpdate({ target: platformSettings.key, set: { value, updatedAt: new Date() } })
}

/** Reads a setting, creating it with `initial` if absent; every process agrees on the first value written. */
export async function settingOrCreate(db: Db, key: string, initial: () => string): Promise<string> {
  await db.insert(platformSettings).values({ key, value: initial() }).onConflictDoNothing()
  return (await readSetting(db, key))!
}

/** The operator-set platform status, cached for a second so the plan gate costs no query per request. */
export class PlatformStatusSource {
  private value: PlatformStatus = 'operational'
  private readAt = 0
  private refreshing: Promise<void> | undefined

  constructor(private readonly db: Db) {}

  async refresh(): Promise<void> {
    const stored = await readSetting(this.db, 'status')
    this.value = stored === 'limited' ? 'limited' : 'operational'
    this.readAt = Date.now()
  }

  /** The cached status; refreshes it in the background when stale (a failed read keeps the last value). */
  current(): PlatformStatus {
    if (Date.now() - this.readAt > STATUS_CACHE_MS && !this.refreshing) {
      this.refreshing = this.refresh().catch(() => {}).finally(() => { this.refreshing = undefined })
    }
    return this.value
  }

  async set(status: PlatformStatus): Promise<void> {
    await writeSetting(this.db, 'status', status)
    await this.refresh()
  }
}
