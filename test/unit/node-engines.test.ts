// The Node.js versions the README promises are the ones every installed package accepts (issue 32: npm warned
// `EBADENGINE @nats-io/nuid requires node >= 22` on the Node 20 the README named). Checked against the lock file,
// for the oldest version of each promised line.
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '../..')
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')

/** The oldest release of each line the README names ("Node.js 20.19+ or 22.12+"). */
const promised = [...(/Only Node\.js ([0-9.+ or]+) is needed/.exec(readme)?.[1] ?? '').matchAll(/(\d+)\.(\d+)\+/g)].map((m) => `${m[1]}.${m[2]}.0`)

test('the README names the versions package.json accepts', () => {
  expect(promised).toEqual(['20.19.0', '22.12.0'])
  for (const version of promised) expect({ version, ok: Bun.semver.satisfies(version, pkg.engines.node) }).toEqual({ version, ok: true })
  expect(Bun.semver.satisfies('20.18.0', pkg.engines.node)).toBe(false)
})

test('every package in the lock file accepts each promised version (no EBADENGINE on install)', () => {
  const refusals: string[] = []
  for (const [name, entry] of Object.entries<{ engines?: { node?: string } | string[] }>(lock.packages)) {
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node
    if (!name || !range) continue
    for (const version of promised) if (!Bun.semver.satisfies(version, range)) refusals.push(`${name} (${range}) refuses ${version}`)
  }
  expect(refusals).toEqual([])
})
