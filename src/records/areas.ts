// The read-only areas of v1 (CONTRACT §5: no writes; every write is 405 with Allow). Each is declared once here:
// its table, its item schema, its filters. The routes, the importer and the demo data all read these declarations.
import { Elysia, t } from 'elysia'
import type { TObject, TSchema } from '@sinclair/typebox'
import type { Placeholder, SQL } from 'drizzle-orm'
import type { Scope } from '../auth/scopes.ts'
import type { Deps } from '../deps.ts'
import { op } from '../http/operation.ts'
import { API_PREFIX } from '../http/pipeline.ts'
import { principalMacro } from '../http/request.ts'
import { PageOf, pageQuery } from '../http/schemas.ts'
import type { IdKind } from '../ids.ts'
import { listPage, type KeysetTable } from './list.ts'
import { presentRow } from './rows.ts'

export interface ReadOnlyArea {
  /** The list's name in cursors and the importer's name for the area. */
  name: string
  path: string
  tag: string
  scope: Scope
  summary: string
  description: string
  idKind: IdKind
  table: KeysetTable
  item: TObject
  /** Query parameters beyond paging. */
  filters: Record<string, TSchema>
  /** Given each present filter as a placeholder (see list.ts). */
  conditions(bound: Record<string, Placeholder | undefined>): (SQL | undefined)[]
}

export const defineArea = (area: ReadOnlyArea) => area

/** `breeding-records` → `listBreedingRecords`: the operationId of an area's list. */
const listOperationId = (name: string) => `list${name.split('-').map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')}`

/** GET routes for read-only areas; their paths have no other methods, so writes get 405 from the pipeline. */
export function readOnlyRoutes(deps: Deps, areas: readonly ReadOnlyArea[]) {
  const app = new Elysia({ prefix: API_PREFIX }).use(principalMacro)
  for (const area of areas) {
    app.get(area.path, ({ principal, query }) => {
      const { limit, cursor, ...filters } = query as Record<string, any>
      return listPage(deps, {
        list: area.name, accountId: principal.accountId, table: area.table, filters, limit, cursor, conditions: area.conditions,
      }, presentRow)
    }, {
      principal: true,
      query: t.Object({ ...pageQuery(), ...area.filters }),
      response: { 200: PageOf(area.item) },
      detail: op({ operationId: listOperationId(area.name), summary: area.summary, description: `${area.description} Newest first. Read-only in v1: writes answer 405.`, tags: [area.tag], scopes: [area.scope] }),
    })
  }
  return app
}
