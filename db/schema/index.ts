// The whole schema, for drizzle and drizzle-kit.
export * from './foundation.ts'
export * from './records.ts'
export * from './sensors.ts'
export * from './webhooks.ts'
export * from './alerts.ts'
