// The bench's startServer with JavaScriptCore's GC log (bench/lib/processes.ts): the hand-written scenario reports
// each server's collector pauses from it, so the log's lines must become pauses and stay out of the output.
import { expect, test } from 'bun:test'
import { BUN, GC_LOG_ENV, startServer } from '../../bench/lib/processes.ts'

const SCRIPT = `
let kept = []
for (let i = 0; i < 400_000; i++) { kept.push({ i, text: 'x' + i }); if (kept.length > 50_000) kept = [] }
Bun.gc(true)
console.log('listening on nothing')
setInterval(() => {}, 1000)
`

test('a child started with GC_LOG_ENV reports its pauses and keeps the GC lines out of its output', async () => {
  const child = await startServer('gc probe', [BUN, '-e', SCRIPT], { ...GC_LOG_ENV })
  try {
    // The forced collection ran before "listening on" was printed; its lines may trail it on the other pipe.
    const deadline = Date.now() + 5_000
    while (child.gcPauses().length === 0 && Date.now() < deadline) await Bun.sleep(20)
    const pauses = child.gcPauses()
    expect(pauses.length).toBeGreaterThan(0)
    for (const pause of pauses) {
      expect(pause.ms).toBeGreaterThanOrEqual(0)
      expect(pause.at).toBeGreaterThan(Date.now() - 60_000)
    }
    expect(child.output()).toContain('listening on nothing')
    expect(child.output()).not.toContain('[GC<')
  } finally {
    await child.stop()
  }
})

test('without GC_LOG_ENV a child reports no pauses', async () => {
  const child = await startServer('plain probe', [BUN, '-e', SCRIPT], {})
  try {
    expect(child.gcPauses()).toEqual([])
  } finally {
    await child.stop()
  }
})
