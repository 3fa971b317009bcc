// Operator CLI: `bun run cli <command>` (or `npm run cli -- <command>`). Works on the configured store; with the
// embedded database, stop the server first (PGlite belongs to one process at a time).
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { createAccount, getAccount, isPlan, listAccounts, updateAccount } from './accounts.ts'
import { createKey, findKeyById, listKeys, maskedToken, revokeKeyEverywhere } from './auth/keys.ts'
import { parseScopes } from './auth/scopes.ts'
import { loadConfig } from './config.ts'
import { openCore, type Core } from './deps.ts'
import { fillDemoAccount } from './tools/demo-data.ts'
import { IMPORT_AREA_NAMES, ImportError, accountHasAnimals, formatOf, importArea, importRecords, parseImportFile } from './tools/importer.ts'

/** How the person ran us, for the usage lines: `npm run cli --` through npm (its user agent says so), else Bun's. */
const RUN = process.env.npm_config_user_agent?.startsWith('npm/') ? 'npm run cli --' : 'bun run cli'

const USAGE = `usage: ${RUN} <command> [options]

  accounts create --name NAME [--plan free|keeper|breeder|professional] [--email E] [--allowlisted]
  accounts list
  accounts set-plan ACCOUNT_ID PLAN
  accounts allowlist ACCOUNT_ID on|off        live-test allowlist (access while the platform is limited)
  keys create ACCOUNT_ID --name NAME --scopes "animals:read,activities:write" | all [--expires-in DAYS]
  keys list ACCOUNT_ID
  keys revoke KEY_ID
  status get
  status set operational|limited
  import ACCOUNT_ID AREA FILE [--format json|csv]
                                              bulk-load records (no webhook events); AREA is one of
                                              ${IMPORT_AREA_NAMES.join(', ')}
  demo ACCOUNT_ID [--animals N] [--seed N]    fill an account without animals with a generated collection
  migrate
  help                                        this list`

class UsageError extends Error {}

/** The usage line of the command `words` starts with (`keys list`, `import`…), or undefined for no known command. */
function usageLineOf(words: string[]): string | undefined {
  const lines = USAGE.split('\n').slice(1).map((line) => line.trim()).filter((line) => /^[a-z]/.test(line))
  for (const take of [2, 1]) {
    const prefix = words.slice(0, take).join(' ')
    const line = words.length >= take && lines.find((l) => l === prefix || l.startsWith(`${prefix} `))
    if (line) return line.replace(/\s{2,}.*$/, '')
  }
  return undefined
}

/** A usage error says what is wrong and how to call that one command (the whole list is `help`). */
function usageMessage(error: UsageError, words: string[]): string {
  const line = usageLineOf(words)
  return line ? `${error.message}\nusage: ${RUN} ${line}` : `${error.message}\nrun "${RUN} help" to list the commands`
}

function need(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`missing ${what}`)
  return value
}

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({
      args: argv, allowPositionals: true,
      options: {
        name: { type: 'string' }, plan: { type: 'string' }, email: { type: 'string' }, allowlisted: { type: 'boolean' },
        scopes: { type: 'string' }, 'expires-in': { type: 'string' },
        format: { type: 'string' }, animals: { type: 'string' }, seed: { type: 'string' },
      },
    })
  } catch (error) {
    // An unknown option or a missing option value: the user's mistake, said in one line.
    throw new UsageError((error as Error).message.split('. ')[0]!)
  }
}

