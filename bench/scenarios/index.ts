// Every scenario `bun run bench` knows, in the order a full run takes them.
import type { Scenario } from '../lib/report.ts'
import { activities } from './activities.ts'
import { animalsWalk } from './animals-walk.ts'
import { handWritten } from './hand-written.ts'
import { fleet } from './fleet.ts'
import { generatorCheck } from './generator-check.ts'
import { httpFloor } from './http-floor.ts'
import { httpLayer } from './http-layer.ts'
import { ingestAlerts } from './ingest-alerts.ts'
import { ingestBatches } from './ingest-batches.ts'
import { ingestPostgres } from './ingest-postgres.ts'
import { ingestLog } from './ingest-log.ts'
import { ingestLineproto } from './ingest-lineproto.ts'
import { ingestMqtt } from './ingest-mqtt.ts'
import { ingestQuestdb } from './ingest-questdb.ts'
import { latency } from './latency.ts'
import { mixed } from './mixed.ts'
import { pingDevices } from './ping-devices.ts'
import { questdbClient } from './questdb-client.ts'
import { history } from './history.ts'
import { dense } from './dense.ts'
import { queryIsolation } from './query-isolation.ts'
import { readingsQuery } from './readings-query.ts'
import { webhooks } from './webhooks.ts'
import { stream } from './stream.ts'

export const SCENARIOS: Record<string, Scenario> = {
  'http-layer': httpLayer,
  // What the http-layer ratios are made of: bare → + headers → Elysia → Elysia + headers → ours.
  'http-floor': httpFloor,
  'ping-devices': pingDevices,
  'ingest-postgres': ingestPostgres,
  // Right after ingest-postgres, whose maximum rate it halves (and before QuestDB's background work starts).
  latency,
  'ingest-batches': ingestBatches,
  // ingest-postgres's load without and with 1,000 alert rules, alternating.
  'ingest-alerts': ingestAlerts,
  // ingest-postgres's load without and with 1,000 readings-stream subscribers, alternating; delivery latency.
  stream,
  'ingest-questdb': ingestQuestdb,
  // Through the NATS ingest log onto QuestDB ÷ ingest-questdb's direct path, just measured.
  'ingest-log': ingestLog,
  // Devices over MQTT (QoS 1) ÷ the same load over HTTP, on the SQL store (and QuestDB when present).
  'ingest-mqtt': ingestMqtt,
  // The same load as InfluxDB line protocol to our /api/v2/write ÷ InfluxDB 1.6's /write, JSON beside (issue 58).
  'ingest-lineproto': ingestLineproto,
  // A fleet over MQTT: 10,000 devices held, a publish cadence and a reconnect storm, beside a private Mosquitto.
  fleet,
  'questdb-client': questdbClient,
  webhooks,
  // The records side: list walks, idempotent writes, readings queries, and an integrator's mix of them.
  'animals-walk': animalsWalk,
  activities,
  'readings-query': readingsQuery,
  // Account B's ingest and small reads while account A runs its allowance of the widest accepted queries ÷ A idle.
  'query-isolation': queryIsolation,
  // A year of one environment's readings through the API, five queries walked in full ÷ one-shot SQL, bytes per reading.
  history,
  // A dense site (issue 57): live ingest, dashboards, latest values and an export at once; scaled by BENCH_DENSE_*.
  dense,
  mixed,
  // Our records path ÷ the same two operations written by hand (Elysia + postgres.js, no drizzle, no pipeline).
  'hand-written': handWritten,
  // Whether our load generator starves the server more than autocannon would (it always runs on this machine).
  'generator-check': generatorCheck,
}
