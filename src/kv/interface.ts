// What the service needs from Redis; src/kv/memory.ts is the in-process twin for the embedded mode.
export interface SharedStore {
  readonly kind: 'redis' | 'memory'
  /**
   * Counts one hit in a fixed window that starts at the window's first hit, atomically.
   * Returns the count so far and the milliseconds until the window resets.
   */
  hit(key: string, windowMs: number): Promise<{ count: number; resetMs: number }>
  publish(channel: string, message: string): Promise<void>
  /** Calls `handler` for every message on `channel`, from this or any other process sharing the store. */
  subscribe(channel: string, handler: (message: string) => void): Promise<void>
  ping(): Promise<void>
  close(): Promise<void>
}