async function run(deps: Core, argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(argv)
  const [group, command, ...rest] = positionals
  const db = deps.database.db
  if (group === 'import') return importFile(deps, need(command, 'ACCOUNT_ID'), need(rest[0], 'AREA'), need(rest[1], 'FILE'), values.format)
  if (group === 'demo') return demo(deps, need(command, 'ACCOUNT_ID'), values.animals, values.seed)
  switch (`${group} ${command}`) {
    case 'accounts create': {
      const plan = values.plan ?? 'breeder'
      if (!isPlan(plan)) throw new UsageError(`unknown plan ${plan}`)
      const account = await createAccount(db, { name: need(values.name, '--name'), email: values.email, plan, liveTestAllowlisted: values.allowlisted ?? false })
      console.log(`account ${account.id} (${account.plan}${account.liveTestAllowlisted ? ', allowlisted' : ''})`)
      return
    }
    case 'accounts list':
      for (const a of await listAccounts(db)) console.log(`${a.id}\t${a.plan}\t${a.liveTestAllowlisted ? 'allowlisted' : '-'}\t${a.name}`)
      return
    case 'accounts set-plan': {
      const plan = need(rest[1], 'PLAN')
      if (!isPlan(plan)) throw new UsageError(`unknown plan ${plan}`)
      const account = await updateAccount(db, need(rest[0], 'ACCOUNT_ID'), { plan })
      if (!account) throw new UsageError('no such account')
      await deps.authenticator.invalidateAccount(account.id)
      console.log(`account ${account.id} is now on ${plan}`)
      return
    }
    case 'accounts allowlist': {
      const on = need(rest[1], 'on|off')
      if (on !== 'on' && on !== 'off') throw new UsageError('expected on or off')
      const account = await updateAccount(db, need(rest[0], 'ACCOUNT_ID'), { liveTestAllowlisted: on === 'on' })
      if (!account) throw new UsageError('no such account')
      await deps.authenticator.invalidateAccount(account.id)
      console.log(`account ${account.id} allowlist ${on}`)
      return
    }
    case 'keys create': {
      const accountId = need(rest[0], 'ACCOUNT_ID')
      let scopes
      try { scopes = parseScopes(need(values.scopes, '--scopes')) } catch (e) { throw new UsageError((e as Error).message) }
      const days = values['expires-in'] ? Number(values['expires-in']) : undefined
      if (days !== undefined && !(days > 0)) throw new UsageError('--expires-in takes a positive number of days')
      const { key, token } = await createKey(db, {
        accountId, kind: 'personal', name: need(values.name, '--name'), scopes,
        expiresAt: days ? new Date(Date.now() + days * 86_400_000) : null,
      })
      console.log(`key ${key.id} scopes: ${key.scopes.join(' ')}${key.expiresAt ? ` expires ${key.expiresAt.toISOString()}` : ''}`)
      console.log(`token (shown once): ${token}`)
      return
    }
    case 'keys list': {
      const keys = await listKeys(db, need(rest[0], 'ACCOUNT_ID'))
      console.log(['ID', 'KIND', 'TOKEN', 'STATE', 'LAST USED', 'NAME', 'SCOPES'].join('\t'))
      for (const k of keys) {
        const state = k.revokedAt ? 'revoked' : k.expiresAt && k.expiresAt < new Date() ? 'expired' : 'active'
        console.log(`${k.id}\t${k.kind}\t${maskedToken(k)}\t${state}\t${k.lastUsedAt?.toISOString() ?? 'never'}\t${k.name}\t${k.scopes.join(' ')}`)
      }
      return
    }
    case 'keys revoke': {
      const id = need(rest[0], 'KEY_ID')
      const key = await revokeKeyEverywhere(db, deps.authenticator, id)
      if (!key) throw new UsageError((await findKeyById(db, id)) ? 'key already revoked' : 'no such key')
      console.log(`key ${key.id} revoked`)
      return
    }
    case 'status get':
      await deps.platform.refresh()
      console.log(deps.platform.current())
      return
    case 'status set': {
      const status = need(rest[0], 'operational|limited')
      if (status !== 'operational' && status !== 'limited') throw new UsageError('expected operational or limited')
      await deps.platform.set(status)
      console.log(`status ${status}`)
      return
    }
    case 'help undefined':
      console.log(USAGE)
      return
    case 'migrate undefined':
      console.log(`migrations applied (${deps.database.kind})`)
      return
    default:
      throw new UsageError(`unknown command: ${positionals.join(' ') || '(none)'}`)
  }
}

async function importFile(deps: Core, accountId: string, area: string, file: string, format: string | undefined): Promise<void> {
  if (!(await getAccount(deps.database.db, accountId))) throw new UsageError('no such account')
  if (!importArea(area)) throw new UsageError(`unknown area ${area} (one of: ${IMPORT_AREA_NAMES.join(', ')})`)
  const kind = format ?? formatOf(file)
  if (kind !== 'json' && kind !== 'csv') throw new UsageError(format ? `unknown format ${format} (json or csv)` : 'cannot tell the format from the file name; add --format json|csv')
  let text: string
  try { text = readFileSync(file, 'utf8') } catch (e) { throw new UsageError(`cannot read ${file}: ${(e as Error).message}`) }
  const { imported } = await importRecords(deps, accountId, area, parseImportFile(text, kind, area))
  console.log(`imported ${imported} ${area}`)
}

async function demo(deps: Core, accountId: string, animals: string | undefined, seed: string | undefined): Promise<void> {
  if (!(await getAccount(deps.database.db, accountId))) throw new UsageError('no such account')
  const count = animals === undefined ? 300 : Number(animals)
  if (!Number.isInteger(count) || count < 1 || count > 20_000) throw new UsageError('--animals takes a whole number from 1 to 20000')
  const seedValue = seed === undefined ? 1 : Number(seed)
  if (!Number.isInteger(seedValue)) throw new UsageError('--seed takes a whole number')
  if (await accountHasAnimals(deps.database.db, accountId)) throw new UsageError(`account ${accountId} already has animals; demo fills an account without any`)
  const started = performance.now()
  const counts = await fillDemoAccount(deps, accountId, { animals: count, seed: seedValue })
  console.log(`demo data for ${accountId} (seed ${seedValue}) in ${((performance.now() - started) / 1000).toFixed(1)} s:`)
  for (const [area, n] of Object.entries(counts)) console.log(`  ${area.padEnd(17)}${n}`)
}

// Operator commands open the core only: no readings store, no ingest, no alert rules or their timers.
const deps = await openCore(loadConfig(process.env, { ingestLog: undefined })).catch((error: Error) => {
  console.error(`cannot open the store: ${error.message}`)
  process.exit(1)
})
let code = 0
try {
  await run(deps, process.argv.slice(2))
} catch (error) {
  code = error instanceof UsageError ? 2 : 1
  if (error instanceof ImportError) console.error([`import failed: ${error.message}`, ...error.errors].join('\n'))
  else console.error(error instanceof UsageError ? usageMessage(error, process.argv.slice(2).filter((word) => !word.startsWith('-'))) : error)
} finally {
  await deps.close()
}
process.exit(code)
