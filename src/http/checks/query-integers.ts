// After step 4, once the route is known: an integer in a query string is decimal digits (`limit=25`). Elysia reads
// query integers with Number(), which also takes `0x10`, `1e2`, `+5`, ` 5` and `5.0`; such a value is refused here,
// naming the parameter, before the schema (which then checks the bounds) sees the number it was turned into.
import { ApiError } from '../errors.ts'
import { queryOf } from '../request-url.ts'
import type { ApiRoute } from '../route-table.ts'

const DECIMAL_INTEGER = /^-?[0-9]+$/

export function checkQueryIntegers(url: string, route: ApiRoute): void {
  if (route.integerQuery.length === 0) return
  const query = queryOf(url)
  if (query === '') return
  const params = new URLSearchParams(query)
  const errors = route.integerQuery
    .filter(({ name }) => params.getAll(name).some((value) => !DECIMAL_INTEGER.test(value)))
    .map(({ name, message }) => ({ path: `/query/${name}`, message }))
  if (errors.length) throw new ApiError('invalid_parameter', `Integers in the query string are written in decimal digits (${errors.map((e) => e.path.slice('/query/'.length)).join(', ')}).`, { errors })
}
