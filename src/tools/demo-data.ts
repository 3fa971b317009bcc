// Demo data: a breeder's collection with ~18 months of history, generated deterministically from a seed so a demo
// account (and a test) looks the same every time. Everything goes through the importer, so the demo data passes the
// same validation and foreign keys as an operator's import, in one transaction.
//
// `generateDemoData` reads as the list of steps. Every step draws from one seeded random source, so the ORDER of the
// steps and of the draws inside each is part of the output: reordering them changes the collection a seed gives.
import type { InvoiceLine } from '../../db/schema/index.ts'
import type { Deps } from '../deps.ts'
import { idAt, newId } from '../ids.ts'
import {
  CONDITIONS, FIRST_NAMES, LAST_NAMES, NOTES, PET_NAMES, PLACES, PROFILES, RACKS, STREETS, commonName, groupOf, slug, title,
  type Profile, type RackKey,
} from './demo/catalogue.ts'
import { Rng } from './demo/random.ts'
import { accountHasAnimals, importArea, importRecordsIn } from './importer.ts'

const DAY = 86_400_000
const HOUR = 3_600_000
/** How far back the history reaches. */
const HISTORY_DAYS = 548

const iso = (ms: number) => new Date(ms).toISOString()
const dateOf = (ms: number) => iso(ms).slice(0, 10)
const startOfDay = (ms: number) => Math.floor(ms / DAY) * DAY
const roundTo = (value: number, step: number) => Math.round(value / step) * step
/** One decimal, exactly as typed on a scale (41.4, not 41.400000000000006). */
const oneDecimal = (value: number) => Math.round(value * 10) / 10

type Row = Record<string, unknown>
type Status = 'active' | 'sold' | 'deceased' | 'on_loan'

interface DemoAnimal {
  id: string
  profile: Profile
  name: string
  reference_id: string
  sex: 'male' | 'female' | 'unknown'
  born: number
  acquired: number | null
  /** Individual size: adult weight in g. */
  adultGrams: number
  traits: string[]
  morph: string | null
  dam_id: string | null
  sire_id: string | null
  status: Status
  /** When the animal left (sold, died, went on loan); null while it is here. */
  endedAt: number | null
  tags: string[]
  notes: string | null
  metadata: Record<string, string>
  environment_id: string | null
  bred: boolean
  weight: { grams: number; at: string } | null
}

export interface DemoOptions {
  seed?: number
  /** How many animals (default 300). */
  animals?: number
  /** The moment the history ends (default: now); fixed in tests so two runs match. */
  now?: Date
}

export type DemoData = Record<'environments' | 'contacts' | 'animals' | 'breeding-records' | 'clutches' | 'conditions' | 'activities' | 'invoices' | 'documents', Row[]>
/** The order that satisfies the foreign keys. */
const INSERT_ORDER: (keyof DemoData)[] = ['environments', 'contacts', 'animals', 'breeding-records', 'clutches', 'conditions', 'activities', 'invoices', 'documents']

/** Builds the collection in memory; deterministic for a seed and `now`, except the ids' random parts (fresh, so fills never clash). */
export function generateDemoData(options: DemoOptions = {}): DemoData {
  const demo = new Demo(options)
  const contacts = addContacts(demo)
  const herd = new Herd(demo, contacts)
  const founderCount = addFounders(demo, herd)
  const incubators = addBreedingSeasons(demo, herd, founderCount)
  buyInTheRest(demo, herd)
  settleStatuses(demo, herd, contacts)
  addInvoices(demo, herd.animals, contacts)
  addHousing(demo, herd.animals, incubators)
  const medications = addConditions(demo, herd.animals, contacts)
  addActivities(demo, herd.animals, medications)
  addDocuments(demo, herd.animals, contacts)
  addAnimalRows(demo, herd.animals)
  return idsFromCreationTimes(demo.out)
}

/**
 * Lists are newest first by id (ids sort by creation time), but most records here are made before their backdated
 * `created_at` is known (an animal's id is needed for its parents, log and invoices long before its row), so they
 * get a stand-in id. Now every row gets an id made for its own `created_at`, and every reference is renamed to match,
 * so that list order and timestamps agree. Stand-ins are fresh ULIDs, so no other string can equal one.
 */
function idsFromCreationTimes(out: DemoData): DemoData {
  const renamed = new Map<string, string>()
  for (const area of INSERT_ORDER) {
    const kind = importArea(area)!.idKind
    for (const row of out[area]) {
      const id = idAt(kind, Date.parse(row.created_at as string))
      if (row.id) renamed.set(row.id as string, id)
      row.id = id
    }
  }
  const rename = (value: unknown): unknown =>
    typeof value === 'string' ? renamed.get(value) ?? value
      : Array.isArray(value) ? value.map(rename)
        : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rename(v)]))
          : value
  for (const area of INSERT_ORDER) {
    for (const row of out[area]) for (const [field, value] of Object.entries(row)) if (field !== 'id') row[field] = rename(value)
  }
  return out
}

/**
 * Fills an account that has no animals yet with a generated collection, in one transaction (all of it or none).
 * Returns how many records of each area it wrote.
 */
export async function fillDemoAccount(deps: Pick<Deps, 'database'>, accountId: string, options: DemoOptions = {}): Promise<Record<keyof DemoData, number>> {
  if (await accountHasAnimals(deps.database.db, accountId)) throw new Error(`account ${accountId} already has animals; demo data goes into an empty account`)
  const data = generateDemoData(options)
  await deps.database.db.transaction(async (tx) => {
    for (const area of INSERT_ORDER) await importRecordsIn(tx, accountId, area, data[area])
  })
  return Object.fromEntries(INSERT_ORDER.map((area) => [area, data[area].length])) as Record<keyof DemoData, number>
}

// ---------------------------------------------------------------------------------------------------------------
// What every step shares: the random source, the clock, the size asked for, and the rows made so far.

class Demo {
  readonly rng: Rng
  /** How many animals the collection ends with. */
  readonly target: number
  readonly now: number
  readonly today: number
  readonly historyStart: number
  readonly out: DemoData = { environments: [], contacts: [], animals: [], 'breeding-records': [], clutches: [], conditions: [], activities: [], invoices: [], documents: [] }

