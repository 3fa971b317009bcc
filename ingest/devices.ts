// What the ingest path needs to know about a device (its account and channel mapping), cached in memory so a
// request costs no database round trip. Channel changes and deletions are pushed to every process. What ingest
// learns in return (last seen, channels that arrived unmapped) is written back in the background, coalesced.
import { and, eq, isNull, sql } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { sensorDevices, type DeviceChannel } from '../db/schema/index.ts'
import { DEVICE_CHANNEL } from '../src/kv/channels.ts'
import type { SharedStore } from '../src/kv/interface.ts'

export interface ChannelMapping { metric: string | null; environmentId: string | null }
export interface DeviceInfo {
  id: string
  accountId: string
  channels: Map<string, ChannelMapping>
  unmapped: Set<string>
  /** The channels as the API shows them: what a device reads as its configuration (MQTT `devices/{id}/config`). */
  configuration: readonly DeviceChannel[]
}

const TTL_MS = 60_000
const WRITE_BACK_MS = 1000

interface Sighting { lastSeen: number; unmapped: Set<string> }

export class DeviceDirectory {
  private readonly cache = new Map<string, { info: DeviceInfo; loadedAt: number }>()
  private readonly loading = new Map<string, Promise<DeviceInfo | undefined>>()
  private readonly sightings = new Map<string, Sighting>()
  /** Sightings taken out for writing back whose statement has not finished: still newer than the rows. */
  private readonly writing = new Map<string, number>()
  private generation = 0
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(private readonly db: Db, private readonly shared: SharedStore) {}

  async start(): Promise<void> {
    await this.shared.subscribe(DEVICE_CHANNEL, (deviceId) => { this.generation++; this.cache.delete(deviceId) })
    this.timer = setInterval(() => void this.writeBack(), WRITE_BACK_MS)
    this.timer.unref?.()
  }

  get(deviceId: string): Promise<DeviceInfo | undefined> | DeviceInfo {
    const hit = this.cache.get(deviceId)
    if (hit && Date.now() - hit.loadedAt < TTL_MS) return hit.info
    let pending = this.loading.get(deviceId)
    if (!pending) {
      const generation = this.generation
      pending = this.load(deviceId).then((info) => {
        // Not cached if a change was announced while we read: the next request reads again.
        if (info && generation === this.generation) this.cache.set(deviceId, { info, loadedAt: Date.now() })
        return info
      }).finally(() => this.loading.delete(deviceId))
      this.loading.set(deviceId, pending)
    }
    return pending
  }

  /** When this process last saw the device report, if it has not written that back yet (at most a second). */
  pendingLastSeen(deviceId: string): number | undefined {
    return this.sightings.get(deviceId)?.lastSeen ?? this.writing.get(deviceId)
  }

  /** Notes that a device reported, and which of its channels arrived without a mapping. */
  seen(device: DeviceInfo, unmapped: ReadonlySet<string>) {
    let sighting = this.sightings.get(device.id)
    if (!sighting) { sighting = { lastSeen: 0, unmapped: new Set() }; this.sightings.set(device.id, sighting) }
    sighting.lastSeen = Date.now()
    if (unmapped.size) for (const channel of unmapped) if (!device.unmapped.has(channel)) { device.unmapped.add(channel); sighting.unmapped.add(channel) }
  }

  /**
   * Writes what ingest learned, once a second: every device's last sighting in one statement (a facility may
   * hold thousands of devices), and the rare newly unmapped channels device by device.
   */
  async writeBack(): Promise<void> {
    if (!this.sightings.size) return
    const batch = [...this.sightings]
    this.sightings.clear()
    const ids = batch.map(([deviceId]) => deviceId)
    // Epoch milliseconds as float8[] (exact), as the SQL readings store sends them: drizzle leaves timestamp
    // parameters to the driver unserialised, so postgres.js cannot bind a timestamptz[].
    const seenMs = batch.map(([, sighting]) => sighting.lastSeen)
    // Until the statement commits, the row still holds the older sighting (or none): a page read in between
    // asks pendingLastSeen, which must still know it (console's "Last seen" said "never" on a busy machine).
    for (const [deviceId, sighting] of batch) this.writing.set(deviceId, sighting.lastSeen)
    await this.db.execute(sql`update ${sensorDevices} set last_seen_at = to_timestamp(sighting.seen_ms / 1000)
      from unnest(${sql.param(ids)}::text[], ${sql.param(seenMs)}::float8[]) as sighting(id, seen_ms)
      where ${sensorDevices.id} = sighting.id and ${sensorDevices.deleted_at} is null`)
      .catch(() => { /* best effort: last_seen_at is informational, and the next sighting writes it again */ })
      .finally(() => { for (const [deviceId, sighting] of batch) if (this.writing.get(deviceId) === sighting.lastSeen) this.writing.delete(deviceId) })
    for (const [deviceId, sighting] of batch) {
      if (!sighting.unmapped.size) continue
      const unmapped = [...sighting.unmapped]
      await this.db.update(sensorDevices).set({
        unmapped_channels: sql`(select array(select distinct unnest(${sensorDevices.unmapped_channels} || ${sql.param(unmapped)}::text[]) order by 1))`,
      }).where(and(eq(sensorDevices.id, deviceId), isNull(sensorDevices.deleted_at))).catch(() => {
        // Noted again on the channel's next reading.
        for (const channel of unmapped) this.cache.get(deviceId)?.info.unmapped.delete(channel)
      })
    }
  }

  stop() {
    if (this.timer) clearInterval(this.timer)
  }

  private async load(deviceId: string): Promise<DeviceInfo | undefined> {
    const [row] = await this.db.select().from(sensorDevices).where(and(eq(sensorDevices.id, deviceId), isNull(sensorDevices.deleted_at)))
    if (!row) return undefined
    const channels = new Map<string, ChannelMapping>()
    for (const c of row.channels) channels.set(c.key, { metric: c.metric, environmentId: c.environment_id })
    return { id: row.id, accountId: row.account_id, channels, unmapped: new Set(row.unmapped_channels), configuration: row.channels }
  }
}
