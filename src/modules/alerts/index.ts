// /environment/alert-rules and /environment/alerts (issue 16, additive to v1): threshold and stale-sensor alerts.
import { Elysia, t } from 'elysia'
import { ALERT_KINDS, ALERT_RESOLUTIONS, ALERT_STATES } from '../../../db/schema/index.ts'
import type { Deps } from '../../deps.ts'
import { ApiError } from '../../http/errors.ts'
import { Preconditions } from '../../http/etag.ts'
import { IdempotencyHeaders, writeOnce } from '../../http/idempotency.ts'
import { versioned } from '../../http/declared-response.ts'
import { op } from '../../http/operation.ts'
import { API_PREFIX } from '../../http/pipeline.ts'
import { principalMacro } from '../../http/request.ts'
import { JsonInteger, JsonNumber, PageOf, pageQuery } from '../../http/schemas.ts'
import { isId } from '../../ids.ts'
import { IdOf, Instant, UpdatedSince, nullable, oneOf } from '../../records/fields.ts'
import { RuleListQuery } from './queries.ts'
import { presentAlert, type AlertRuleRow } from './rows.ts'
import { announce, createAlertRule, deleteRule, getAlert, getRule, listAlerts, listRules, MAX_RULES_PER_ACCOUNT, presentRule, updateRule } from './service.ts'

export const ALERTS_TAG_DESCRIPTION = `Threshold and stale-sensor alerts on readings (an addition to v1; scopes \`alerts:read\` / \`alerts:write\`, personal keys only).
Rule ids start \`alr_\`, alert ids \`alt_\`.

A **rule** watches an environment (every device channel mapped to it with the rule's \`metric\`) or one device channel.
Each watched series (device, channel) is judged on its own and has its own alerts:
- **threshold**: a reading below \`min\` or above \`max\` starts an out-of-range window; when the series has stayed out
  for \`for_seconds\` (measured by the readings' timestamps, 0 = at once) the alert opens and
  \`environment.alert.triggered\` is sent. Nothing more is sent while it stays out. The first reading back inside
  [\`min\` + \`hysteresis\`, \`max\` − \`hysteresis\`] closes it (\`environment.alert.resolved\`). A reading back in range
  before \`for_seconds\` ends the window without an alert. Readings older than the newest one already judged for the
  series (late or backfilled) are stored but change no alert.
- **stale**: when the newest reading of a series is \`stale_after_seconds\` old, a stale alert opens
  (\`sensor_device.stale\`); the next reading closes it (\`sensor_device.recovered\`). Silence is looked for every 5 s.
Durations are whole seconds (\`for_seconds\`, \`stale_after_seconds\`).

Every event's \`data.object\` is the \`Alert\`: the rule as it was when the alert opened, the series, the time window
and the readings' values in it. Changing a rule's target or metric, or deleting it, closes its open alerts
(\`resolved_reason\` \`rule_changed\` / \`rule_deleted\`, with the closing event); removing its limits (or its
\`stale_after_seconds\`) closes the alerts of that kind. \`GET /environment/alerts\` lists open and past alerts for
integrators that catch up without webhooks.

Readings are judged in memory as each batch is durably stored, by the process that stored it. Kept in the database
and shared by all processes: rules, open alerts (at most one per rule, kind and series, so an opening or closing is
sent once however many processes see it), and which alerts are open. Kept per process and lost on restart: how
long a series has been out of range so far (with several processes, each judges \`for_seconds\` on the readings it
stored). Before calling a series stale a process asks the readings store, so a series whose readings another
process stored is not called stale. An account may hold ${MAX_RULES_PER_ACCOUNT} rules.`

const Seconds = (description: string, minimum: number) => JsonInteger({ minimum, maximum: 7 * 86_400, description })
const Name = t.String({ minLength: 1, maxLength: 100 })
const Channel = t.String({ minLength: 1, maxLength: 32, description: 'A channel key of the device (with `device_id`).' })
const Metric = t.String({ minLength: 1, maxLength: 50, description: 'A `/environment/metrics` id: the metric the rule watches.', examples: ['temperature'] })
const Limit = (which: string) => JsonNumber({ description: `Out of range ${which} this value.` })
const Hysteresis = JsonNumber({ minimum: 0, description: 'How far back inside the range a reading must be to close an open threshold alert (default 0).' })
const ForSeconds = Seconds('How long a series must stay out of range before the alert opens, in seconds (default 0: at once).', 0)
const StaleAfter = Seconds('A series with no reading for this many seconds is stale; null: not watched for silence.', 60)

