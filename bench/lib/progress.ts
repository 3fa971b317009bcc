// What the bench says while it runs. On a terminal: one status line rewritten in place (elapsed time, scenario
// i/n, its latest ctx.log message), with only lasting lines (the command, each scenario's outcome) scrolling
// above it. Elsewhere (CI, a pipe, a file): every message as a line of its own, as a log should be, plus a
// heartbeat when a step has said nothing for a while, so a slow step does not look like a hung job.

const HEARTBEAT_MS = 10_000
const CLEAR_LINE = '\r\x1b[K'

export interface Progress {
  /** A scenario begins (`index` counts from 1). */
  scenario(index: number, name: string): void
  /** What the current scenario is doing (its ctx.log): the status line on a terminal, a log line otherwise. */
  status(message: string): void
  /** A line to keep in the scrollback either way. */
  print(message: string): void
  /** Removes the status line and its timer; call before printing the results. */
  stop(): void
}

interface Output { isTTY?: boolean; columns?: number; write(text: string): unknown }

export function progress(total: number, started: number, out: Output = process.stdout): Progress {
  const interactive = out.isTTY === true
  const elapsed = () => `[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s]`
  let current = ''
  let latest = ''
  let latestAt = Date.now()
  let lastOutputAt = Date.now()
  let statusShown = false

  const statusText = () => {
    const text = `${elapsed()} ${current}${latest ? ` · ${latest}` : ''}`
    // A line longer than the terminal wraps, and "\r" then returns only to its last row: keep it on one row.
    const width = Math.max(20, (out.columns || 80) - 1) // 0 when the terminal does not say
    return text.length > width ? `${text.slice(0, width - 1)}…` : text
  }
  const redraw = () => {
    if (!interactive || !current) return
    out.write(CLEAR_LINE + statusText())
    statusShown = true
  }
  const line = (message: string) => {
    out.write(`${statusShown ? CLEAR_LINE : ''}${elapsed()} ${message}\n`)
    statusShown = false
    lastOutputAt = Date.now()
  }

  const timer = setInterval(() => {
    if (interactive) redraw() // the elapsed seconds tick even while the scenario is quiet
    else if (current && Date.now() - lastOutputAt >= HEARTBEAT_MS) {
      const since = ((Date.now() - latestAt) / 1000).toFixed(0)
      line(`… still running ${current}${latest ? ` (last: ${latest}, ${since} s ago)` : ''}`)
    }
  }, 1000)
  timer.unref()

  return {
    scenario(index, name) {
      current = `${index}/${total} ${name}`
      latest = ''
      latestAt = Date.now()
      if (interactive) redraw()
      else line(`scenario ${current}`)
    },
    status(message) {
      // Scenarios prefix their messages with their own name, which the status line already shows.
      const name = current.slice(current.indexOf(' ') + 1)
      latest = message.startsWith(`${name}: `) ? message.slice(name.length + 2) : message
      latestAt = Date.now()
      if (interactive) redraw()
      else line(message)
    },
    print(message) {
      line(message)
      redraw()
    },
    stop() {
      clearInterval(timer)
      if (statusShown) out.write(CLEAR_LINE)
      statusShown = false
      current = ''
    },
  }
}
