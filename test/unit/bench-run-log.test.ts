// The bench's run log (bench/lib/run-log.ts, bench/results.jsonl): one compact record per run, read back by
// `bench:compare` (bench/compare.ts), the drift section of every report (lib/results.ts) and `bench:plot`
// (lib/ratio-history.ts). The git parts run in a repository made here, never this one.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CompareError, compareCommand, selectRun } from '../../bench/compare.ts'
import { driftOf } from '../../bench/lib/drift.ts'
import { ratioHistorySvg, ratioSeries } from '../../bench/lib/ratio-history.ts'
import { line, type Line } from '../../bench/lib/report.ts'
import { gitRevision, markdownReport, writeResults } from '../../bench/lib/results.ts'
import { appendRecord, committedLog, parseLog, readLog, RUN_LOG, toRecord, type RunRecord, type RunSummary } from '../../bench/lib/run-log.ts'

function summary(startedAt: string, lines: Line[], commit = 'abc1234', scenarios: RunSummary['scenarios'] = {}): RunSummary {
  return {
    command: 'bun run bench http-layer', startedAt, seconds: 12, commit, bun: '1.4.5', cores: 2, cpu: 'Test CPU',
    loadAverage: { before: 0.5, after: 0.7 }, settings: { seconds: 1, warmupSeconds: 0, generators: 1 },
    options: { concurrency: 8, batch: undefined, target: undefined }, lines, scenarios,
  }
}

const postLine = (ours: number, baseline: number) => line('http-layer', 'POST req/s (10 readings)', ours, baseline, 'req/s', 0.7)

describe('the record of a run', () => {
  test('keeps every line with its figures to four significant digits and its verdict, skipped and failed scenarios, and the report name', () => {
    const lines = [
      { ...postLine(12345.678, 20000.5), note: 'server CPU per request ours 59 µs', stats: { p50: 1.23456, p99: 9.87654, errors: 0, peakRssMiB: 117.421875 } },
      line('latency', 'peak RSS', 80.123456, undefined, 'MiB'),
    ]
    const record = toRecord(summary('2026-11-22T01:28:15.472Z', lines, 'abc1234', {
      'http-layer': { lines: [], details: { timeline: [1, 2, 3] } },
      'ingest-questdb': { lines: [], details: {}, skipped: 'no QuestDB on loopback' },
      fleet: { error: 'Error: mosquitto exited\n    at start (fleet.ts:1)' },
    }))
    expect(record).toEqual({
      commit: 'abc1234', startedAt: '2026-11-22T01:28:15.472Z', seconds: 12, command: 'bun run bench http-layer',
      machine: { cores: 2, cpu: 'Test CPU', bun: '1.4.5', loadAverage: { before: 0.5, after: 0.7 } },
      settings: { seconds: 1, warmupSeconds: 0, generators: 1 },
      options: { concurrency: 8 },
      lines: [
        {
          scenario: 'http-layer', measure: 'POST req/s (10 readings)', ours: 12350, baseline: 20000, unit: 'req/s', ratio: 0.6173, target: 0.7, kind: 'target',
          result: 'miss', stats: { p50: 1.235, p99: 9.877, errors: 0, peakRssMiB: 117.4 }, note: 'server CPU per request ours 59 µs',
        },
        { scenario: 'latency', measure: 'peak RSS', ours: 80.12, unit: 'MiB', result: 'info' },
      ],
      skipped: { 'ingest-questdb': 'no QuestDB on loopback' },
      failed: { fleet: 'Error: mosquitto exited' },
      report: '2026-11-22T01-28-15-abc1234',
    })
    // The scenarios' details stay in the full report.
    expect(JSON.stringify(record)).not.toContain('timeline')
  })

  test('the log is one record a line, read back with line numbers; a line that is not a record is named', () => {
    const a = toRecord(summary('2026-11-22T00:00:00.000Z', [postLine(100, 200)]))
    const b = toRecord(summary('2026-11-23T00:00:00.000Z', [postLine(150, 200)]))
    const text = `${JSON.stringify(a)}\n\n${JSON.stringify(b)}\n`
    expect(parseLog(text)).toEqual([{ line: 1, record: a }, { line: 3, record: b }])
    expect(() => parseLog(`${JSON.stringify(a)}\n{"lines": [`)).toThrow(`${RUN_LOG}:2 is not JSON`)
    expect(() => parseLog('{"startedAt": "2026-11-22T00:00:00.000Z"}')).toThrow(`${RUN_LOG}:1 is not a bench record`)
  })
})

