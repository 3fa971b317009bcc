// The structure drawn from the imports has no circle: every relative import (type-only ones and re-exports
// included) between the .ts files of src/, ingest/, db/, bench/ and clients/ forms a graph that must be acyclic.
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '../..')
const FOLDERS = ['src', 'ingest', 'db', 'bench', 'clients']

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return tsFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

// `import … from '…'`, `import type … from '…'`, `export … from '…'`, `import '…'` and `import('…')`.
const SPECIFIER = /(?:^|[\s;}])(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g

/** Relative imports of one file, resolved to absolute paths of files in the graph. */
export function importsOf(file: string, source: string, known: ReadonlySet<string>): string[] {
  const found: string[] = []
  for (const match of source.matchAll(SPECIFIER)) {
    const specifier = match[1] ?? match[2]!
    if (!specifier.startsWith('.')) continue
    const target = resolve(dirname(file), specifier)
    const candidates = [target, `${target}.ts`, join(target, 'index.ts')]
    const hit = candidates.find((c) => known.has(c))
    if (hit) found.push(hit)
  }
  return found
}

/** The first circle found by depth-first search, as a list of files ending where it started; undefined if none. */
export function findCircle(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (node: string): string[] | undefined => {
    state.set(node, 'open')
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') return [...stack.slice(stack.indexOf(next)), next]
      if (!state.has(next)) {
        const circle = visit(next)
        if (circle) return circle
      }
    }
    stack.pop()
    state.set(node, 'done')
    return undefined
  }
  for (const node of [...graph.keys()].sort()) {
    if (state.has(node)) continue
    const circle = visit(node)
    if (circle) return circle
  }
  return undefined
}

function projectGraph(): Map<string, string[]> {
  const files = FOLDERS.flatMap((folder) => tsFiles(join(ROOT, folder)))
  const known = new Set(files)
  return new Map(files.map((file) => [file, importsOf(file, readFileSync(file, 'utf8'), known)]))
}

describe('import graph of src/, ingest/, db/, bench/, clients/', () => {
  test('the reader sees every kind of relative import', () => {
    const known = new Set(['/p/a.ts', '/p/b.ts', '/p/c.ts', '/p/d/index.ts', '/p/e.ts', '/p/f.ts'])
    const source = [
      "import { x } from './a.ts'",
      "import type { Y } from './b.ts'",
      "export { z } from './c.ts'",
      "export * from './d'",
      "import './e.ts'",
      "const f = await import('./f.ts')",
      "import { Elysia } from 'elysia'",
    ].join('\n')
    expect(importsOf('/p/main.ts', source, known).sort()).toEqual([...known].sort())
  })

  test('a circle is found and named; an acyclic graph passes', () => {
    expect(findCircle(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]]))).toEqual(['a', 'b', 'c', 'a'])
    expect(findCircle(new Map([['a', ['b', 'c']], ['b', ['c']], ['c', []]]))).toBeUndefined()
  })

  test('has no circle', () => {
    const graph = projectGraph()
    expect(graph.size).toBeGreaterThan(50)
    // bench/ is in it: the run log is read by drift.ts and written beside the report by results.ts, which imports drift.ts.
    expect(graph.get(join(ROOT, 'bench/lib/results.ts'))).toContain(join(ROOT, 'bench/lib/drift.ts'))
    const circle = findCircle(graph)
    expect(circle?.map((file) => relative(ROOT, file)).join(' → ')).toBeUndefined()
  })
})
