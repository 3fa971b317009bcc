// What /proc says about processes and the machine: CPU time, peak RSS, busy time. Plain Node APIs only, so
// that baselines bundled for Node can use it too.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'

const TICKS_PER_SECOND = 100 // USER_HZ on Linux

/** CPU time (user + system, every thread) a process has used, in ms; NaN once it is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND
  } catch {
    return NaN
  }
}

/**
 * CPU time a process's threads have used, in µs, from the scheduler's own count (/proc/<pid>/task/<tid>/schedstat,
 * nanoseconds): cpuMs counts 10 ms ticks, too coarse for a window of a few hundred ms. Threads that already ended
 * are not counted; NaN once the process is gone.
 */
export function cpuMicros(pid: number): number {
  try {
    let ns = 0
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try { ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]) } catch { /* ended meanwhile */ }
    }
    return ns / 1000
  } catch {
    return NaN
  }
}

/** Peak resident set size (VmHWM) of a live process, in MiB. */
export function peakRssMiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1])
    return kb / 1024
  } catch {
    return NaN
  }
}

/** Resets a process's VmHWM to its current RSS (Linux ≥ 4.0; needs to own the process). */
export function resetPeakRss(pid: number): void {
  try { writeFileSync(`/proc/${pid}/clear_refs`, '5') } catch { /* not permitted: the peak then covers the whole life */ }
}

/** Busy and total jiffies of the whole machine (every core), to tell how loaded it was over a window. */
export function machineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = line.reduce((a, b) => a + b, 0)
  const idle = (line[3] ?? 0) + (line[4] ?? 0)
  return { busy: total - idle, total }
}

/** Everything the machine runs besides the bench: a busy machine makes numbers noisy. */
export function loadAverage(): number {
  return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0])
}

/** Samples the machine and some processes now; the returned function gives, since then, the cores each used. */
export function cpuWindow(pids: Record<string, number[]>): () => { seconds: number; machineCores: number; cores: Record<string, number> } {
  const t0 = performance.now()
  const m0 = machineTicks()
  const c0 = Object.fromEntries(Object.entries(pids).map(([name, list]) => [name, list.map((pid) => cpuMs(pid))]))
  return () => {
    const seconds = (performance.now() - t0) / 1000
    const m1 = machineTicks()
    const cores = Object.fromEntries(Object.entries(pids).map(([name, list]) => [name, list.reduce((sum, pid, i) => sum + ((cpuMs(pid) - c0[name]![i]!) || 0), 0) / 1000 / seconds]))
    return { seconds, machineCores: ((m1.busy - m0.busy) / (m1.total - m0.total)) * cpus().length, cores }
  }
}
