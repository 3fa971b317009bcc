// Every scenario `bun run bench` knows, in the order a full run takes them.
import type { Scenario } from '../lib/report.ts'
import { httpLayer } from './http-layer.ts'
import { ingestPostgres } from './ingest-postgres.ts'
import { ingestQuestdb } from './ingest-questdb.ts'
import { latency } from './latency.ts'
import { questdbClient } from './questdb-client.ts'
import { webhooks } from './webhooks.ts'

export const SCENARIOS: Record<string, Scenario> = {
  'http-layer': httpLayer,
  'ingest-postgres': ingestPostgres,
  // Right after ingest-postgres, whose maximum rate it halves (and before QuestDB's background work starts).
  latency,
  'ingest-questdb': ingestQuestdb,
  'questdb-client': questdbClient,
  webhooks,
}
