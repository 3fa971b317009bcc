import type { LogLevel } from './config.ts'

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
}

const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }

/** One JSON line per event on stderr, so stdout stays for what a person runs the service to see. */
export function createLogger(level: LogLevel): Logger {
  const min = order[level]
  const write = (lvl: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    if (order[lvl] < min) return
    process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level: lvl, message, ...fields }) + '\n')
  }
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }
}
