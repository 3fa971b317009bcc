// Counts a CPU profile's samples per function: `bun bench/profile-samples.ts <file.cpuprofile> [rows] [from s] [to s]`,
// the last two keeping only the samples taken that many seconds after the profile began (a scenario's phase).
// Bun's Markdown profile (--cpu-prof-md) weights each sample by the time since the previous one, so idle waits
// land on whatever ran last (an alert evaluator's timer once showed 31 %); counting samples does not. Prints the
// functions with the most samples of their own ("self") and those on the stack of the most samples ("total").
import { readFileSync } from 'node:fs'

interface Frame { functionName: string; url: string; lineNumber: number }
interface ProfileNode { id: number; callFrame: Frame; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

const [file, rowsArg, fromArg, toArg] = process.argv.slice(2)
if (!file) {
  console.error('usage: bun bench/profile-samples.ts <file.cpuprofile> [rows]')
  process.exit(2)
}
const rows = Number(rowsArg ?? 30)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const [fromUs, toUs] = [Number(fromArg ?? 0) * 1e6, toArg === undefined ? Infinity : Number(toArg) * 1e6]
let at = 0
const samples = profile.samples.filter((_, i) => {
  at += profile.timeDeltas[i] ?? 0
  return at >= fromUs && at < toUs
})
console.log(`the profile spans ${(at / 1e6).toFixed(1)} s`)
const root = `${process.cwd()}/`
const nameOf = ({ functionName, url, lineNumber }: Frame) =>
  `${functionName || '(anonymous)'} ${url.replace('file://', '').replace(root, '')}${lineNumber >= 0 ? `:${lineNumber + 1}` : ''}`

const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parentOf = new Map<number, number>()
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)

const self = new Map<string, number>()
const total = new Map<string, number>()
for (const sample of samples) {
  const leaf = nameOf(byId.get(sample)!.callFrame)
  self.set(leaf, (self.get(leaf) ?? 0) + 1)
  // A function counts once per sample however often it recurs on the stack.
  const onStack = new Set<string>()
  for (let id: number | undefined = sample; id !== undefined; id = parentOf.get(id)) onStack.add(nameOf(byId.get(id)!.callFrame))
  for (const name of onStack) total.set(name, (total.get(name) ?? 0) + 1)
}

const count = samples.length
const print = (title: string, counts: Map<string, number>) => {
  console.log(`\n${title}`)
  for (const [name, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
    console.log(`${String(n).padStart(7)} ${((100 * n) / count).toFixed(1).padStart(5)} %  ${name}`)
  }
}
console.log(`${count} samples in ${file}`)
print('self (the function itself was running)', self)
print('total (the function was on the stack)', total)
