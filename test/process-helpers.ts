// Starting the real service (src/main.ts) or the CLI as child processes, on loopback, bounded in time. The
// spawning itself is the bench's (bench/lib/processes.ts): one way to start a server and wait for it.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runProcess, startServer as startChild, type Child } from '../bench/lib/processes.ts'

export const tempDataDir = () => mkdtempSync(join(tmpdir(), 'hrs-test-'))

/** The committed migrations up to and including `lastIdx`, in a folder of their own: a test of a migration starts there. */
export function migrationsUpTo(lastIdx: number): string {
  const committed = join(import.meta.dir, '..', 'db', 'migrations')
  const folder = join(tempDataDir(), 'migrations')
  mkdirSync(join(folder, 'meta'), { recursive: true })
  const journal = JSON.parse(readFileSync(join(committed, 'meta', '_journal.json'), 'utf8'))
  journal.entries = journal.entries.filter((e: { idx: number }) => e.idx <= lastIdx)
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify(journal))
  for (const entry of journal.entries) copyFileSync(join(committed, `${entry.tag}.sql`), join(folder, `${entry.tag}.sql`))
  return folder
}

/**
 * How long a child may take to start. The first embedded start (migrations and demo data on PGlite) took more than
 * 20 s once on a busy 2-core machine; the wait ends as soon as the child says it is up, so a generous bound costs
 * nothing when all is well.
 */
const START_TIMEOUT_MS = 60_000

/** Starts `bun src/main.ts` with `env` and waits until it prints that it listens. */
export function startServer(env: Record<string, string | undefined>, timeoutMs = START_TIMEOUT_MS): Promise<Child> {
  return startChild('server', [process.execPath, 'src/main.ts'], env, timeoutMs)
}

/** Starts `bun src/writer.ts` (an ingest-log writer alone) with `env` and waits until it runs. */
export function startWriter(env: Record<string, string | undefined>, timeoutMs = START_TIMEOUT_MS): Promise<Child> {
  return startChild('writer', [process.execPath, 'src/writer.ts'], env, timeoutMs, 'ingest log writer running')
}

/** Runs the operator CLI and returns its exit code and output. */
export function runCli(args: string[], env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
  return runProcess([process.execPath, 'src/cli.ts', ...args], { LOG_LEVEL: 'warn', ...env }, START_TIMEOUT_MS)
}