  constructor(options: DemoOptions) {
    this.rng = new Rng(options.seed ?? 1)
    this.target = Math.max(1, Math.floor(options.animals ?? 300))
    this.now = (options.now ?? new Date()).getTime()
    this.today = startOfDay(this.now)
    this.historyStart = this.today - HISTORY_DAYS * DAY
  }

  /** An instant on day `ms` between the given hours (UTC), never after now. */
  onDay(ms: number, fromHour: number, toHour: number) { return Math.min(startOfDay(ms) + this.rng.float(fromHour, toHour) * HOUR, this.now - HOUR) }

  stamps(created: number, updated = created) {
    return { created_at: iso(Math.min(created, this.now)), updated_at: iso(Math.min(Math.max(created, updated), this.now)) }
  }

  /** The span in which an animal's log can have entries: from arrival (two weeks old at least) until it left. */
  lifeOf(a: DemoAnimal): [number, number] {
    return [Math.max(a.acquired ?? a.born, this.historyStart, a.born + 14 * DAY), Math.min(a.endedAt ?? this.now, this.now - HOUR)]
  }

  /** A document row: a receipt, permit, pedigree, contract, photo or vet report. */
  document(kind: string, docTitle: string, fileName: string, contentType: string, animalId: string | null, contactId: string | null, issued: number): Row {
    const size = contentType === 'application/pdf' ? this.rng.int(40_000, 900_000) : this.rng.int(1_500_000, 6_000_000)
    return {
      id: newId('document'), title: docTitle, kind, animal_id: animalId, contact_id: contactId, file_name: fileName, content_type: contentType, size_bytes: size,
      sha256: this.rng.hex(64), url: `https://files.example.com/demo/${fileName}`, issued_on: dateOf(issued), notes: null, ...this.stamps(this.onDay(issued, 9, 20)),
    }
  }
}

/** An animal's weight on a day: it approaches its adult weight as 1 - e^(-age/tau). */
function weightAt(a: DemoAnimal, at: number) {
  const [h0, h1] = a.profile.hatchling
  const start = (h0 + h1) / 2
  return a.adultGrams - (a.adultGrams - start) * Math.exp(-(at - a.born) / DAY / a.profile.tau)
}

// ---------------------------------------------------------------------------------------------------------------
// Contacts: customers, vets, suppliers, fellow breeders.

interface Contacts {
  all: { id: string; kind: string; name: string; company: string | null }[]
  vets: string[]
  /** "Name (practice)", in the order of `vets`, as a condition names its veterinarian. */
  vetNames: string[]
  suppliers: string[]
  breeders: string[]
  customers: string[]
  /** Contact id → the company (or the person's name). */
  nameOf: Map<string, string>
}

function addContacts(demo: Demo): Contacts {
  const { rng, out } = demo
  const all: Contacts['all'] = []
  const addContact = (kind: string, name: string, company: string | null, extra: Row = {}) => {
    const [city, region, postal, country] = rng.pick(PLACES)
    const id = newId('contact')
    const email = `${slug(name).replace(/-/g, '.')}@${rng.pick(['example.com', 'example.org', 'example.net'])}`
    all.push({ id, kind, name, company })
    out.contacts.push({
      id, name, company, kind, email, phone: `+${country === 'DE' ? '49' : country === 'NL' ? '31' : country === 'AT' ? '43' : '32'} ${rng.int(150, 179)} ${rng.int(1_000_000, 9_999_999)}`,
      address_line1: `${rng.pick(STREETS)} ${rng.int(1, 120)}`, city, region, postal_code: postal, country, tags: [], notes: null,
      ...demo.stamps(demo.historyStart - rng.int(30, 900) * DAY), ...extra,
    })
    return id
  }
  const vets = [
    addContact('veterinarian', 'Dr. Miriam Hofmann', 'Tierarztpraxis für Exoten Hofmann', { tags: ['reptile vet'], notes: 'Emergency line on weekends.' }),
    addContact('veterinarian', 'Dr. Stefan Lorenz', 'Kleintierklinik am Park', { tags: ['reptile vet', 'surgery'] }),
    addContact('veterinarian', 'Dr. Aylin Demir', 'Reptile & Amphibian Clinic', { tags: ['reptile vet'] }),
  ]
  const vetNames = out.contacts.filter((c) => c.kind === 'veterinarian').map((c) => `${c.name} (${c.company})`)
  const suppliers = [
    addContact('supplier', 'Frostfutter Express', 'Frostfutter Express GmbH', { tags: ['frozen rodents'], notes: 'Standing order every 6 weeks.' }),
    addContact('supplier', 'Insektenfarm Becker', 'Insektenfarm Becker', { tags: ['live feeders'] }),
    addContact('supplier', 'TerraTech Supplies', 'TerraTech Supplies B.V.', { tags: ['equipment', 'racks'] }),
  ]
  const breeders = [
    ['Jan de Vries', 'Dutch Royal Pythons'], ['Lukas Berger', 'Berger Reptiles'], ['Sophie Martin', 'Gecko Garden'],
    ['Tom Hansen', 'Nordic Colubrids'], ['Elena Rossi', 'Rossi Dragons'], ['Pieter Peeters', 'Hognose Haven'],
  ].map(([name, company]) => addContact('breeder', name!, company!, { tags: ['breeder'] }))
  addContact('other', 'Terraristika Hamm', 'Terraristika Hamm Messe', { tags: ['expo'], notes: 'Expo four times a year; table booked for March and December.' })
  const customerCount = Math.max(4, Math.round(demo.target / 7))
  const customers = Array.from({ length: customerCount }, () => {
    const name = `${rng.pick(FIRST_NAMES)} ${rng.pick(LAST_NAMES)}`
    return addContact('customer', name, null, { tags: rng.chance(0.25) ? ['repeat buyer'] : rng.chance(0.2) ? ['expo'] : [] })
  })
  const nameOf = new Map(all.map((c) => [c.id, c.company ?? c.name]))
  return { all, vets, vetNames, suppliers, breeders, customers, nameOf }
}

// ---------------------------------------------------------------------------------------------------------------
// The herd: how an animal is made (name, reference id, size, genes, morph), bought in, or bred from two parents.

class Herd {
  readonly animals: DemoAnimal[] = []
  readonly byShare = PROFILES.map((p) => [p, p.share] as const)
  // Names are dealt from a shuffled deck; once it runs out, the second round are "II"s (as keepers do).
  private deck: string[] = []
  private round = 0
  private readonly serial = new Map<string, number>()

