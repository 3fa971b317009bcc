// The operator CLI as a person meets it: a mistake prints what is wrong and the one usage line of that command;
// `keys list` has a header row. Runs the real CLI on an embedded store of its own.
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { runCli, tempDataDir } from '../process-helpers.ts'

const cliEnv = { DATA_DIR: join(tempDataDir(), 'data') }

describe('operator CLI', () => {
  test('a usage error prints the problem and one usage line, for that command', async () => {
    const cases: [string[], string][] = [
      [['keys', 'list'], 'missing ACCOUNT_ID\nusage: bun run cli keys list ACCOUNT_ID\n'],
      [['accounts', 'set-plan', 'acct_x'], 'missing PLAN\nusage: bun run cli accounts set-plan ACCOUNT_ID PLAN\n'],
      [['keys', 'list', '--bogus'], "Unknown option '--bogus'\nusage: bun run cli keys list ACCOUNT_ID\n"],
      [['demo'], 'missing ACCOUNT_ID\nusage: bun run cli demo ACCOUNT_ID [--animals N] [--seed N]\n'],
      [['frobnicate'], 'unknown command: frobnicate\nrun "bun run cli help" to list the commands\n'],
    ]
    for (const [args, stderr] of cases) {
      const run = await runCli(args, cliEnv)
      expect({ args, code: run.code, stderr: run.stderr, stdout: run.stdout }).toEqual({ args, code: 2, stderr, stdout: '' })
    }
    const help = await runCli(['help'], cliEnv)
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('keys create ACCOUNT_ID')
    // Run through npm (its user agent in the environment), the lines say how to run it that way.
    const throughNpm = await runCli(['keys', 'list'], { ...cliEnv, npm_config_user_agent: 'npm/11.19.1 node/v20.20.2 linux x64' })
    expect(throughNpm.stderr).toBe('missing ACCOUNT_ID\nusage: npm run cli -- keys list ACCOUNT_ID\n')
  }, 60_000)

  test('keys list starts with a header row naming its columns', async () => {
    const created = await runCli(['accounts', 'create', '--name', 'Header'], cliEnv)
    const accountId = /account (acct_\w+)/.exec(created.stdout)![1]!
    expect((await runCli(['keys', 'create', accountId, '--name', 'laptop', '--scopes', 'animals:read'], cliEnv)).code).toBe(0)
    const list = await runCli(['keys', 'list', accountId], cliEnv)
    expect(list.code).toBe(0)
    const [header, row, ...rest] = list.stdout.trimEnd().split('\n')
    expect(header!.split('\t')).toEqual(['ID', 'KIND', 'TOKEN', 'STATE', 'LAST USED', 'NAME', 'SCOPES'])
    expect(row!.split('\t')).toEqual([expect.stringMatching(/^key_/), 'personal', expect.stringContaining('hrs_pat_'), 'active', 'never', 'laptop', 'animals:read'])
    expect(rest).toEqual([])
  }, 60_000)
})
