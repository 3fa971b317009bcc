import type { Plan } from '../db/schema/index.ts'
import type { Config } from './config.ts'

/** Plans at or above `breeder` reach the API (CONTRACT §2); the others only while limited and allowlisted. */
const ELIGIBLE: ReadonlySet<Plan> = new Set<Plan>(['breeder', 'professional'])

export type PlatformStatus = 'operational' | 'limited'

export function planHasAccess(plan: Plan, allowlisted: boolean, status: PlatformStatus): boolean {
  return ELIGIBLE.has(plan) || (status === 'limited' && allowlisted)
}

/** Requests per minute for a key: a plan may multiply the configured base (professional integrators get double). */
const MULTIPLIER: Record<Plan, number> = { free: 1, keeper: 1, breeder: 1, professional: 2 }

export function rateLimitFor(config: Config, plan: Plan, kind: 'personal' | 'device'): number {
  const base = kind === 'device' ? config.deviceRateLimitPerMinute : config.rateLimitPerMinute
  return base * MULTIPLIER[plan]
}