  constructor(private readonly demo: Demo, private readonly contacts: Contacts) {}

  petName() {
    if (!this.deck.length) { this.deck = this.demo.rng.shuffle(PET_NAMES); this.round++ }
    const name = this.deck.pop()!
    return this.round === 1 ? name : `${name} ${['II', 'III', 'IV', 'V'][this.round - 2] ?? this.round}`
  }

  private nextRef(code: string) {
    const n = (this.serial.get(code) ?? 0) + 1
    this.serial.set(code, n)
    return `${code}-${String(n).padStart(3, '0')}`
  }

  /** A founder's genes; a hatchling's come from its parents. */
  private randomGenes(p: Profile): string[] {
    const { rng } = this.demo
    if (!p.genes) return []
    const traits: string[] = []
    for (const gene of rng.shuffle(p.genes.codom).slice(0, rng.weighted([[0, 4], [1, 4], [2, 3], [3, 1]]))) traits.push(gene)
    const recessive = rng.shuffle(p.genes.recessive)
    const kind = rng.weighted([['none', 4], ['visual', 2], ['het', 3], ['possible', 1]] as const)
    if (kind === 'visual' && recessive[0]) traits.push(recessive[0])
    if (kind === 'het' && recessive[0]) traits.push(`het ${recessive[0]}`)
    if (kind === 'possible' && recessive[0]) traits.push(`66% het ${recessive[0]}`)
    return traits
  }

  private pattern(p: Profile) { return p.genes?.pattern ? this.demo.rng.pick(p.genes.pattern) : '' }

  private morphOf(p: Profile, traits: string[], base: string): string | null {
    if (!p.genes) return null
    const visual = traits.filter((t) => !t.includes('het'))
    if (p.id === 'pantherophis-guttatus' && visual.includes('amel') && visual.includes('anery')) {
      visual.splice(visual.indexOf('amel'), 1, 'snow'); visual.splice(visual.indexOf('anery'), 1)
    }
    return title([base, ...visual].filter(Boolean).join(' ')) || 'Normal'
  }

  add(p: Profile, fields: Partial<DemoAnimal> & Pick<DemoAnimal, 'born' | 'sex'>): DemoAnimal {
    const traits = fields.traits ?? this.randomGenes(p)
    const a: DemoAnimal = {
      id: newId('animal'), profile: p, name: '', reference_id: this.nextRef(p.code), acquired: null,
      adultGrams: this.demo.rng.around((p.adult[0] + p.adult[1]) / 2, 0.18) * (fields.sex === 'male' ? p.male : 1),
      traits, morph: this.morphOf(p, traits, this.pattern(p)), dam_id: null, sire_id: null, status: 'active', endedAt: null, tags: [], notes: null,
      metadata: {}, environment_id: null, bred: false, weight: null, ...fields,
    }
    a.name ||= this.petName()
    this.animals.push(a)
    return a
  }

  /** An animal bought in before or during the history, or (given its parents) bred here before the history began. */
  addFounder(p: Profile, ownBredFrom?: { dam: DemoAnimal; sire: DemoAnimal }) {
    const { rng, today, historyStart } = this.demo
    const sex = rng.chance(0.5) ? 'female' : 'male'
    if (ownBredFrom) {
      // Bred here a season or two before the history starts: kept back from a clutch of two founders that were
      // adult and already here.
      const { dam, sire } = ownBredFrom
      const earliest = Math.max(dam.acquired ?? dam.born, sire.acquired ?? sire.born) + 200 * DAY
      const born = rng.int(Math.max(earliest, dam.born + 600 * DAY, sire.born + 600 * DAY), historyStart - 60 * DAY)
      return this.add(p, {
        sex, born, dam_id: ownBredFrom.dam.id, sire_id: ownBredFrom.sire.id, traits: this.inherit(p, ownBredFrom.dam, ownBredFrom.sire),
        tags: ['holdback'], metadata: { origin: 'bred here' },
      })
    }
    const born = today - rng.int(300, 2900) * DAY
    const acquired = Math.max(born + rng.int(70, 200) * DAY, today - rng.int(20, 2200) * DAY)
    const seller = rng.chance(0.7) ? rng.pick(this.contacts.breeders) : null
    return this.add(p, {
      sex, born, acquired,
      metadata: { origin: 'captive bred', source: seller ? this.contacts.nameOf.get(seller)! : 'Terraristika Hamm', ...(p.id === 'testudo-hermanni' ? { microchip: `276098100${rng.int(100_000, 999_999)}` } : {}) },
      notes: seller ? null : 'Bought at the Hamm expo.',
    })
  }

  /** Codominant genes pass with a 50% chance; a visual recessive makes hets, a het makes possible hets. */
  inherit(p: Profile, dam: DemoAnimal, sire: DemoAnimal): string[] {
    const { rng } = this.demo
    const traits = new Set<string>()
    for (const parent of [dam, sire]) for (const t of parent.traits) if (p.genes?.codom.includes(t) && rng.chance(0.5)) traits.add(t)
    for (const gene of p.genes?.recessive ?? []) {
      const carries = (a: DemoAnimal) => (a.traits.includes(gene) ? 2 : a.traits.includes(`het ${gene}`) ? 1 : 0)
      const [d, s] = [carries(dam), carries(sire)]
      if (d === 2 && s === 2) traits.add(gene)
      else if (d + s === 3) traits.add(rng.chance(0.5) ? gene : `het ${gene}`)
      else if (d === 2 || s === 2) traits.add(`het ${gene}`)
      else if (d === 1 && s === 1) traits.add(rng.chance(0.25) ? gene : `66% het ${gene}`)
      else if (d + s === 1) traits.add(`50% het ${gene}`)
    }
    return [...traits]
  }
}

/** Half the animal count are founders: bought in, or bred here from two founders before the history began. Returns how many. */
function addFounders(demo: Demo, herd: Herd): number {
  const { rng, historyStart } = demo
  const founderCount = Math.max(1, Math.round(demo.target * 0.5))
  for (let i = 0; i < founderCount; i++) {
    const p = rng.weighted(herd.byShare)
    const adults = herd.animals.filter((a) => a.profile === p && !a.dam_id && (a.acquired ?? a.born) < historyStart - 800 * DAY && a.born < historyStart - 900 * DAY)
    const dam = adults.find((a) => a.sex === 'female'), sire = adults.find((a) => a.sex === 'male')
    herd.addFounder(p, p.eggs && dam && sire && rng.chance(0.3) ? { dam, sire } : undefined)
  }
  return founderCount
}

