// Migration 0009 on a table as the service left it before issue 55: claim ids in plain text become their hashes, a
// device key still waiting for its poll (the only plain copy of it) is revoked and its claim mints a fresh one, and a
// key already handed over is left alone.
import { afterAll, expect, test } from 'bun:test'
import { openPglite, openPostgres } from '../../db/client.ts'
import { generateToken, hashToken } from '../../src/tokens.ts'
import { claimHash } from '../../src/modules/sensors/pairing.ts'
import { freshDatabase } from '../helpers.ts'
import { migrationsUpTo } from '../process-helpers.ts'

const fresh = await freshDatabase()
const database = fresh.databaseUrl ? await openPostgres(fresh.databaseUrl) : await openPglite('memory://')
afterAll(async () => { await database.close(); await fresh.drop() })

test('0009 hashes claim ids, revokes keys that waited in plain text, and keeps handed-over keys', async () => {
  await database.migrate(migrationsUpTo(8))
  const waiting = generateToken('device')
  const handed = generateToken('device')
  await database.query(`insert into accounts (id, name, plan) values ('acct_m', 'm', 'breeder')`)
  for (const [id, token] of [['key_waiting', waiting], ['key_handed', handed]] as const) {
    await database.query(`insert into api_keys (id, account_id, kind, name, token_hash, token_prefix, last_four, scopes)
      values ('${id}', 'acct_m', 'device', '${id}', '${hashToken(token)}', 'hrs_dev_', '${token.slice(-4)}', '{}')`)
  }
  await database.query(`insert into pairing_claims (id, user_code, status, expires_at) values ('clm_pending', 'BCDF-GHJK', 'pending', now() + interval '5 minutes')`)
  await database.query(`insert into pairing_claims (id, user_code, status, account_id, device_id, device_key, expires_at)
    values ('clm_waiting', 'BCDF-GHJL', 'claimed', 'acct_m', 'dev_waiting', '${waiting}', now())`)
  await database.query(`insert into pairing_claims (id, user_code, status, account_id, device_id, device_key, expires_at, last_polled_at)
    values ('clm_handed', 'BCDF-GHJM', 'claimed', 'acct_m', 'dev_handed', null, now(), now() - interval '1 hour')`)

  await database.migrate()

  const claims = await database.query<{ claim_hash: string; status: string; key_issued_at: Date | null }>(`select claim_hash, status, key_issued_at from pairing_claims order by user_code`)
  expect(claims.map((c) => c.claim_hash)).toEqual(['clm_pending', 'clm_waiting', 'clm_handed'].map(claimHash))
  // The waiting claim mints a fresh key at its next poll; the handed one stays handed.
  expect(claims.map((c) => c.key_issued_at === null)).toEqual([true, true, false])
  const keys = await database.query<{ id: string; revoked_at: Date | null }>(`select id, revoked_at from api_keys order by id`)
  expect(keys.map((k) => [k.id, k.revoked_at !== null])).toEqual([['key_handed', false], ['key_waiting', true]])
  const columns = await database.query<{ column_name: string }>(`select column_name from information_schema.columns where table_name = 'pairing_claims'`)
  expect(columns.map((c) => c.column_name)).not.toContain('device_key')
})