describe('the log in a repository', () => {
  let root: string
  const git = (...args: string[]) => {
    const done = Bun.spawnSync(['git', '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: root, stderr: 'pipe' })
    if (done.exitCode !== 0) throw new Error(done.stderr.toString())
  }
  // Committed: a run at commit 1111111 with the POST ratio at 0.8. Appended, not committed: the same line at 0.6.
  const committedRun = toRecord(summary('2026-11-20T00:00:00.000Z', [postLine(160, 200), line('ingest', 'rows/s ÷ COPY', 90, 100, 'rows/s', 0.8)], '1111111'))
  const scratchRun = toRecord(summary('2026-11-21T00:00:00.000Z', [postLine(120, 200), line('ingest', 'rows/s ÷ COPY', 91, 100, 'rows/s', 0.8)], '2222222'))

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'bench-run-log-'))
    mkdirSync(join(root, 'bench'))
    writeFileSync(join(root, 'code.ts'), 'export {}\n')
    git('init', '-q')
    appendRecord(join(root, RUN_LOG), committedRun)
    git('add', '.')
    git('commit', '-q', '-m', 'a run')
    appendRecord(join(root, RUN_LOG), scratchRun)
  })
  afterEach(() => rmSync(root, { recursive: true, force: true }))

  test('other runs compare with the log as committed at HEAD; the work tree has every appended record', () => {
    expect(readLog(root).map((r) => [r.line, r.record.commit])).toEqual([[1, '1111111'], [2, '2222222']])
    expect(committedLog(root).map((r) => [r.line, r.record.commit])).toEqual([[1, '1111111']])
    expect(committedLog(mkdtempSync(join(tmpdir(), 'bench-no-git-')))).toEqual([])
  })

  test('a record appended to a log whose last newline was lost still starts a line of its own', () => {
    const path = join(root, RUN_LOG)
    writeFileSync(path, readFileSync(path, 'utf8').trimEnd())
    appendRecord(path, scratchRun)
    expect(readLog(root).map((r) => [r.line, r.record.commit])).toEqual([[1, '1111111'], [2, '2222222'], [3, '2222222']])
  })

  test('the run log does not make the commit dirty; any other tracked change does', () => {
    const head = Bun.spawnSync(['git', 'rev-parse', '--short', 'HEAD'], { cwd: root }).stdout.toString().trim()
    expect(gitRevision(root)).toBe(head)
    writeFileSync(join(root, 'code.ts'), 'export const changed = 1\n')
    expect(gitRevision(root)).toBe(`${head}-dirty`)
  })

  test('bench:compare with no run: the newest record against the committed ones, a regression in capitals', () => {
    const out = compareCommand([], root)
    expect(out).toContain(`now: 2026-11-21T00-00-00-2222222 (${RUN_LOG}:2)`)
    expect(out).toContain(`as committed at HEAD (1 runs)`)
    expect(out).toMatch(/http-layer\s+POST req\/s \(10 readings\)\s+0\.80\s+0\.60\s+-25\.0%\s+higher\s+REGRESSION\s+2026-11-20T00-00-00-1111111/)
    expect(out).toContain('2 lines compared: 1 moved more than 10% (1 regression, 0 improvements)')
  })

  test('bench:compare with two runs, named by commit, line number or full report; a name that matches nothing is a mistake', () => {
    const out = compareCommand(['1111111', '#2'], root)
    expect(out).toContain(`a: 2026-11-20T00-00-00-1111111 (${RUN_LOG}:1)`)
    expect(out).toContain(`b: 2026-11-21T00-00-00-2222222 (${RUN_LOG}:2)`)
    expect(out).toMatch(/http-layer\s+POST req\/s \(10 readings\)\s+160\s+120\s+req\/s\s+-25\.0%\s+0\.80\s+0\.60/)
    expect(selectRun('2026-11-2', readLog(root)).source).toBe(`${RUN_LOG}:2, the newest of 2 matching "2026-11-2"`)

    // A full report written by a run, named by its path.
    mkdirSync(join(root, 'bench', 'results'))
    const full = summary('2026-11-22T00:00:00.000Z', [postLine(180, 200)], '3333333')
    const base = writeResults(join(root, 'bench', 'results'), full, driftOf(toRecord(full), committedLog(root)))
    const path = join(root, 'bench', 'results', `${base}.json`)
    expect(compareCommand(['1111111', path], root)).toMatch(/POST req\/s \(10 readings\)\s+160\s+180\s+req\/s\s+\+12\.5%\s+0\.80\s+0\.90/)

    expect(() => compareCommand(['9999999'], root)).toThrow(CompareError)
    expect(() => compareCommand(['#7'], root)).toThrow(`${RUN_LOG} has no record on line 7`)
    expect(() => compareCommand(['a', 'b', 'c'], root)).toThrow('expected at most two runs')
  })

  test("a run's Markdown report names its record and the run each moved line was compared with", () => {
    const now = summary('2026-11-22T00:00:00.000Z', [postLine(100, 200)], '3333333')
    const markdown = markdownReport(now, 'x.svg', driftOf(toRecord(now), committedLog(root)))
    expect(markdown).toContain(`- recorded: one line of ${RUN_LOG}, \`"report":"2026-11-22T00-00-00-3333333"\``)
    expect(markdown).toContain('| http-layer | POST req/s (10 readings) | 0.80 → 0.50 | -37.5% | regression | 2026-11-20T00-00-00-1111111 |')
  })
})

