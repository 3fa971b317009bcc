// The SDK README's first flow, exactly as written (issue 32: it used made-up `ani_…` ids and got a 422): the code
// block is taken from clients/typescript/README.md, pointed at a real server on loopback, and run as a program;
// and the same program type-checks without @types/node (a browser or Deno build).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createTestEnv, type TestEnv } from '../helpers.ts'

/** tsc over the SDK takes ~10 s alone and several times that on a loaded 2-core machine. */
const CHILD_MS = 110_000
const ROOT = resolve(import.meta.dir, '../..')
const SDK = join(ROOT, 'clients/typescript/src/index.ts')

let env: TestEnv
beforeAll(async () => { env = await createTestEnv({ testRoutes: false }) })
afterAll(async () => { await env.close() })

/** The first ```ts block under "## The first flow", with the package import pointed at the SDK's source. */
function firstFlow(baseUrl: string): string {
  const readme = readFileSync(join(ROOT, 'clients/typescript/README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## The first flow'))
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1]
  if (!block) throw new Error('no ts block under "## The first flow"')
  expect(block).toContain("from '@husbandry/sdk'")
  expect(block).toContain("'https://records.example.com'")
  return block.replace("from '@husbandry/sdk'", `from ${JSON.stringify(SDK)}`).replace("'https://records.example.com'", JSON.stringify(baseUrl))
}

const run = async (argv: string[], extraEnv: Record<string, string> = {}) => {
  const proc = Bun.spawn(argv, { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...extraEnv }, stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), CHILD_MS)
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

test('runs as written against a real server: who am I, every animal, a weighing of the first one', async () => {
  // An animal in the key's own account, made through the API as a keeper would.
  const writer = await env.account({ scopes: ['animals:read', 'animals:write', 'activities:read', 'activities:write'] })
  const animal = await (await env.request('POST', '/api/v1/animals', { token: writer.token, body: { name: 'Monty', species_id: 'python-regius' } })).json()
  const dir = mkdtempSync(join(tmpdir(), 'hrs-sdk-readme-'))
  const program = join(dir, 'first-flow.ts')
  writeFileSync(program, firstFlow(env.baseUrl))
  const outcome = await run([process.execPath, program], { HUSBANDRY_KEY: writer.token })
  expect({ code: outcome.code, stderr: outcome.stderr }).toEqual({ code: 0, stderr: '' })
  expect(outcome.stdout).toContain(`${animal.id} Monty`)
  const weighing = /^(act_[0-9a-hjkmnp-tv-z]{26}) weight$/m.exec(outcome.stdout)?.[1]
  expect(weighing).toBeDefined()
  const stored = await (await env.request('GET', `/api/v1/activities?animal_id=${animal.id}`, { token: writer.token })).json()
  expect(stored.data.map((a: { id: string; type: string; details: unknown }) => [a.id, a.type, a.details])).toEqual([[weighing, 'weight', { grams: 1520 }]])
})

test('type-checks without @types/node (no "types", lib ES2022 + DOM, skipLibCheck off)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hrs-sdk-types-'))
  // The program reads its key from `process.env`, which is Node's or Bun's; a browser build has its own.
  writeFileSync(join(dir, 'first-flow.ts'), `declare const process: { env: Record<string, string | undefined> }\n${firstFlow('https://records.example.com')}`)
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', lib: ['ES2022', 'DOM'], types: [], strict: true, noEmit: true, allowImportingTsExtensions: true, skipLibCheck: false },
    files: ['first-flow.ts'],
  }))
  const outcome = await run([process.execPath, join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir])
  expect({ code: outcome.code, output: outcome.stdout + outcome.stderr }).toEqual({ code: 0, output: '' })
}, CHILD_MS + 10_000)
