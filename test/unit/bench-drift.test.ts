// The bench's drift check (bench/lib/drift.ts): each line of a run against the same line in the last committed run
// that has it, the ratio's change, and which moves past 10% are regressions. Runs are built here, not read from git.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { driftOf, driftMarkdown, higherIsBetter, type CommittedRun } from '../../bench/lib/drift.ts'
import { line } from '../../bench/lib/report.ts'
import { committedRuns, withVerdicts, type BenchReport } from '../../bench/lib/results.ts'

type LineArgs = Parameters<typeof line>

function run(startedAt: string, lines: LineArgs[]): BenchReport {
  return {
    command: 'bun run bench', startedAt, seconds: 1, commit: 'abc1234', bun: '1.4.5', cores: 2,
    settings: { seconds: 1, warmupSeconds: 0, generators: 1 }, lines: withVerdicts(lines.map((args) => line(...args))), scenarios: {},
  }
}

const committed = (file: string, report: BenchReport): CommittedRun => ({ file: `bench/results/${file}`, report })

describe('bench drift', () => {
  test('a line is compared with the most recent earlier committed run that has it, matched as bench:compare matches', () => {
    const older = committed('older.json', run('2026-11-20T00:00:00.000Z', [
      ['http-layer', 'POST req/s', 100, 200, 'req/s'],
      ['ingest', 'ack p99 at 463 req/s', 10, 5, 'ms'],
    ]))
    const newer = committed('newer.json', run('2026-11-21T00:00:00.000Z', [['http-layer', 'POST req/s', 110, 200, 'req/s']]))
    // Started after the run being checked: never its "previous".
    const later = committed('later.json', run('2026-11-23T00:00:00.000Z', [['http-layer', 'POST req/s', 50, 200, 'req/s']]))
    const now = run('2026-11-22T00:00:00.000Z', [
      ['http-layer', 'POST req/s', 120, 200, 'req/s'],
      ['ingest', 'ack p99 at 516 req/s', 10, 5, 'ms'],
    ])
    const [post, ack] = driftOf(now, [older, later, newer])
    expect(post!.previous?.run.file).toBe('bench/results/newer.json')
    expect(post!.change).toBeCloseTo(0.6 / 0.55 - 1, 10)
    // "at 463 req/s" and "at 516 req/s" are one measure when that is the only pairing there can be.
    expect(ack!.previous?.run.file).toBe('bench/results/older.json')
    expect(ack!.previous?.line.measure).toBe('ack p99 at 463 req/s')
    expect(ack!.change).toBe(0)
  })

  test('a committed line without a ratio is passed over for an earlier one that has one', () => {
    const withRatio = committed('a.json', run('2026-11-20T00:00:00.000Z', [['s', 'm', 100, 100, 'req/s']]))
    const remote = committed('b.json', run('2026-11-21T00:00:00.000Z', [['s', 'm', 100, undefined, 'req/s']]))
    const [d] = driftOf(run('2026-11-22T00:00:00.000Z', [['s', 'm', 130, 100, 'req/s']]), [withRatio, remote])
    expect(d!.previous?.run.file).toBe('bench/results/a.json')
    expect(d!.moved).toBe('improvement')
  })

  test('a committed ratio of 0 gives no share to move by: an earlier one is used', () => {
    const older = committed('older.json', run('2026-11-19T00:00:00.000Z', [['s', 'refused', 2, 4, 'conns']]))
    const zero = committed('zero.json', run('2026-11-20T00:00:00.000Z', [['s', 'refused', 0, 4, 'conns']]))
    const [d] = driftOf(run('2026-11-22T00:00:00.000Z', [['s', 'refused', 1, 4, 'conns']]), [zero, older])
    expect(d!.previous?.run.file).toBe('bench/results/older.json')
    expect(d!.change).toBeCloseTo(-0.5, 10)
  })

  test('more than 10% either way moves; 10% exactly does not', () => {
    const before = committed('before.json', run('2026-11-20T00:00:00.000Z', [
      ['s', 'up ten', 100, 100, 'req/s'], ['s', 'up eleven', 100, 100, 'req/s'],
      ['s', 'down ten', 100, 100, 'req/s'], ['s', 'down eleven', 100, 100, 'req/s'],
    ]))
    const now = run('2026-11-22T00:00:00.000Z', [
      ['s', 'up ten', 110, 100, 'req/s'], ['s', 'up eleven', 111, 100, 'req/s'],
      ['s', 'down ten', 90, 100, 'req/s'], ['s', 'down eleven', 89, 100, 'req/s'],
    ])
    expect(driftOf(now, [before]).map((d) => d.moved)).toEqual([undefined, 'improvement', undefined, 'regression'])
  })

  test('which way is better: higher for rates, counts and lines with a target; lower for costs without one', () => {
    const at = (args: LineArgs) => run('2026-11-20T00:00:00.000Z', [args]).lines[0]!
    expect(higherIsBetter(at(['s', 'readings/s ÷ COPY', 1, 2, 'rows/s']))).toBe(true)
    expect(higherIsBetter(at(['s', 'p99 ours ÷ bare', 1, 2, 'ms']))).toBe(false)
    expect(higherIsBetter(at(['s', 'CPU per reading with ÷ without', 1, 2, 'µs']))).toBe(false)
    // query-isolation carries idle ÷ busy so that its target (≥ 1 ÷ 1.5) is met by a higher ratio, in ms.
    expect(higherIsBetter(at(['query-isolation', 'ack p99: A idle ÷ A at its allowance', 1, 2, 'ms', 1 / 1.5]))).toBe(true)
    // history puts the one-shot SQL in ours: higher is better although the unit is ms.
    expect(higherIsBetter(at(['history', 'daily (sql, full walk): one-shot SQL over raw ÷ API', 1, 2, 'ms']))).toBe(true)
    expect(higherIsBetter(at(['fleet', 'reconnect storm: refused of 200 reconnecting within 10 s', 1, 2, 'conns']))).toBe(false)

    const before = committed('before.json', run('2026-11-20T00:00:00.000Z', [['s', 'p99', 10, 10, 'ms'], ['s', 'CPU', 10, 10, 'µs']]))
    const now = run('2026-11-22T00:00:00.000Z', [['s', 'p99', 15, 10, 'ms'], ['s', 'CPU', 5, 10, 'µs']])
    const [p99, cpu] = driftOf(now, [before])
    expect(p99!.change).toBeCloseTo(0.5, 10)
    expect(p99!.moved).toBe('regression')
    expect(cpu!.moved).toBe('improvement')
  })

  test('lines with no earlier committed run, or no ratio, are not compared; the report says so', () => {
    const before = committed('before.json', run('2026-11-20T00:00:00.000Z', [['s', 'kept', 100, 100, 'req/s']]))
    const now = run('2026-11-22T00:00:00.000Z', [['s', 'kept', 100, 100, 'req/s'], ['s', 'new', 100, 100, 'req/s'], ['s', 'peak RSS', 80, undefined, 'MiB']])
    const drift = driftOf(now, [before])
    expect(drift.map((d) => [d.previous?.run.file, d.change])).toEqual([['bench/results/before.json', 0], [undefined, undefined], [undefined, undefined]])
    expect(driftMarkdown(drift)).toContain('None of the 1 line compared moved more than 10%; 1 line has no earlier committed run.')
    expect(driftMarkdown(driftOf(now, []))).toContain('No committed run shares its lines')
  })

  test('the Markdown section lists the lines that moved, with the file each was compared with', () => {
    const before = committed('2026-11-20T00-00-00-abc1234.json', run('2026-11-20T00:00:00.000Z', [['ingest', 'readings/s ÷ COPY', 80, 100, 'rows/s', 0.8]]))
    const section = driftMarkdown(driftOf(run('2026-11-22T00:00:00.000Z', [['ingest', 'readings/s ÷ COPY', 60, 100, 'rows/s', 0.8]]), [before]))
    expect(section).toContain('## Moved more than 10% since the last committed run')
    expect(section).toContain('| ingest | readings/s ÷ COPY | 0.80 → 0.60 | -25.0% | regression | 2026-11-20T00-00-00-abc1234.json (abc1234) |')
  })
})

describe('committed results', () => {
  test('only results files committed at HEAD count, read from the work tree', () => {
    const root = mkdtempSync(join(tmpdir(), 'bench-drift-'))
    try {
      const git = (...args: string[]) => {
        const done = Bun.spawnSync(['git', '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: root, stderr: 'pipe' })
        if (done.exitCode !== 0) throw new Error(done.stderr.toString())
      }
      mkdirSync(join(root, 'bench', 'results'), { recursive: true })
      const write = (name: string, body: string) => writeFileSync(join(root, 'bench', 'results', name), body)
      const report = JSON.stringify(run('2026-11-20T00:00:00.000Z', [['s', 'm', 1, 1, 'req/s']]))
      write('2026-11-20T00-00-00-abc1234.json', report)
      write('notes.json', '{"not": "a results file"}')
      write('latest.json', report)
      git('init', '-q')
      git('add', '.')
      git('commit', '-q', '-m', 'results')
      write('2026-11-21T00-00-00-def5678.json', report) // new, not committed
      expect(committedRuns(root).map((r) => r.file)).toEqual(['bench/results/2026-11-20T00-00-00-abc1234.json'])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})
