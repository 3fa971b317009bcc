/**
 * A database read, tried again while it fails, until `patienceMs` have passed; then its last error. For checks a
 * device can wait for (an MQTT CONNECT): while Postgres is merely slow (a saturated pool, whose waiting queries
 * db/client.ts cancels after a second) a device is kept waiting, not refused; only a database that answers
 * nothing for the whole patience refuses it (CONNACK 3, server unavailable). HTTP requests do not use it: they
 * answer 503 with Retry-After at once, and the client decides.
 */
export async function patiently<T>(attempt: () => T | Promise<T>, patienceMs: number): Promise<T> {
  const deadline = performance.now() + patienceMs
  for (let tries = 0; ; tries++) {
    try {
      return await attempt()
    } catch (error) {
      // Backing off (50 ms doubling to a second) so a thousand waiting devices do not hammer a database coming back.
      const pause = Math.min(50 * 2 ** tries, 1_000) * (0.5 + Math.random() / 2)
      if (performance.now() + pause >= deadline) throw error
      await Bun.sleep(pause)
    }
  }
}
