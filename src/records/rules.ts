// Rules a record must keep beyond its schema, each in one place: the API's services and the importer both call
// them (the importer reports at `/field` of a row, the API at `/body/field`, hence the path prefixes).
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { ACTIVITY_TYPES } from '../../db/reference/activity-types.ts'
import { SPECIES } from '../../db/reference/species.ts'
import type { FieldError } from '../http/errors.ts'
import { schemaErrors } from '../http/field-errors.ts'

/**
 * How far ahead of the server's clock a record of something that happened may lie: clock skew, not the future.
 * Activities (API and importer) and sensor readings alike.
 */
export const MAX_FUTURE_MS = 5 * 60 * 1000

/** The error for an occurrence (epoch ms) later than the skew allows, at `path`. */
export function futureError(ms: number, now: number, path: string): FieldError | undefined {
  return ms > now + MAX_FUTURE_MS ? { path, message: 'lies more than 5 minutes in the future' } : undefined
}

const speciesIds = new Set(SPECIES.map((s) => s.id))

/** The error for a species id the reference data does not know, at `path`. */
export function speciesError(speciesId: string, path: string): FieldError | undefined {
  return speciesIds.has(speciesId) ? undefined : { path, message: 'is not a known species id (see GET /species)' }
}

const detailCheckers = new Map<string, TypeCheck<any>>(ACTIVITY_TYPES.map((type) => [type.id, TypeCompiler.Compile(type.details)]))

/** An activity's `details` checked against its type's schema; an unknown type is reported at `paths.type`. */
export function activityDetailsErrors(type: string, details: unknown, paths: { type: string; details: string }): FieldError[] {
  const checker = detailCheckers.get(type)
  if (!checker) return [{ path: paths.type, message: 'is not an activity type (see GET /activity-types)' }]
  return schemaErrors(checker.Errors(details), paths.details)
}
