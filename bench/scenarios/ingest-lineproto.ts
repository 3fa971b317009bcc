// Line protocol into our v2 endpoint (issue 58): the ingest-questdb load (128 devices × 100 readings a request,
// closed loop) sent as InfluxDB line protocol to our `POST /api/v2/write` (each device with its key), beside
// InfluxDB 1.6's own `/write` (a private influxd on loopback, lib/influx.ts) taking the same bodies, and beside the
// same readings as JSON to `POST /api/v1/sensors/readings` on the same server: three rounds, each ours-JSON,
// ours-line-protocol, InfluxDB's, taking turns (one after the other the sides drift by a sixth on this box, see
// ingest-questdb's influxRounds). Lines: readings/s ÷ InfluxDB (target ≥ 1.3), the median of the rounds' ratios;
// server CPU per reading, line protocol beside JSON. On QuestDB when one answers (the target's store), else on the
// SQL store, saying so. On QuestDB each round has a fourth side, as information: the same bodies POSTed to QuestDB's
// own `/write` (its ILP over HTTP reads InfluxDB line protocol) into a table of their own, what a site pointing its
// collectors at QuestDB directly would get. It is no ceiling: QuestDB commits each request, 100 readings, where our
// store gathers about 2,000 a write (2026-12-06 on 7.4.2: 114k–129k readings/s at 1.7 cores, ours 336k–443k);
// ingest-questdb's raw ILP baseline (our batches, pre-built) is the ceiling.
import { INFLUXD, startInflux } from '../lib/influx.ts'
import { childrenOf, ingestSettings } from '../lib/ingest.ts'
import { medianBy, runLoad, statsOf, type LoadResult } from '../lib/load.ts'
import { dropTable, freshTableName, QUESTDB_HTTP, QUESTDB_ILP, QUESTDB_PG_URL, questdbAnswers, questdbJava, waitForCount } from '../lib/questdb.ts'
import { line, needsLocalServer, type Scenario } from '../lib/report.ts'
import { cleanRedis, freshDatabase, serverEnv } from '../lib/setup.ts'
import { check } from './http-layer.ts'
import { CHANNELS, closedLoop, driveIngest } from './ingest-postgres.ts'

const NAME = 'ingest-lineproto'
const ROUNDS = 3
/** Each body of a round takes later time slots than the one before (a round spans seconds of them). */
const SLOT_MS = 10 * 60_000

interface Round { json: LoadResult; lineProtocol: LoadResult; influx: LoadResult; questdbAlone?: LoadResult }