/** Whatever the clutches left of the animal count is bought in. */
function buyInTheRest(demo: Demo, herd: Herd) {
  while (herd.animals.length < demo.target) herd.addFounder(demo.rng.weighted(herd.byShare))
}

// ---------------------------------------------------------------------------------------------------------------
// Breeding: pairings per species and season, their clutches, and the hatchlings they gave.

/** Incubation temperature → incubator id; the incubators themselves are made with the rooms. */
type Incubators = Map<number, string>
const incubatorFor = (incubators: Incubators, temp: number) => { let id = incubators.get(temp); if (!id) incubators.set(temp, id = newId('environment')); return id }

function addBreedingSeasons(demo: Demo, herd: Herd, founderCount: number): Incubators {
  const breeding = new Breeding(demo, herd, founderCount)
  const thisYear = new Date(demo.today).getUTCFullYear()
  for (const season of [thisYear - 1, thisYear]) {
    for (const p of breeding.profiles) breeding.season(p, season)
  }
  return breeding.incubators
}

class Breeding {
  readonly incubators: Incubators = new Map()
  readonly profiles = PROFILES.filter((p) => p.eggs)
  private readonly shareSum = this.profiles.reduce((s, p) => s + p.share, 0)
  /** Hatchlings the animal count still has room for, overall and for the species whose season runs. */
  private animalsLeft: number
  private speciesLeft = 0
  /** Numbers clutches across species and seasons, for the hatchlings' reference ids. */
  private clutchSeq = 0

  constructor(private readonly demo: Demo, private readonly herd: Herd, private readonly founderCount: number) {
    this.animalsLeft = demo.target - herd.animals.length
  }

  /** One species' season: about half its adult females are paired with a male in time for the usual laying month. */
  season(p: Profile, season: number) {
    const { rng, now, historyStart } = this.demo
    const eggs = p.eggs!
    this.speciesLeft = Math.round((this.demo.target - this.founderCount) / 2 * (p.share / this.shareSum))
    const layTarget = Date.UTC(season, eggs.layMonth, rng.int(1, 28))
    const pairedTarget = layTarget - eggs.lead * DAY
    if (pairedTarget < historyStart - 60 * DAY) return
    const animals = this.herd.animals
    const females = rng.shuffle(animals.filter((a) => a.profile === p && a.sex === 'female' && a.born < pairedTarget - 600 * DAY && (a.acquired ?? a.born) < pairedTarget))
    const males = animals.filter((a) => a.profile === p && a.sex === 'male' && a.born < pairedTarget - 450 * DAY && (a.acquired ?? a.born) < pairedTarget)
    if (!males.length) return
    for (const dam of females.slice(0, Math.max(1, Math.round(females.length * 0.45)))) {
      const paired = pairedTarget + rng.int(-20, 20) * DAY
      // Pairings whose eggs would have hatched by now stop when the animal count is spent.
      if ((this.animalsLeft <= 0 || this.speciesLeft <= 0) && paired + (eggs.lead + eggs.days) * DAY < now) break
      const sire = rng.pick(males)
      const { recordId, status, laid } = this.pairing(p, season, dam, sire, paired)
      if (status === 'laid') this.clutches(p, recordId, dam, sire, laid)
    }
  }

  /** The breeding record of one pair; its status follows from where today falls in the pairing → laying timeline. */
  private pairing(p: Profile, season: number, dam: DemoAnimal, sire: DemoAnimal, paired: number) {
    const { rng, now } = this.demo
    const eggs = p.eggs!
    dam.bred = sire.bred = true
    const ovulation = p.id === 'python-regius' ? paired + rng.int(90, 120) * DAY : null
    const preLayShed = ovulation ? ovulation + rng.int(14, 20) * DAY : null
    const laid = preLayShed ? preLayShed + rng.int(28, 32) * DAY : paired + eggs.lead * DAY + rng.int(-7, 7) * DAY
    const failed = rng.chance(0.12)
    const status = paired > now ? 'planned' : laid > now ? (ovulation && ovulation <= now ? 'gravid' : 'paired') : failed ? 'unsuccessful' : 'laid'
    const recordId = newId('breeding')
    this.demo.out['breeding-records'].push({
      id: recordId, species_id: p.id, dam_id: dam.id, sire_id: sire.id, season, status,
      paired_on: status === 'planned' ? null : dateOf(paired),
      separated_on: status === 'planned' || paired + 35 * DAY > now ? null : dateOf(paired + rng.int(20, 40) * DAY),
      locks_observed: status === 'planned' ? 0 : rng.int(0, p.code === 'BP' ? 6 : 3),
      ovulation_on: ovulation && ovulation <= now && status !== 'unsuccessful' ? dateOf(ovulation) : null,
      pre_lay_shed_on: preLayShed && preLayShed <= now && status !== 'unsuccessful' ? dateOf(preLayShed) : null,
      notes: status === 'unsuccessful' ? rng.pick(['No locks seen; female not interested.', 'Follicles reabsorbed.', 'Paired twice, no ovulation.']) : null,
      ...this.demo.stamps(status === 'planned' ? now - rng.int(2, 30) * DAY : paired, Math.min(laid, now)),
    })
    return { recordId, status, laid }
  }