const AlertRule = t.Object({
  id: IdOf('alertRule'),
  name: nullable(Name),
  environment_id: nullable(IdOf('environment', 'The environment watched (or null with device_id and channel).')),
  device_id: nullable(IdOf('device', 'The device watched, with channel (or null with environment_id).')),
  channel: nullable(Channel),
  metric: Metric,
  min: nullable(Limit('below')),
  max: nullable(Limit('above')),
  hysteresis: Hysteresis,
  for_seconds: ForSeconds,
  stale_after_seconds: nullable(StaleAfter),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/AlertRule' })

const optionalNullable = {
  name: t.Optional(nullable(Name)),
  environment_id: t.Optional(nullable(t.String({ maxLength: 40, description: 'An environment of this account (`env_…`).' }))),
  device_id: t.Optional(nullable(t.String({ maxLength: 40, description: 'A sensor device of this account (`dev_…`), with channel.' }))),
  channel: t.Optional(nullable(Channel)),
  min: t.Optional(nullable(Limit('below'))),
  max: t.Optional(nullable(Limit('above'))),
  stale_after_seconds: t.Optional(nullable(StaleAfter)),
}

const AlertRuleCreate = t.Object({
  metric: Metric,
  hysteresis: t.Optional(Hysteresis),
  for_seconds: t.Optional(ForSeconds),
  ...optionalNullable,
}, {
  additionalProperties: false, $id: '#/components/schemas/AlertRuleCreate',
  description: 'Either `environment_id`, or `device_id` with `channel`; and at least one of `min`, `max`, `stale_after_seconds`. `min` may not exceed `max`.',
})

const AlertRulePatch = t.Object({
  metric: t.Optional(Metric),
  hysteresis: t.Optional(nullable(Hysteresis, 'null resets to 0.')),
  for_seconds: t.Optional(nullable(ForSeconds, 'null resets to 0.')),
  ...optionalNullable,
}, { additionalProperties: false, $id: '#/components/schemas/AlertRulePatch', description: 'A JSON merge patch (RFC 7396): members present replace the current value; null clears it. The result is checked like a new rule.' })

const Kind = oneOf(ALERT_KINDS, 'threshold: the series left its range; stale: the series went silent.')
const State = oneOf(ALERT_STATES)
const Alert = t.Object({
  id: IdOf('alert'),
  rule_id: IdOf('alertRule'),
  kind: Kind,
  state: State,
  environment_id: nullable(IdOf('environment'), 'The environment the series maps to (null for an unmapped channel).'),
  device_id: IdOf('device'),
  channel: t.String(),
  metric: t.String(),
  rule: t.Object({
    id: IdOf('alertRule'), name: nullable(t.String()), min: nullable(JsonNumber()), max: nullable(JsonNumber()), hysteresis: JsonNumber(),
    for_seconds: JsonInteger(), stale_after_seconds: nullable(JsonInteger()),
  }, { description: 'The rule as it was when the alert opened.' }),
  triggered_at: Instant,
  window: t.Object({ from: Instant, to: Instant }, {
    description: 'threshold: from the first out-of-range reading to the one that opened the alert; stale: from the newest reading (or when watching began) to when the silence was noticed.',
  }),
  values: t.Object({
    first: nullable(JsonNumber()), last: nullable(JsonNumber()), min: nullable(JsonNumber()), max: nullable(JsonNumber()), count: nullable(JsonInteger()),
  }, { description: 'The readings in the window (threshold); for stale only `last`, the newest value before the silence (null if none was seen).' }),
  resolved_at: nullable(Instant, 'The reading that closed it, or when the rule change closed it.'),
  resolved_value: nullable(JsonNumber(), 'The value of the reading that closed it.'),
  resolved_reason: nullable(oneOf(ALERT_RESOLUTIONS), 'recovered: readings came back in range (or at all); rule_changed / rule_deleted: the rule stopped watching.'),
  created_at: Instant,
  updated_at: Instant,
}, { $id: '#/components/schemas/Alert', description: 'An alert, also the `data.object` of its webhook events.' })

const RuleIdParam = t.Object({ id: t.String({ description: 'An alert rule id (`alr_…`).' }) })
const AlertIdParam = t.Object({ id: t.String({ description: 'An alert id (`alt_…`).' }) })

const ruleId = (id: string) => {
  if (!isId('alertRule', id)) throw new ApiError('not_found', 'No such alert rule.')
  return id
}

export function alertsModule(deps: Deps) {
  return new Elysia({ name: 'alerts', prefix: API_PREFIX })
    .use(principalMacro)
    .get('/environment/alert-rules', ({ principal, query }) => listRules(deps, principal.accountId, query), {
      principal: true,
      query: RuleListQuery,
      response: { 200: PageOf(AlertRule) },
      detail: op({ operationId: 'listAlertRules', summary: 'List alert rules', description: 'Newest first. Deleted rules are not listed.', tags: ['Alerts'], scopes: ['alerts:read'] }),
    })
    .post('/environment/alert-rules', async (context) => {
      const { accountId } = context.principal
      const answer = await writeOnce(deps, context, (within) => createAlertRule(deps, accountId, context.body, within), (row: AlertRuleRow) => versioned(row, presentRule))
      if (context.set.status === 201) await announce(deps, accountId)
      return answer
    }, {
      principal: true,
      headers: IdempotencyHeaders,
      body: AlertRuleCreate,
      response: { 201: AlertRule },
      detail: op({ operationId: 'createAlertRule', summary: 'Create an alert rule', tags: ['Alerts'], etag: true, idempotent: true, scopes: ['alerts:write'], errors: [409, 422] }),
    })
    .get('/environment/alert-rules/:id', async ({ principal, params, set }) => {
      const row = await getRule(deps.database.db, principal.accountId, ruleId(params.id))
      if (!row) throw new ApiError('not_found', 'No such alert rule.')
      return versioned(row, presentRule)
    }, {
      principal: true,
      params: RuleIdParam,
      response: { 200: AlertRule },
      detail: op({ operationId: 'getAlertRule', summary: 'Get an alert rule', tags: ['Alerts'], etag: true, scopes: ['alerts:read'], errors: [404] }),
    })
    .patch('/environment/alert-rules/:id', async ({ principal, params, body, headers, set }) => {
      const row = await updateRule(deps, principal.accountId, ruleId(params.id), body, headers['if-match'] ?? null)
      return versioned(row, presentRule)
    }, {
      principal: true,
      params: RuleIdParam,
      headers: Preconditions,
      body: AlertRulePatch,
      response: { 200: AlertRule },
      detail: op({
        operationId: 'updateAlertRule',
        summary: 'Update an alert rule (JSON merge patch)', tags: ['Alerts'], etag: true, scopes: ['alerts:write'], errors: [404, 412, 422],
        accepts: ['application/merge-patch+json', 'application/json'],
      }),
    })
    .delete('/environment/alert-rules/:id', async ({ principal, params, headers, set }) => {
      await deleteRule(deps, principal.accountId, ruleId(params.id), headers['if-match'] ?? null)
      set.status = 204
    }, {
      principal: true,
      params: RuleIdParam,
      headers: Preconditions,
      response: { 204: t.Void({ description: 'Deleted.' }) },
      detail: op({ operationId: 'deleteAlertRule', summary: 'Delete an alert rule', description: 'Its open alerts close (`resolved_reason: rule_deleted`); its alerts stay listed.', tags: ['Alerts'], etag: true, scopes: ['alerts:write'], errors: [404, 412] }),
    })
    .get('/environment/alerts', ({ principal, query }) => listAlerts(deps, principal.accountId, query), {
      principal: true,
      query: t.Object({
        ...pageQuery(),
        state: t.Optional(State),
        kind: t.Optional(Kind),
        environment_id: t.Optional(t.String({ maxLength: 40 })),
        device_id: t.Optional(t.String({ maxLength: 40 })),
        rule_id: t.Optional(t.String({ maxLength: 40 })),
        updated_since: UpdatedSince,
      }),
      response: { 200: PageOf(Alert) },
      detail: op({ operationId: 'listAlerts', summary: 'List alerts', description: 'Open and past alerts, newest first; `state=open` gives the ones open now, `updated_since` what changed since a sync.', tags: ['Alerts'], scopes: ['alerts:read'] }),
    })
    .get('/environment/alerts/:id', async ({ principal, params }) => {
      const row = isId('alert', params.id) ? await getAlert(deps.database.db, principal.accountId, params.id) : undefined
      if (!row) throw new ApiError('not_found', 'No such alert.')
      return presentAlert(row)
    }, {
      principal: true,
      params: AlertIdParam,
      response: { 200: Alert },
      detail: op({ operationId: 'getAlert', summary: 'Get an alert', tags: ['Alerts'], scopes: ['alerts:read'], errors: [404] }),
    })
}
