// Every read-only area, in the order the API reference lists them.
import { breedingRecordsArea, clutchesArea } from '../modules/breeding/areas.ts'
import { contactsArea, invoicesArea } from '../modules/customers/areas.ts'
import { documentsArea } from '../modules/documents/areas.ts'
import { environmentsArea } from '../modules/environment/areas.ts'
import { conditionsArea } from '../modules/medical/areas.ts'
import type { ReadOnlyArea } from './areas.ts'

export const READ_ONLY_AREAS: readonly ReadOnlyArea[] = [
  clutchesArea, breedingRecordsArea, conditionsArea, environmentsArea, documentsArea, contactsArea, invoicesArea,
]
