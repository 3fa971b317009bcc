// Activity types and the typed `details` each one carries (reference data; ids are readable slugs).
import { Type } from '@sinclair/typebox'
import { t, type TSchema } from 'elysia'

export interface ActivityTypeRecord {
  id: string
  name: string
  description: string
  /** The shape of an activity's `details` for this type. */
  details: TSchema
}

const strict = { additionalProperties: false } as const
// Plain JSON numbers: Elysia's t.Integer and t.Number also take number strings ("5"), which were stored as strings.
const Integer = Type.Integer
const JsonNumber = Type.Number

export const ACTIVITY_TYPES: readonly ActivityTypeRecord[] = [
  {
    id: 'cleaning', name: 'Cleaning', description: 'Enclosure cleaning.',
    details: t.Object({
      kind: t.Union([t.Literal('spot'), t.Literal('full'), t.Literal('water_change')]),
      substrate_changed: t.Optional(t.Boolean()),
      disinfectant: t.Optional(t.String({ maxLength: 100 })),
    }, strict),
  },
  {
    id: 'defecation', name: 'Defecation', description: 'Droppings observed (digestive health).',
    details: t.Object({
      urates: t.Optional(t.Union([t.Literal('normal'), t.Literal('discoloured'), t.Literal('absent')])),
      consistency: t.Optional(t.Union([t.Literal('normal'), t.Literal('loose'), t.Literal('hard')])),
    }, strict),
  },
  {
    id: 'feeding', name: 'Feeding', description: 'A meal offered, and whether it was taken.',
    details: t.Object({
      prey: t.String({ minLength: 1, maxLength: 100, description: 'e.g. mouse, rat, cricket, dubia roach, salad.' }),
      size: t.Optional(t.String({ maxLength: 50, description: 'e.g. pinky, fuzzy, adult, small.' })),
      count: Integer({ minimum: 1, maximum: 1000 }),
      state: t.Optional(t.Union([t.Literal('live'), t.Literal('pre_killed'), t.Literal('frozen_thawed')])),
      accepted: t.Boolean({ description: 'Whether the animal ate.' }),
    }, strict),
  },
  {
    id: 'handling', name: 'Handling', description: 'A handling session.',
    details: t.Object({
      minutes: t.Optional(Integer({ minimum: 0, maximum: 1440 })),
      temperament: t.Optional(t.Union([t.Literal('calm'), t.Literal('nervous'), t.Literal('defensive'), t.Literal('aggressive')])),
    }, strict),
  },
  {
    id: 'length', name: 'Length', description: 'A length measurement.',
    details: t.Object({
      millimetres: JsonNumber({ exclusiveMinimum: 0, maximum: 10_000 }),
      method: t.Optional(t.Union([t.Literal('snout_vent'), t.Literal('total'), t.Literal('carapace')])),
    }, strict),
  },
  {
    id: 'medication', name: 'Medication', description: 'A dose given.',
    details: t.Object({
      drug: t.String({ minLength: 1, maxLength: 100 }),
      dose: JsonNumber({ exclusiveMinimum: 0 }),
      unit: t.Union([t.Literal('mg'), t.Literal('ml'), t.Literal('mg/kg'), t.Literal('iu')]),
      route: t.Optional(t.Union([t.Literal('oral'), t.Literal('injection'), t.Literal('topical'), t.Literal('bath')])),
      condition_id: t.Optional(t.String({ description: 'The medical condition treated (`cnd_…`).' })),
    }, strict),
  },
  {
    id: 'note', name: 'Note', description: 'A free-form observation; the text goes in `notes`.',
    details: t.Object({}, strict),
  },
  {
    id: 'shed', name: 'Shed', description: 'A shed (ecdysis).',
    details: t.Object({
      complete: t.Boolean({ description: 'Came off in one piece, eye caps included.' }),
      quality: t.Optional(t.Union([t.Literal('good'), t.Literal('fair'), t.Literal('poor')])),
      assisted: t.Optional(t.Boolean()),
    }, strict),
  },
  {
    id: 'weight', name: 'Weight', description: "A weighing; updates the animal's latest weight.",
    details: t.Object({ grams: JsonNumber({ exclusiveMinimum: 0, maximum: 1_000_000 }) }, strict),
  },
]
