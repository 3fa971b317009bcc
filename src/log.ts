import type { LogLevel } from './config.ts'

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
  /** Whether lines of this level are written (callers skip building fields that would be dropped). */
  enabled(level: LogLevel): boolean
  /** Writes out what is buffered (at shutdown). */
  flush(): Promise<void>
}

const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }
/** Info and debug lines wait at most this long in the buffer. */
const FLUSH_MS = 100

/**
 * One JSON line per event on stderr, so stdout stays for what a person runs the service to see. At info there is
 * a line per request: those are buffered and written together (a write per line cost the ingest path a system
 * call per request); a warning or an error flushes the buffer at once, so nothing before it is held back.
 */
export function createLogger(level: LogLevel, sink: (text: string) => void = (text) => process.stderr.write(text)): Logger {
  const min = order[level]
  let buffered = ''
  let timer: ReturnType<typeof setTimeout> | undefined
  const flushNow = () => {
    if (timer) { clearTimeout(timer); timer = undefined }
    if (!buffered) return
    const text = buffered
    buffered = ''
    sink(text)
  }
  const write = (lvl: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    if (order[lvl] < min) return
    buffered += JSON.stringify({ time: new Date().toISOString(), level: lvl, message, ...fields }) + '\n'
    if (order[lvl] >= order.warn) flushNow()
    else if (!timer) { timer = setTimeout(flushNow, FLUSH_MS); timer.unref?.() }
  }
  return {
    debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error'),
    enabled: (lvl) => order[lvl] >= min,
    async flush() { flushNow() },
  }
}
