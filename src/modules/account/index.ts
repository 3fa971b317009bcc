import { Elysia, t } from 'elysia'
import { getAccount } from '../../accounts.ts'
import type { Deps } from '../../deps.ts'
import { ApiError } from '../../http/errors.ts'
import { op } from '../../http/operation.ts'
import { API_PREFIX } from '../../http/pipeline.ts'
import { requestState } from '../../http/request-state.ts'
import { principalMacro } from '../../http/request.ts'
import { Timestamp, JsonInteger } from '../../http/schemas.ts'
import { findKeyById, maskedToken } from '../../auth/keys.ts'

const MeBody = t.Object({
  account: t.Object({
    id: t.String({ examples: ['acct_01jd8x3m5v6w7y8z9a0b1c2d3e'] }),
    name: t.String(),
    plan: t.Union([t.Literal('free'), t.Literal('keeper'), t.Literal('breeder'), t.Literal('professional')]),
    live_test_allowlisted: t.Boolean(),
    created_at: Timestamp,
  }),
  key: t.Object({
    id: t.String(),
    name: t.String(),
    kind: t.Literal('personal'),
    token: t.String({ description: 'Masked: prefix and last four characters.' }),
    expires_at: t.Union([Timestamp, t.Null()]),
    created_at: Timestamp,
  }),
  scopes: t.Array(t.String(), { description: 'The scopes this key holds.' }),
  rate_limits: t.Object({
    policy: t.String({ description: 'As in the RateLimit-Policy header.' }),
    limit: JsonInteger({ description: 'Requests per window.' }),
    remaining: JsonInteger({ description: 'Left in the current window, after this request.' }),
    window_seconds: JsonInteger(),
    reset_seconds: JsonInteger({ description: 'Seconds until the window resets.' }),
    reset_at: JsonInteger({ description: 'Epoch seconds when the window resets.' }),
  }),
}, { $id: '#/components/schemas/Me' })

export function accountModule(deps: Deps) {
  return new Elysia({ name: 'account' })
    .use(principalMacro)
    .get(`${API_PREFIX}/me`, async ({ principal, request }) => {
      const [account, key] = await Promise.all([getAccount(deps.database.db, principal.accountId), findKeyById(deps.database.db, principal.keyId)])
      if (!account || !key) throw new ApiError('invalid_token', 'The key no longer exists.')
      const rl = requestState(request).rateLimit!
      return {
        account: { id: account.id, name: account.name, plan: account.plan, live_test_allowlisted: account.liveTestAllowlisted, created_at: account.createdAt.toISOString() },
        key: { id: key.id, name: key.name, kind: 'personal' as const, token: maskedToken(key), expires_at: key.expiresAt?.toISOString() ?? null, created_at: key.createdAt.toISOString() },
        scopes: [...principal.scopes],
        rate_limits: { policy: `"default";q=${rl.limit};w=${rl.windowSeconds}`, limit: rl.limit, remaining: rl.remaining, window_seconds: rl.windowSeconds, reset_seconds: rl.resetSeconds, reset_at: rl.resetAt },
      }
    }, {
      principal: true,
      response: { 200: MeBody },
      detail: op({ operationId: 'getMe', summary: 'The account behind the key, the scopes it holds and its rate limits', tags: ['Account'] }),
    })
}