  /** The clutches of one breeding record (geckos lay several a season), each incubated and, if it hatched, its hatchlings. */
  private clutches(p: Profile, recordId: string, dam: DemoAnimal, sire: DemoAnimal, laid: number) {
    const { rng, now } = this.demo
    const eggs = p.eggs!
    for (let k = 0; k < eggs.perRecord; k++) {
      const laidOn = laid + k * rng.int(21, 30) * DAY
      if (laidOn > now) break
      let eggCount = rng.int(...eggs.count)
      const slugs = Math.min(eggCount - 1, rng.weighted([[0, 5], [1, 3], [2, 1]]))
      let fertile = eggCount - slugs
      const expected = laidOn + eggs.days * DAY
      const hatchedOn = expected + rng.int(-4, 4) * DAY
      const clutchFailed = rng.chance(0.06)
      const hatched = hatchedOn <= now - DAY
      let hatchedCount = hatched && !clutchFailed ? Math.max(1, fertile - rng.weighted([[0, 6], [1, 3], [2, 1]])) : null
      // The animal count is fixed: the clutch that reaches it is smaller, later pairings keep their eggs.
      // The species' share of it keeps one prolific species from crowding out the rest (but a clutch is a clutch).
      const allowance = Math.min(this.animalsLeft, Math.max(this.speciesLeft, eggs.count[0]))
      if (hatchedCount !== null && hatchedCount > allowance) {
        if (allowance <= 0) break
        hatchedCount = allowance
        fertile = Math.min(fertile, hatchedCount + 1)
        eggCount = fertile + slugs
      }
      const clutchStatus = clutchFailed && hatchedOn <= now ? 'failed' : hatched ? 'hatched' : 'incubating'
      const clutchId = newId('clutch')
      this.clutchSeq++
      this.demo.out.clutches.push({
        id: clutchId, breeding_record_id: recordId, species_id: p.id, dam_id: dam.id, sire_id: sire.id, status: clutchStatus,
        laid_on: dateOf(laidOn), egg_count: eggCount,
        fertile_count: fertile, slug_count: slugs, hatched_count: clutchStatus === 'hatched' ? hatchedCount : clutchStatus === 'failed' ? 0 : null,
        incubator_id: incubatorFor(this.incubators, eggs.temp), incubation_temperature_c: eggs.temp, expected_hatch_on: dateOf(expected),
        hatched_on: clutchStatus === 'hatched' ? dateOf(hatchedOn) : null,
        notes: clutchStatus === 'failed' ? 'Eggs collapsed in week three; incubator humidity too low.' : null,
        ...this.demo.stamps(this.demo.onDay(laidOn, 8, 20), this.demo.onDay(clutchStatus === 'incubating' ? laidOn : hatchedOn, 8, 20)),
      })
      if (clutchStatus === 'hatched') this.hatchlings(p, dam, sire, hatchedOn, hatchedCount!)
    }
  }