describe('the ratio-over-runs picture', () => {
  test('one panel per line with a target, followed across runs by its measure with numbers blanked; points in time order', () => {
    const run = (startedAt: string, commit: string, lines: Line[]): RunRecord => toRecord(summary(startedAt, lines, commit))
    const walk = (pages: number, ratio: number) => line('hand-written', `page walk (${pages}/page, 8 lanes) ÷ hand-written`, ratio * 100, 100, 'pages/s', 0.7)
    // Out of time order in the file, as a union merge may leave it.
    const log = [
      { line: 1, record: run('2026-11-22T00:00:00.000Z', 'bbbbbbb', [walk(50, 0.8), line('latency', 'peak RSS', 80, undefined, 'MiB'), postLine(100, 200)]) },
      { line: 2, record: run('2026-11-21T00:00:00.000Z', 'aaaaaaa', [walk(10, 0.6)]) },
      { line: 3, record: run('2026-11-23T00:00:00.000Z', 'ccccccc', [walk(50, 0.9), line('info', 'ratio without target', 1, 2, 'req/s')]) },
    ]
    const series = ratioSeries(log)
    expect(series.map((s) => [s.scenario, s.measure, s.points.map((p) => [p.report, p.ratio, p.result])])).toEqual([
      ['hand-written', 'page walk (50/page, 8 lanes) ÷ hand-written', [
        ['2026-11-21T00-00-00-aaaaaaa', 0.6, 'miss'], ['2026-11-22T00-00-00-bbbbbbb', 0.8, 'pass'], ['2026-11-23T00-00-00-ccccccc', 0.9, 'pass'],
      ]],
      ['http-layer', 'POST req/s (10 readings)', [['2026-11-22T00-00-00-bbbbbbb', 0.5, 'miss']]],
    ])
    const svg = ratioHistorySvg(series, 'heading', 'sub')
    // Three legend dots, then one mark per point, each with its run in a tooltip.
    expect(svg.match(/<circle /g)).toHaveLength(3 + 4)
    expect(svg).toContain('<title>2026-11-21T00-00-00-aaaaaaa: 0.60 (target ≥ 0.7: miss)')
    expect(svg).toContain('target ≥ 0.7 · 3 runs, 2 met · last 0.90 (2026-11-23T00-00-00-ccccccc)')
    expect(svg).not.toContain('ratio without target')
  })
})
