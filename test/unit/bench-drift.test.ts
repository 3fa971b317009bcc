// The bench's drift check (bench/lib/drift.ts): each line of a run against the same line in the last committed run
// that has it, the ratio's change, and which moves past 10% are regressions. Runs are records of the run log
// (bench/lib/run-log.ts) built here; the log read from git, and bench:compare over it, are tested in bench-run-log.test.ts.
import { describe, expect, test } from 'bun:test'
import { driftOf, driftMarkdown, higherIsBetter } from '../../bench/lib/drift.ts'
import { line } from '../../bench/lib/report.ts'
import { toRecord, type LoggedRun, type RunRecord } from '../../bench/lib/run-log.ts'

type LineArgs = Parameters<typeof line>

function run(startedAt: string, lines: LineArgs[], commit = 'abc1234'): RunRecord {
  return toRecord({
    command: 'bun run bench', startedAt, seconds: 1, commit, bun: '1.4.5', cores: 2,
    settings: { seconds: 1, warmupSeconds: 0, generators: 1 }, lines: lines.map((args) => line(...args)), scenarios: {},
  })
}

let lineNumber = 0
const committed = (record: RunRecord): LoggedRun => ({ line: ++lineNumber, record })

describe('bench drift', () => {
  test('a line is compared with the most recent earlier committed run that has it, matched as bench:compare matches', () => {
    const older = committed(run('2026-11-20T00:00:00.000Z', [
      ['http-layer', 'POST req/s', 100, 200, 'req/s'],
      ['ingest', 'ack p99 at 463 req/s', 10, 5, 'ms'],
    ]))
    const newer = committed(run('2026-11-21T00:00:00.000Z', [['http-layer', 'POST req/s', 110, 200, 'req/s']]))
    // Started after the run being checked: never its "previous".
    const later = committed(run('2026-11-23T00:00:00.000Z', [['http-layer', 'POST req/s', 50, 200, 'req/s']]))
    const now = run('2026-11-22T00:00:00.000Z', [
      ['http-layer', 'POST req/s', 120, 200, 'req/s'],
      ['ingest', 'ack p99 at 516 req/s', 10, 5, 'ms'],
    ])
    const [post, ack] = driftOf(now, [older, later, newer])
    expect(post!.previous?.run).toBe(newer)
    expect(post!.change).toBeCloseTo(0.6 / 0.55 - 1, 10)
    // "at 463 req/s" and "at 516 req/s" are one measure when that is the only pairing there can be.
    expect(ack!.previous?.run).toBe(older)
    expect(ack!.previous?.line.measure).toBe('ack p99 at 463 req/s')
    expect(ack!.change).toBe(0)
  })

  test('a committed line without a ratio is passed over for an earlier one that has one', () => {
    const withRatio = committed(run('2026-11-20T00:00:00.000Z', [['s', 'm', 100, 100, 'req/s']]))
    const remote = committed(run('2026-11-21T00:00:00.000Z', [['s', 'm', 100, undefined, 'req/s']]))
    const [d] = driftOf(run('2026-11-22T00:00:00.000Z', [['s', 'm', 130, 100, 'req/s']]), [withRatio, remote])
    expect(d!.previous?.run).toBe(withRatio)
    expect(d!.moved).toBe('improvement')
  })

  test('a committed ratio of 0 gives no share to move by: an earlier one is used', () => {
    const older = committed(run('2026-11-19T00:00:00.000Z', [['s', 'refused', 2, 4, 'conns']]))
    const zero = committed(run('2026-11-20T00:00:00.000Z', [['s', 'refused', 0, 4, 'conns']]))
    const [d] = driftOf(run('2026-11-22T00:00:00.000Z', [['s', 'refused', 1, 4, 'conns']]), [zero, older])
    expect(d!.previous?.run).toBe(older)
    expect(d!.change).toBeCloseTo(-0.5, 10)
  })

  test('more than 10% either way moves; 10% exactly does not', () => {
    const before = committed(run('2026-11-20T00:00:00.000Z', [
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

    const before = committed(run('2026-11-20T00:00:00.000Z', [['s', 'p99', 10, 10, 'ms'], ['s', 'CPU', 10, 10, 'µs']]))
    const now = run('2026-11-22T00:00:00.000Z', [['s', 'p99', 15, 10, 'ms'], ['s', 'CPU', 5, 10, 'µs']])
    const [p99, cpu] = driftOf(now, [before])
    expect(p99!.change).toBeCloseTo(0.5, 10)
    expect(p99!.moved).toBe('regression')
    expect(cpu!.moved).toBe('improvement')
  })

  test('lines with no earlier committed run, or no ratio, are not compared; the report says so', () => {
    const before = committed(run('2026-11-20T00:00:00.000Z', [['s', 'kept', 100, 100, 'req/s']]))
    const now = run('2026-11-22T00:00:00.000Z', [['s', 'kept', 100, 100, 'req/s'], ['s', 'new', 100, 100, 'req/s'], ['s', 'peak RSS', 80, undefined, 'MiB']])
    const drift = driftOf(now, [before])
    expect(drift.map((d) => [d.previous?.run, d.change])).toEqual([[before, 0], [undefined, undefined], [undefined, undefined]])
    expect(driftMarkdown(drift)).toContain('None of the 1 line compared moved more than 10%; 1 line has no earlier committed run.')
    expect(driftMarkdown(driftOf(now, []))).toContain('No committed run shares its lines')
  })

  test('the Markdown section lists the lines that moved, with the file each was compared with', () => {
    const before = committed(run('2026-11-20T00:00:00.000Z', [['ingest', 'readings/s ÷ COPY', 80, 100, 'rows/s', 0.8]]))
    const section = driftMarkdown(driftOf(run('2026-11-22T00:00:00.000Z', [['ingest', 'readings/s ÷ COPY', 60, 100, 'rows/s', 0.8]]), [before]))
    expect(section).toContain('## Moved more than 10% since the last committed run')
    expect(section).toContain('| ingest | readings/s ÷ COPY | 0.80 → 0.60 | -25.0% | regression | 2026-11-20T00-00-00-abc1234 |')
  })
})