  /** A hatched clutch's young, named and numbered after the clutch (BP25-03-01) until they are old enough for a name. */
  private hatchlings(p: Profile, dam: DemoAnimal, sire: DemoAnimal, hatchedOn: number, count: number) {
    const { rng, now } = this.demo
    const yy = String(new Date(hatchedOn).getUTCFullYear()).slice(2)
    const clutch = `${yy}-${String(this.clutchSeq).padStart(2, '0')}`
    for (let n = 1; n <= count; n++) {
      const ageDays = (now - hatchedOn) / DAY
      const a = this.herd.add(p, {
        sex: ageDays < 60 ? 'unknown' : rng.chance(0.5) ? 'female' : 'male', born: hatchedOn,
        traits: this.herd.inherit(p, dam, sire), dam_id: dam.id, sire_id: sire.id, metadata: { origin: 'bred here', clutch: `${p.code}${clutch}` },
        name: `${p.code} ${clutch} #${n}`,
      })
      a.reference_id = `${p.code}${clutch}-${String(n).padStart(2, '0')}`
      this.animalsLeft--; this.speciesLeft--
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Status: most animals are here; hatchlings are sold, some animals died, a few males are out on breeding loan.

function settleStatuses(demo: Demo, herd: Herd, contacts: Contacts) {
  const { rng, now, historyStart } = demo
  for (const a of herd.animals) {
    const since = a.acquired ?? a.born
    const hatchling = Boolean(a.dam_id) && a.born >= historyStart
    if (a.bred) { a.tags.push('breeder'); continue }
    if (hatchling) {
      const age = (now - a.born) / DAY
      const r = rng.float()
      if (age > 20 && r < 0.06) { a.status = 'deceased'; a.endedAt = a.born + rng.int(12, Math.min(70, Math.floor(age) - 1)) * DAY; a.notes = 'Failure to thrive: never took a meal.' }
      else if (age > 75 && r < 0.64) { a.status = 'sold'; a.endedAt = Math.min(a.born + rng.int(70, 200) * DAY, now - rng.int(2, 20) * DAY) }
      else if (r < 0.74 && age > 60) { a.tags.push('holdback'); a.name = herd.petName() }
      else if (age > 60) a.tags.push('for sale')
      continue
    }
    const r = rng.float()
    const earliest = Math.max(since, historyStart) + 20 * DAY
    if (earliest >= now - 10 * DAY) { if (since > now - 60 * DAY) a.tags.push('quarantine'); continue }
    const when = () => rng.int(earliest, now - 5 * DAY)
    if (r < 0.05) { a.status = 'deceased'; a.endedAt = when(); a.notes = rng.pick(['Found dead in the morning; no signs of illness.', 'Euthanised on veterinary advice.', 'Old age.']) }
    else if (r < 0.10) { a.status = 'sold'; a.endedAt = when(); a.notes = 'Rehomed.' }
    else if (r < 0.15 && a.sex === 'male') {
      a.status = 'on_loan'; a.endedAt = when()
      a.notes = `On breeding loan to ${contacts.nameOf.get(rng.pick(contacts.breeders))} since ${dateOf(a.endedAt)}.`
    } else if (since > now - 60 * DAY) a.tags.push('quarantine')
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Sales: sold animals grouped into invoices for customers; a couple of draft invoices reserve animals.

interface Sale { customer: string; issued: number; items: DemoAnimal[]; status: 'paid' | 'open' | 'draft' }

function addInvoices(demo: Demo, animals: DemoAnimal[], contacts: Contacts) {
  const { rng } = demo
  const invoiceNumbers = new Map<number, number>()
  const nextNumber = (at: number) => {
    const year = new Date(at).getUTCFullYear()
    const n = (invoiceNumbers.get(year) ?? 0) + 1
    invoiceNumbers.set(year, n)
    return `INV-${year}-${String(n).padStart(4, '0')}`
  }
  for (const sale of groupSales(demo, animals, contacts.customers).sort((x, y) => x.issued - y.issued)) {
    const lines: InvoiceLine[] = sale.items.map((a) => { const unit = priceOf(rng, a); return { description: describe(a), quantity: 1, unit_amount: unit, amount: unit, animal_id: a.id } })
    if (rng.chance(0.4)) lines.push({ description: 'Shipping (overnight, insulated box with heat pack)', quantity: 1, unit_amount: 3900, amount: 3900, animal_id: null })
    const subtotal = lines.reduce((s, l) => s + l.amount, 0)
    const tax = Math.round(subtotal * 0.19)
    const invoice = (status: string, number: string, notes: string | null) => ({
      id: newId('invoice'), number, contact_id: sale.customer, status, currency: 'EUR', issued_on: dateOf(sale.issued),
      due_on: dateOf(sale.issued + 14 * DAY), paid_at: status === 'paid' ? iso(demo.onDay(sale.issued + rng.int(0, 6) * DAY, 18, 22)) : null,
      line_items: lines, subtotal, tax, total: subtotal + tax, notes, ...demo.stamps(demo.onDay(sale.issued, 9, 18)),
    })
    if (rng.chance(0.04)) {
      const voided = nextNumber(sale.issued)
      const number = nextNumber(sale.issued)
      demo.out.invoices.push(invoice('void', voided, `Issued with the wrong address; replaced by ${number}.`))
      demo.out.invoices.push(invoice(sale.status, number, null))
    } else demo.out.invoices.push(invoice(sale.status, nextNumber(sale.issued), sale.status === 'draft' ? 'Reserved; deposit expected.' : null))
  }
}

/** Animals sold within ten days of each other sometimes go to one customer; two animals for sale are reserved. */
function groupSales(demo: Demo, animals: DemoAnimal[], customers: string[]): Sale[] {
  const { rng, now } = demo
  const sold = animals.filter((a) => a.status === 'sold').sort((x, y) => x.endedAt! - y.endedAt!)
  const sales: Sale[] = []
  for (const a of sold) {
    const last = sales.at(-1)
    if (last && last.items.length < 3 && a.endedAt! - last.issued < 10 * DAY && rng.chance(0.35)) { a.endedAt = last.issued; last.items.push(a); continue }
    sales.push({ customer: rng.pick(customers), issued: a.endedAt!, items: [a], status: a.endedAt! > now - 14 * DAY && rng.chance(0.5) ? 'open' : 'paid' })
  }
  for (const a of animals.filter((x) => x.tags.includes('for sale')).slice(0, 2)) {
    a.tags.splice(a.tags.indexOf('for sale'), 1, 'reserved')
    sales.push({ customer: rng.pick(customers), issued: now - rng.int(1, 6) * DAY, items: [a], status: 'draft' })
  }
  return sales
}

/** Cents: the species' price range, raised by each visual gene and (less) by each het. */
function priceOf(rng: Rng, a: DemoAnimal) {
  const [lo, hi] = a.profile.price
  const visual = a.traits.filter((t) => !t.includes('het')).length, hets = a.traits.length - visual
  return roundTo(rng.float(lo, hi) * (1 + 0.7 * visual + 0.25 * hets), 5) * 100
}

const describe = (a: DemoAnimal) => `${commonName.get(a.profile.id)}${a.morph && a.morph !== 'Normal' ? `, ${a.morph}` : ''}, ${a.sex === 'unknown' ? 'unsexed' : a.sex} (${a.reference_id})`

// ---------------------------------------------------------------------------------------------------------------
// Housing: rooms, racks of tubs, enclosures, incubators, an outdoor pen; every animal here has a place.

function addHousing(demo: Demo, animals: DemoAnimal[], incubators: Incubators) {
  const setUp = demo.historyStart - 900 * DAY
  const addEnv = (fields: Row) => {
    const id = (fields.id as string | undefined) ?? newId('environment')
    demo.out.environments.push({ parent_id: null, location: null, width_cm: null, depth_cm: null, height_cm: null, substrate: null, notes: null, ...demo.stamps(setUp + demo.out.environments.length * HOUR), ...fields, id })
    return id
  }
  if (!incubators.size) incubatorFor(incubators, 29) // every breeder has one, even before the first clutch
  const rooms = {
    snake: addEnv({ name: 'Snake room', kind: 'room', location: 'Basement', width_cm: 420, depth_cm: 380, height_cm: 240, notes: 'Kept at 26 °C by a thermostat on the room heater.' }),
    lizard: addEnv({ name: 'Lizard room', kind: 'room', location: 'First floor', width_cm: 500, depth_cm: 360, height_cm: 250 }),
    quarantine: addEnv({ name: 'Quarantine & incubation', kind: 'room', location: 'Basement, separate air', width_cm: 280, depth_cm: 250, height_cm: 240 }),
  }
  for (const [temp, id] of [...incubators].sort(([a], [b]) => a - b)) {
    addEnv({ id, name: `Incubator ${temp} °C`, kind: 'incubator', parent_id: rooms.quarantine, width_cm: 60, depth_cm: 50, height_cm: 70, substrate: 'perlite', notes: 'Eggs on perlite in sealed boxes.' })
  }
  const here = animals.filter((a) => a.status === 'active')
  // Racks of 18 tubs, lettered A, B, … across all racks; the spare tubs of the last rack of a kind stay empty.
  const rackFor = (a: DemoAnimal): RackKey => a.tags.includes('quarantine') ? 'Q' : (demo.now - a.born) / DAY < 240 ? 'H' : a.profile.code === 'BP' ? 'P' : a.profile.code === 'LG' ? 'G' : 'C'
  let rackLetter = 0
  for (const [key, rack] of Object.entries(RACKS)) {
    const residents = here.filter((a) => a.profile.housing === 'tub' && rackFor(a) === key)
    for (let i = 0; i < residents.length; i += 18) {
      const letter = String.fromCharCode(65 + rackLetter++)
      const rackId = addEnv({ name: `${rack.label} ${letter}`, kind: 'rack', parent_id: rooms[rack.room], width_cm: rack.tub[0] + 10, depth_cm: rack.tub[1] + 5, height_cm: 200 })
      for (let slot = 0; slot < 18; slot++) {
        const tub = addEnv({ name: `${letter}${String(slot + 1).padStart(2, '0')}`, kind: 'tub', parent_id: rackId, width_cm: rack.tub[0], depth_cm: rack.tub[1], height_cm: rack.tub[2], substrate: rack.substrate })
        const resident = residents[i + slot]
        if (resident) resident.environment_id = tub
      }
    }
  }
  // One enclosure per animal that lives in one, half-size while it is young.
  let enclosureNo = 0
  for (const a of here.filter((x) => x.profile.housing === 'enclosure')) {
    const e = a.profile.enclosure!
    const young = (demo.now - a.born) / DAY < 150
    a.environment_id = addEnv({
      name: `${e.label} ${++enclosureNo}`, kind: 'enclosure', parent_id: a.tags.includes('quarantine') ? rooms.quarantine : rooms.lizard,
      width_cm: young ? Math.round(e.w / 2) : e.w, depth_cm: young ? Math.round(e.d / 2) : e.d, height_cm: young ? Math.round(e.h / 2) : e.h, substrate: e.substrate,
      notes: a.profile.code === 'BD' ? 'T5 HO 12% UVB, basking spot 40 °C.' : null,
    })
  }
  const tortoises = here.filter((a) => a.profile.housing === 'outdoor')
  if (tortoises.length) {
    const pen = addEnv({ name: 'Tortoise garden', kind: 'outdoor', location: 'Back garden, south-facing', width_cm: 600, depth_cm: 400, substrate: 'soil, grass and weeds', notes: 'Cold frame for spring and autumn; hibernation in the fridge Nov–Mar.' })
    for (const a of tortoises) a.environment_id = pen
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Medical conditions: about 7% of the animals had one; the treated ones have their doses in the log and a vet report.

/** Returns the medication activities per animal id, for the daily log. */
function addConditions(demo: Demo, animals: DemoAnimal[], contacts: Contacts): Map<string, Row[]> {
  const { rng, now } = demo
  const medications = new Map<string, Row[]>()
  for (const a of rng.shuffle(animals).slice(0, Math.max(1, Math.round(animals.length * 0.07)))) {
    const [from, to] = demo.lifeOf(a)
    if (to - from < 30 * DAY) continue
    const [name, category, severity, treatment, drug] = rng.pick(CONDITIONS[groupOf(a.profile)])
    const diagnosed = rng.int(from, to - 5 * DAY)
    const course = rng.int(14, 45) * DAY
    const status = a.status === 'deceased' || diagnosed + course < now - 10 * DAY ? 'resolved' : rng.chance(0.5) ? 'monitoring' : 'active'
    const seenByVet = drug !== null || severity !== 'mild' || rng.chance(0.3)
    const vet = seenByVet ? rng.pick(contacts.vets) : null
    const id = newId('condition')
    demo.out.conditions.push({
      id, animal_id: a.id, name, category, severity, status, diagnosed_on: dateOf(diagnosed),
      resolved_on: status === 'resolved' ? dateOf(Math.min(diagnosed + course, to)) : null,
      veterinarian: vet ? contacts.vetNames[contacts.vets.indexOf(vet)]! : null, treatment, notes: status === 'monitoring' ? 'Treatment finished; weighing weekly.' : null,
      ...demo.stamps(demo.onDay(diagnosed, 9, 18), status === 'resolved' ? diagnosed + course : diagnosed),
    })
    if (drug) {
      const doses: Row[] = []
      for (let t = diagnosed; t < Math.min(diagnosed + course, to) && doses.length < 10; t += 2 * DAY) {
        const occurred = demo.onDay(t, 8, 10)
        doses.push({ animal_id: a.id, type: 'medication', occurred_at: iso(occurred), details: { drug: drug[0], dose: drug[1], unit: drug[2], route: drug[3], condition_id: id }, notes: null, ...demo.stamps(occurred + 5 * 60_000) })
      }
      medications.set(a.id, doses)
    }
    if (vet) {
      demo.out.documents.push(demo.document('vet_report', `Vet report: ${name} (${a.name})`, `vet-report-${dateOf(diagnosed)}-${slug(a.reference_id)}.pdf`, 'application/pdf', a.id, vet, diagnosed))
    }
  }
  return medications
}

// ---------------------------------------------------------------------------------------------------------------
// Activities: the daily log. Feedings with prey that fits the animal, weighings that follow its growth, sheds,
// cleanings, handling, the odd note. The newest weighing is the animal's latest weight.

/** One animal's log while it is being written: `add` keeps entries up to `to` (the day the animal left). */
interface Log {
  demo: Demo
  a: DemoAnimal
  from: number
  to: number
  add(type: string, occurred: number, details: Row, notes?: string | null): void
  juvenile(t: number): boolean
}

function addActivities(demo: Demo, animals: DemoAnimal[], medications: Map<string, Row[]>) {
  for (const a of animals) {
    const [from, to] = demo.lifeOf(a)
    const rows: Row[] = []
    const log: Log = {
      demo, a, from, to,
      add(type, occurred, details, notes = null) {
        if (occurred > to) return
        rows.push({ animal_id: a.id, type, occurred_at: iso(occurred), details, notes, ...demo.stamps(occurred + demo.rng.int(1, 30) * 60_000) })
      },
      juvenile: (t) => (t - a.born) / DAY < 365,
    }
    logFeedings(log)
    logWeighings(log)
    logSheds(log)
    logCleanings(log)
    logNowAndThen(log)
    rows.push(...(medications.get(a.id) ?? []))
    // The newest weighing is the animal's latest weight, as a POST of it would have made it.
    const weighings = rows.filter((r) => r.type === 'weight')
    const newest = weighings.reduce<Row | undefined>((best, r) => (!best || (r.occurred_at as string) > (best.occurred_at as string) ? r : best), undefined)
    if (newest) a.weight = { grams: (newest.details as { grams: number }).grams, at: newest.occurred_at as string }
    demo.out.activities.push(...rows)
  }
}

function logFeedings({ demo, a, from, to, add, juvenile }: Log) {
  const { rng } = demo
  const p = a.profile
  for (let t = from + rng.float(0, 3) * DAY; t < to; t += rng.around(p.feedEvery[juvenile(t) ? 0 : 1], 0.25) * DAY) {
    const grams = weightAt(a, t)
    const accepted = rng.chance(juvenile(t) ? Math.min(0.97, p.accept + 0.08) : p.accept)
    const meal = p.diet(rng, grams)
    add('feeding', demo.onDay(t, 17, 21), { ...meal, accepted }, accepted ? null : rng.pick(['Refused.', 'Struck but dropped it.', 'Not interested; in blue?', 'Left it overnight, removed in the morning.']))
  }
}

/** Every three weeks while growing, every month or so after; always one on arrival. */
function logWeighings({ demo, a, from, to, add, juvenile }: Log) {
  const { rng } = demo
  for (let t = from + DAY; t < to; t += (juvenile(t) ? 21 : rng.int(30, 45)) * DAY) {
    const grams = weightAt(a, t) * rng.around(1, 0.03)
    add('weight', demo.onDay(t, 8, 11), { grams: grams < 100 ? oneDecimal(grams) : Math.round(grams) })
  }
}

function logSheds({ demo, a, from, to, add, juvenile }: Log) {
  const { rng } = demo
  const p = a.profile
  if (!p.shedEvery) return
  for (let t = from + rng.float(5, p.shedEvery) * DAY; t < to; t += rng.around(p.shedEvery * (juvenile(t) ? 0.7 : 1), 0.2) * DAY) {
    const complete = rng.chance(p.code === 'VC' ? 0.2 : 0.88)
    add('shed', demo.onDay(t, 7, 12), { complete, quality: complete ? 'good' : rng.pick(['fair', 'poor']), ...(complete ? {} : { assisted: rng.chance(0.5) }) })
  }
}

/** Spot cleans, a full clean with new substrate every few months. */
function logCleanings({ demo, a, from, to, add }: Log) {
  const { rng } = demo
  for (let t = from + rng.float(2, 14) * DAY, n = 0; t < to; t += rng.int(30, 50) * DAY, n++) {
    const full = n % 4 === 3
    add('cleaning', demo.onDay(t, 12, 16), full ? { kind: 'full', substrate_changed: true, disinfectant: 'F10SC' } : { kind: a.profile.housing === 'outdoor' ? 'water_change' : 'spot' })
  }
}

/** Handling, lengths, droppings (not for snakes) and notes now and then. */
function logNowAndThen({ demo, a, from, to, add }: Log) {
  const { rng } = demo
  const p = a.profile
  for (let t = from + rng.float(5, 40) * DAY; t < to; t += rng.int(60, 150) * DAY) {
    add('handling', demo.onDay(t, 15, 20), { minutes: rng.int(5, 30), temperament: rng.weighted([['calm', 7], ['nervous', 2], ['defensive', 1]] as const) })
  }
  for (let t = from + rng.float(20, 120) * DAY; t < to; t += rng.int(150, 200) * DAY) {
    add('length', demo.onDay(t, 9, 12), { millimetres: Math.round(p.lengthK * Math.cbrt(weightAt(a, t))), method: p.lengthMethod })
  }
  if (groupOf(p) !== 'snake') {
    for (let t = from + rng.float(10, 60) * DAY; t < to; t += rng.int(60, 120) * DAY) add('defecation', demo.onDay(t, 8, 12), { urates: 'normal', consistency: rng.weighted([['normal', 8], ['loose', 1], ['hard', 1]] as const) })
  }
  for (let t = from + rng.float(30, 200) * DAY; t < to; t += rng.int(90, 240) * DAY) add('note', demo.onDay(t, 10, 20), {}, rng.pick(NOTES))
}

// ---------------------------------------------------------------------------------------------------------------
// Documents: receipts, permits, pedigrees, loan contracts, photos (vet reports come with the conditions).

function addDocuments(demo: Demo, animals: DemoAnimal[], contacts: Contacts) {
  const { rng, now, historyStart, out } = demo
  for (const a of animals) {
    if (a.acquired && a.metadata.source && a.acquired >= historyStart - 365 * DAY) {
      const seller = contacts.all.find((c) => c.company === a.metadata.source)
      out.documents.push(demo.document('receipt', `Purchase receipt: ${a.name} (${a.reference_id})`, `receipt-${dateOf(a.acquired)}-${slug(a.reference_id)}.pdf`, 'application/pdf', a.id, seller?.id ?? null, a.acquired))
    }
    if (a.profile.id === 'testudo-hermanni') {
      out.documents.push(demo.document('permit', `Article 10 certificate: ${a.name} (${a.reference_id})`, `article-10-${slug(a.reference_id)}.pdf`, 'application/pdf', a.id, null, a.acquired ?? a.born))
    }
    if (a.tags.includes('holdback') && a.dam_id && rng.chance(0.6)) {
      out.documents.push(demo.document('pedigree', `Pedigree: ${a.name} (${a.reference_id})`, `pedigree-${slug(a.reference_id)}.pdf`, 'application/pdf', a.id, null, a.born + 60 * DAY))
    }
    if (a.status === 'on_loan') {
      const partner = contacts.all.find((c) => a.notes?.includes(c.company ?? c.name))
      out.documents.push(demo.document('contract', `Breeding loan agreement: ${a.name}`, `loan-agreement-${slug(a.reference_id)}.pdf`, 'application/pdf', a.id, partner?.id ?? null, a.endedAt!))
    }
    if (a.status === 'active' && rng.chance(0.08)) {
      const taken = rng.int(Math.max(a.born, historyStart), now - DAY)
      out.documents.push(demo.document('photo', `Photo: ${a.name}`, `${slug(a.name)}-${dateOf(taken)}.jpg`, 'image/jpeg', a.id, null, taken))
    }
  }
  out.documents.push(demo.document('permit', 'Permit for commercial breeding (§ 11 TierSchG)', 'permit-11-tierschg.pdf', 'application/pdf', null, null, historyStart - 400 * DAY))
  out.documents.push(demo.document('other', 'Feeder price list 2025', 'frostfutter-pricelist-2025.pdf', 'application/pdf', null, contacts.suppliers[0]!, Date.UTC(2025, 0, 6)))
}

// ---------------------------------------------------------------------------------------------------------------
// Animals last: their weights, homes and statuses are settled now.

function addAnimalRows(demo: Demo, animals: DemoAnimal[]) {
  for (const a of animals) {
    const created = demo.onDay(a.acquired ?? a.born, 9, 18)
    demo.out.animals.push({
      id: a.id, name: a.name, reference_id: a.reference_id, species_id: a.profile.id, sex: a.sex, status: a.status, morph: a.morph, traits: a.traits,
      birth_date: dateOf(a.born), acquired_date: a.acquired ? dateOf(a.acquired) : null, weight_grams: a.weight?.grams ?? null, weighed_at: a.weight?.at ?? null,
      environment_id: a.status === 'active' ? a.environment_id : null, dam_id: a.dam_id, sire_id: a.sire_id, tags: a.tags, notes: a.notes, metadata: a.metadata,
      ...demo.stamps(created, Math.max(created, a.endedAt ?? 0, a.weight ? Date.parse(a.weight.at) : 0)),
    })
  }
}