export const ingestLineproto: Scenario = async (ctx) => {
  if (ctx.options.target) return needsLocalServer()
  if (!INFLUXD) return { lines: [], details: {}, skipped: 'influxd is not installed (apt-get install influxdb)' }
  const questdb = await questdbAnswers()
  if (!questdb) ctx.log(`${NAME}: no QuestDB answers: on the SQL store instead (the issue's target is on QuestDB)`)
  const database = await freshDatabase('lp')
  const table = questdb ? freshTableName('lp') : undefined
  const aloneTable = freshTableName('lp_alone')
  let aloneStored = 0
  const env = serverEnv(database, { ...(questdb ? { QUESTDB_ILP, QUESTDB_PG_URL, QUESTDB_TABLE: table! } : {}), ...ingestSettings() })
  const watch: Record<string, () => number[]> = questdb ? { questdb: questdbJava } : {}
  let run: Awaited<ReturnType<typeof driveIngest>> | undefined
  const influx = await startInflux()
  try {
    // The first JSON round is driveIngest's own run (it starts the server and makes the devices).
    run = await driveIngest(ctx, env, watch, NAME)
    const server = run.server
    const serverPids = () => [server.pid, ...childrenOf(server.pid)]
    let stored = run.load.totalReadings
    const settle = async () => { if (table) await waitForCount(table, stored) }
    const rounds: Round[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const slot = (k: number) => run!.tsBase + (round * 2 + k) * SLOT_MS
      let json = run.load
      if (round > 0) {
        await settle()
        ctx.log(`${NAME}: round ${round + 1} of ${ROUNDS}, JSON to /api/v1/sensors/readings…`)
        json = await closedLoop(ctx, run, slot(0), watch)
        stored += json.totalReadings
      }
      await settle()
      ctx.log(`${NAME}: round ${round + 1} of ${ROUNDS}, line protocol to our /api/v2/write…`)
      const body = { kind: 'line-protocol' as const, perRequest: run.perRequest, channels: CHANNELS, tsBase: slot(1) }
      const lineProtocol = await runLoad({
        url: `${server.baseUrl}/api/v2/write?org=bench&bucket=bench&precision=ms`, method: 'POST', lanes: run.lanes, mode: 'closed',
        warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, drainMs: 20_000,
        body, keys: run.keys, auth: 'header', countAccepted: false,
      }, ctx.generators, { server: serverPids, ...watch })
      check(lineProtocol, 204)
      stored += lineProtocol.totalReadings
      await settle()
      ctx.log(`${NAME}: round ${round + 1} of ${ROUNDS}, the same bodies to InfluxDB 1.6's /write…`)
      const peer = await runLoad({
        url: influx.writeUrl, method: 'POST', lanes: run.lanes, mode: 'closed',
        warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, drainMs: 20_000,
        // Labels, not keys: InfluxDB runs without authentication here; the device tag is the lane's key number.
        body, keys: run.keys.map((_, i) => String(i)), auth: 'none', countAccepted: false,
      }, ctx.generators, { influx: () => [influx.pid] })
      check(peer, 204)
      let questdbAlone: LoadResult | undefined
      if (questdb) {
        ctx.log(`${NAME}: round ${round + 1} of ${ROUNDS}, the same bodies to QuestDB's own /write…`)
        questdbAlone = await runLoad({
          url: `${QUESTDB_HTTP}/write?precision=ms`, method: 'POST', lanes: run.lanes, mode: 'closed',
          warmupMs: ctx.warmupSeconds * 1000, durationMs: ctx.seconds * 1000, drainMs: 20_000,
          body: { ...body, measurement: aloneTable }, keys: run.keys.map((_, i) => String(i)), auth: 'none', countAccepted: false,
        }, ctx.generators, watch)
        check(questdbAlone, 204)
        aloneStored += questdbAlone.totalReadings
        await waitForCount(aloneTable, aloneStored)
      }
      rounds.push({ json, lineProtocol, influx: peer, questdbAlone })
    }
    await server.stop()
    const visible = table ? (await waitForCount(table, stored)).count : undefined

    const rate = (load: LoadResult) => load.readingsPerSecond
    const cpuPerReading = (cores: number, load: LoadResult) => (cores * 1e6) / load.readingsPerSecond
    const perReading = (load: LoadResult, name: string) => cpuPerReading(load.watched[name]!, load)
    /** What storing a reading costs on our side of the comparison: our server and the QuestDB behind it. */
    const storeSide = (load: LoadResult) => perReading(load, 'server') + perReading(load, 'questdb')
    const cpu = (load: LoadResult) => perReading(load, 'server')
    const generatorPerReading = (load: LoadResult) => cpuPerReading(load.cpu, load)
    /** Our side's most CPU per reading for 1.3× InfluxDB's readings/s, the generator's per reading as in the InfluxDB round. */
    const budget = (r: Round) => (generatorPerReading(r.influx) + perReading(r.influx, 'influx')) / 1.3 - generatorPerReading(r.influx)
    const peerRatio = (r: Round) => rate(r.lineProtocol) / rate(r.influx)
    const middle = medianBy(rounds, peerRatio)
    const aloneRatio = (r: Round) => rate(r.questdbAlone!) / rate(r.influx)
    const middleCpu = medianBy(rounds, (r) => cpu(r.lineProtocol) / cpu(r.json))
    const store = questdb ? 'QuestDB' : 'the SQL store (no QuestDB answered)'
    const each = rounds.map((r) => `${(rate(r.json) / 1000).toFixed(0)}k JSON / ${(rate(r.lineProtocol) / 1000).toFixed(0)}k line protocol / ${(rate(r.influx) / 1000).toFixed(0)}k InfluxDB`).join(', ')
    const common = `on ${store}; ${run.lanes} devices × ${run.perRequest} readings a request, closed loop; rounds (readings/s): ${each}${visible !== undefined ? `; ${visible} of ${stored} acknowledged readings visible in QuestDB` : ''}`
    return {
      lines: [
        line(NAME, 'readings/s via our /api/v2/write ÷ InfluxDB 1.6 /write (same line-protocol bodies)', rate(middle.lineProtocol), rate(middle.influx), 'rows/s', 1.3, 'target',
          `the median of ${ROUNDS} rounds' ratios (${rounds.map((r) => peerRatio(r).toFixed(2)).join(', ')}); ${common}; in the median round our server ${middle.lineProtocol.watched.server!.toFixed(2)} cores, influxd ${middle.influx.watched.influx!.toFixed(2)}, p99 ${middle.lineProtocol.latency.p99.toFixed(1)} / ${middle.influx.latency.p99.toFixed(1)} ms`,
          statsOf(middle.lineProtocol, 204, run.peakRssMiB)),
        line(NAME, 'readings/s: line protocol ÷ JSON, same server and readings', rate(middle.lineProtocol), rate(middle.json), 'rows/s', undefined, 'target',
          `information: the same round as the line above; ${common}`, statsOf(middle.json, 202, run.peakRssMiB)),
        ...(questdb ? [line(NAME, 'readings/s: QuestDB\'s own /write ÷ InfluxDB 1.6 /write (same bodies, nothing in front)', rate(medianBy(rounds, aloneRatio).questdbAlone!), rate(medianBy(rounds, aloneRatio).influx), 'rows/s', undefined, 'target',
          `information: the median of ${ROUNDS} rounds' ratios (${rounds.map((r) => aloneRatio(r).toFixed(2)).join(', ')}); QuestDB's /write ${rounds.map((r) => `${(rate(r.questdbAlone!) / 1000).toFixed(0)}k`).join(', ')} readings/s, its JVM ${rounds.map((r) => `${r.questdbAlone!.watched.questdb!.toFixed(2)}`).join(', ')} cores; our v2 endpoint ÷ QuestDB's /write ${rounds.map((r) => (rate(r.lineProtocol) / rate(r.questdbAlone!)).toFixed(2)).join(', ')}; ${common}`)] : []),
        ...(questdb ? [line(NAME, 'CPU per reading, µs: our server and QuestDB together (influxd beside)', storeSide(middle.lineProtocol), perReading(middle.influx, 'influx'), 'µs', undefined, 'target',
          `information: the median round of the first line; on cores kept busy by the generator and one side, 1.3× InfluxDB's readings/s needs our side at most (generator + influxd) ÷ 1.3 − generator per reading (${budget(middle).toFixed(2)} µs; ${rounds.map((r) => budget(r).toFixed(2)).join(', ')} by round), the generator sending the same bodies; per round ours (our server + QuestDB's JVM) / influxd: ${rounds.map((r) => `${storeSide(r.lineProtocol).toFixed(2)} (${perReading(r.lineProtocol, 'server').toFixed(2)} + ${perReading(r.lineProtocol, 'questdb').toFixed(2)}) / ${perReading(r.influx, 'influx').toFixed(2)}`).join(', ')} µs; the generator ${rounds.map((r) => `${generatorPerReading(r.lineProtocol).toFixed(2)} / ${generatorPerReading(r.influx).toFixed(2)}`).join(', ')} µs; QuestDB's JVM counted over the round's window only (its WAL applied after the window is not in it)`)] : []),
        line(NAME, 'server CPU per reading, µs: line protocol (JSON beside)', cpu(middleCpu.lineProtocol), cpu(middleCpu.json), 'µs', undefined, 'target',
          `information: the round with the median ratio; per round line protocol / JSON: ${rounds.map((r) => `${cpu(r.lineProtocol).toFixed(1)} / ${cpu(r.json).toFixed(1)}`).join(', ')} µs`),
      ],
      details: { store: questdb ? 'questdb' : 'sql', table, rounds, stored, visible, lanes: run.lanes, readingsPerRequest: run.perRequest, settings: ingestSettings() },
    }
  } finally {
    await run?.server.stop()
    await influx.close()
    if (table) await dropTable(table)
    if (questdb) await dropTable(aloneTable)
    await database.drop()
    await cleanRedis(env.REDIS_PREFIX!)
  }
}
