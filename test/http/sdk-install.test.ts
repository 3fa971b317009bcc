// The SDK installs as its README says (issue 61): `npm install --install-links <checkout>/clients/typescript` into an
// empty folder gives a package that Node 20 and Bun import, and the README's first flow, taken from the README,
// typed code stripped to JavaScript for Node, runs against a real server on loopback. The plain
// `npm install <checkout>/clients/typescript` (npm links the folder) is tried too. Both need no build on install:
// dist/ is committed, and the first test fails while it differs from what the package's build makes of src/.
//
// npm runs with --prefer-offline --no-audit --no-fund: the package is a local folder and its one dependency
// (standardwebhooks) comes from npm's cache when there, so an install takes about a second and asks the registry at
// most for that dependency.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { buildPackage, PACKAGE_DIR } from '../../clients/typescript/scripts/generate.ts'
import { createTestEnv, type TestEnv } from '../helpers.ts'

const ROOT = resolve(import.meta.dir, '../..')
const CHILD_MS = 50_000
const npm = Bun.which('npm')
const node = Bun.which('node')

let env: TestEnv
const folders: string[] = []
const emptyFolder = (label: string) => {
  const dir = mkdtempSync(join(tmpdir(), `hrs-sdk-${label}-`))
  folders.push(dir)
  return dir
}
beforeAll(async () => { env = await createTestEnv({ testRoutes: false }) })
afterAll(async () => {
  await env.close()
  for (const dir of folders) rmSync(dir, { recursive: true, force: true })
})

async function run(argv: string[], cwd: string, extraEnv: Record<string, string> = {}) {
  // Only what npm and the runtimes need from the shell: not DATABASE_URL and the like.
  const proc = Bun.spawn(argv, { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME, npm_config_update_notifier: 'false', ...extraEnv }, stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), CHILD_MS)
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/** The README's install command (the ```sh block under "## Installing"), with <checkout> this repository. */
function readmeInstallCommand(): string[] {
  const readme = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8')
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Installing')))?.[1]?.trim()
  expect(block).toBe('npm install --install-links <checkout>/clients/typescript')
  return block!.replace('<checkout>', ROOT).split(' ')
}

/** The README's first flow (the first ```ts block under "## The first flow"), pointed at the server under test. */
function firstFlow(): string {
  const readme = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8')
  const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## The first flow')))?.[1]
  if (!block) throw new Error('no ts block under "## The first flow"')
  expect(block).toContain("from '@husbandry/sdk'")
  expect(block).toContain("'https://records.example.com'")
  return block.replace("'https://records.example.com'", JSON.stringify(env.baseUrl))
}

/** Runs the first flow as `program` in `dir` for a new account with one animal; checks what it printed and stored. */
async function firstFlowRuns(dir: string, runtime: string[], program: string) {
  const keeper = await env.account({ scopes: ['animals:read', 'animals:write', 'activities:read', 'activities:write'] })
  const created = await env.request('POST', '/api/v1/animals', { token: keeper.token, body: { name: 'Monty', species_id: 'python-regius' } })
  expect(created.status).toBe(201)
  const animal = await created.json()
  const outcome = await run([...runtime, program], dir, { HUSBANDRY_KEY: keeper.token })
  expect({ code: outcome.code, stderr: outcome.stderr }).toEqual({ code: 0, stderr: '' })
  expect(outcome.stdout).toContain(`${animal.id} Monty`)
  const weighing = /^(act_[0-9a-hjkmnp-tv-z]{26}) weight$/m.exec(outcome.stdout)?.[1]
  expect(weighing).toBeDefined()
  const stored = await (await env.request('GET', `/api/v1/activities?animal_id=${animal.id}`, { token: keeper.token })).json()
  expect(stored.data.map((a: { id: string; type: string; details: unknown }) => [a.id, a.type, a.details])).toEqual([[weighing, 'weight', { grams: 1520 }]])
}

/** The first flow written into `dir` twice: as TypeScript for Bun, and stripped to JavaScript for Node. */
function writeFirstFlow(dir: string): { ts: string; mjs: string } {
  const source = firstFlow()
  const ts = join(dir, 'first-flow.ts')
  const mjs = join(dir, 'first-flow.mjs')
  writeFileSync(ts, source)
  writeFileSync(mjs, new Bun.Transpiler({ loader: 'ts' }).transformSync(source))
  return { ts, mjs }
}

describe('@husbandry/sdk installed from a checkout', () => {
  test("the committed dist/ is what the package's build makes of src/", () => {
    const built = emptyFolder('build')
    buildPackage(built)
    const committed = join(PACKAGE_DIR, 'dist')
    const files = readdirSync(built).sort()
    expect(files).toContain('index.js')
    expect(readdirSync(committed).sort()).toEqual(files)
    const stale = files.filter((file) => readFileSync(join(built, file), 'utf8') !== readFileSync(join(committed, file), 'utf8'))
    // Stale: run `npm run build` in clients/typescript (or `npm run client:generate`) and commit dist/.
    expect(stale).toEqual([])
  })

  test.skipIf(!npm || !node)("the README's way, into an empty folder: the first flow runs on Node and on Bun", async () => {
    const dir = emptyFolder('install')
    const install = await run([...readmeInstallCommand(), '--prefer-offline', '--no-audit', '--no-fund'], dir)
    expect({ code: install.code, stderr: install.stderr.replace(/^npm warn .*\n/gm, '') }).toEqual({ code: 0, stderr: '' })
    // A copy with its dependency beside it, as from a registry; not a link into the checkout.
    expect(lstatSync(join(dir, 'node_modules/@husbandry/sdk')).isSymbolicLink()).toBe(false)
    expect(JSON.parse(readFileSync(join(dir, 'node_modules/standardwebhooks/package.json'), 'utf8')).name).toBe('standardwebhooks')
    const { ts, mjs } = writeFirstFlow(dir)
    await firstFlowRuns(dir, [node!], mjs)
    await firstFlowRuns(dir, [process.execPath], ts)
  })

  test.skipIf(!npm || !node)('plain `npm install <checkout>/clients/typescript` (a link into the checkout) runs it on Node', async () => {
    const dir = emptyFolder('link')
    const install = await run([npm!, 'install', join(ROOT, 'clients/typescript'), '--prefer-offline', '--no-audit', '--no-fund'], dir)
    expect({ code: install.code, stderr: install.stderr.replace(/^npm warn .*\n/gm, '') }).toEqual({ code: 0, stderr: '' })
    expect(lstatSync(join(dir, 'node_modules/@husbandry/sdk')).isSymbolicLink()).toBe(true)
    await firstFlowRuns(dir, [node!], writeFirstFlow(dir).mjs)
  })
})
