// Demo data: a breeder's collection with ~18 months of history, generated deterministically from a seed so a demo
// account (and a test) looks the same every time. Everything goes through the importer, so the demo data passes the
// same validation and foreign keys as an operator's import, in one transaction.
import { SPECIES } from '../../db/reference/species.ts'
import type { InvoiceLine } from '../../db/schema/index.ts'
import type { Deps } from '../deps.ts'
import { newId } from '../ids.ts'
import { accountHasAnimals, importRecordsIn } from './importer.ts'

const DAY = 86_400_000
const HOUR = 3_600_000
/** How far back the history reaches. */
const HISTORY_DAYS = 548

// ---------------------------------------------------------------------------------------------------------------
// A tiny seeded PRNG: the same seed gives the same collection (Math.random cannot be seeded).

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

class Rng {
  private readonly next: () => number
  constructor(seed: number) { this.next = mulberry32(seed) }
  float(min = 0, max = 1) { return min + (max - min) * this.next() }
  /** An integer in [min, max]. */
  int(min: number, max: number) { return min + Math.floor(this.next() * (max - min + 1)) }
  chance(p: number) { return this.next() < p }
  pick<T>(items: readonly T[]): T { return items[Math.floor(this.next() * items.length)]! }
  weighted<T>(entries: readonly (readonly [T, number])[]): T {
    let r = this.next() * entries.reduce((sum, [, w]) => sum + w, 0)
    for (const [value, w] of entries) if ((r -= w) < 0) return value
    return entries.at(-1)![0]
  }
  /** `value` give or take `spread` (a fraction). */
  around(value: number, spread: number) { return value * (1 + this.float(-spread, spread)) }
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items]
    for (let i = out.length - 1; i > 0; i--) { const j = Math.floor(this.next() * (i + 1)); [out[i], out[j]] = [out[j]!, out[i]!] }
    return out
  }
  hex(length: number) { let s = ''; while (s.length < length) s += Math.floor(this.next() * 16).toString(16); return s }
}

const iso = (ms: number) => new Date(ms).toISOString()
const dateOf = (ms: number) => iso(ms).slice(0, 10)
const startOfDay = (ms: number) => Math.floor(ms / DAY) * DAY
const roundTo = (value: number, step: number) => Math.round(value / step) * step
/** One decimal, exactly as typed on a scale (41.4, not 41.400000000000006). */
const oneDecimal = (value: number) => Math.round(value * 10) / 10

// ---------------------------------------------------------------------------------------------------------------
// The species a typical breeder keeps, with what differs between them.

type Housing = 'tub' | 'enclosure' | 'outdoor'
interface Feeding { prey: string; size?: string; count: number; state?: 'live' | 'pre_killed' | 'frozen_thawed' }

interface Profile {
  id: string
  /** Reference-id prefix, e.g. BP-014. */
  code: string
  share: number
  /** Adult female weight range (g); males weigh `male` times as much. */
  adult: [number, number]
  male: number
  hatchling: [number, number]
  /** Growth time constant (days): weight approaches adult as 1 - e^(-age/tau). */
  tau: number
  /** Days between meals: [juvenile, adult]. */
  feedEvery: [number, number]
  accept: number
  diet(rng: Rng, grams: number): Feeding
  shedEvery: number | null
  /** Length in mm ≈ k · grams^(1/3). */
  lengthK: number
  lengthMethod: 'total' | 'snout_vent' | 'carapace'
  housing: Housing
  enclosure?: { w: number; d: number; h: number; substrate: string; label: string }
  eggs?: { count: [number, number]; days: number; temp: number; layMonth: number; lead: number; perRecord: number }
  genes?: { codom: string[]; recessive: string[]; pattern?: string[] }
  /** Euros for a normal; visual genes raise it. */
  price: [number, number]
}

const RODENTS: [string, string, number][] = [
  ['mouse', 'pinky', 2], ['mouse', 'fuzzy', 5], ['mouse', 'hopper', 10], ['mouse', 'adult', 25], ['rat', 'pup', 20],
  ['rat', 'weaned', 45], ['rat', 'small', 90], ['rat', 'medium', 200], ['rat', 'large', 350], ['rabbit', 'small', 1000],
]
/** The smallest rodent of about a tenth of the snake's weight, from the prey the species is usually fed. */
function rodent(prey: string[]) {
  return (_rng: Rng, grams: number): Feeding => {
    const options = RODENTS.filter(([kind]) => prey.includes(kind))
    const [kind, size] = options.find(([, , w]) => w >= grams * 0.1) ?? options.at(-1)!
    return { prey: kind, size, count: 1, state: 'frozen_thawed' }
  }
}
const insectSize = (grams: number, small: number, large: number) => (grams < small ? 'small' : grams < large ? 'medium' : 'large')
function insects(kinds: string[], small: number, large: number, counts: [number, number]) {
  return (rng: Rng, grams: number): Feeding => ({ prey: rng.pick(kinds), size: insectSize(grams, small, large), count: rng.int(...counts), state: 'live' })
}

const PROFILES: Profile[] = [
  {
    id: 'python-regius', code: 'BP', share: 34, adult: [1500, 2400], male: 0.62, hatchling: [60, 95], tau: 520, feedEvery: [9, 14], accept: 0.8,
    diet: rodent(['rat']), shedEvery: 42, lengthK: 100, lengthMethod: 'total', housing: 'tub',
    eggs: { count: [4, 9], days: 57, temp: 31.5, layMonth: 3, lead: 150, perRecord: 1 },
    genes: { codom: ['pastel', 'enchi', 'mojave', 'lesser', 'yellow belly', 'cinnamon', 'fire', 'banana', 'leopard', 'GHI', 'orange dream', 'spotnose'], recessive: ['clown', 'piebald', 'albino', 'axanthic', 'desert ghost'] },
    price: [90, 180],
  },
  {
    id: 'pantherophis-guttatus', code: 'CS', share: 14, adult: [350, 550], male: 1.1, hatchling: [6, 10], tau: 420, feedEvery: [8, 12], accept: 0.93,
    diet: rodent(['mouse']), shedEvery: 45, lengthK: 165, lengthMethod: 'total', housing: 'tub',
    eggs: { count: [10, 22], days: 60, temp: 28, layMonth: 5, lead: 45, perRecord: 1 },
    genes: { codom: ['tessera'], recessive: ['amel', 'anery', 'charcoal', 'caramel', 'hypo', 'lava', 'motley', 'stripe', 'diffused'], pattern: ['', '', '', 'Okeetee', 'Miami'] },
    price: [45, 90],
  },
  {
    id: 'eublepharis-macularius', code: 'LG', share: 14, adult: [55, 80], male: 1.15, hatchling: [3, 4.5], tau: 210, feedEvery: [6, 9], accept: 0.9,
    diet: insects(['cricket', 'dubia roach', 'mealworm', 'black soldier fly larvae', 'superworm'], 15, 45, [4, 9]),
    shedEvery: 30, lengthK: 27, lengthMethod: 'snout_vent', housing: 'tub',
    eggs: { count: [2, 2], days: 50, temp: 29, layMonth: 3, lead: 30, perRecord: 4 },
    genes: { codom: ['mack snow'], recessive: ['tremper albino', 'bell albino', 'eclipse', 'blizzard', 'murphy patternless'], pattern: ['', '', 'Tangerine', 'Hypo', 'Bold stripe', 'Jungle'] },
    price: [40, 90],
  },
  {
    id: 'correlophus-ciliatus', code: 'CG', share: 10, adult: [35, 50], male: 1.0, hatchling: [1.5, 2.5], tau: 280, feedEvery: [6, 9], accept: 0.9,
    diet: (rng, grams) => rng.chance(0.85) ? { prey: 'crested gecko diet', count: 1 } : { prey: 'cricket', size: insectSize(grams, 10, 30), count: rng.int(3, 6), state: 'live' },
    shedEvery: 35, lengthK: 28, lengthMethod: 'snout_vent', housing: 'enclosure',
    enclosure: { w: 45, d: 45, h: 60, substrate: 'bioactive soil mix', label: 'Crestie' },
    eggs: { count: [2, 2], days: 70, temp: 23, layMonth: 3, lead: 35, perRecord: 4 },
    genes: { codom: ['lilly white', 'cappuccino'], recessive: ['axanthic'], pattern: ['Harlequin', 'Extreme harlequin', 'Flame', 'Dalmatian', 'Pinstripe', 'Tiger', 'Brindle', 'Patternless'] },
    price: [60, 150],
  },
  {
    id: 'pogona-vitticeps', code: 'BD', share: 7, adult: [380, 520], male: 1.12, hatchling: [3, 5], tau: 230, feedEvery: [5, 8], accept: 0.92,
    diet: (rng, grams) => rng.chance(0.55) ? { prey: 'salad', count: 1 } : { prey: rng.pick(['dubia roach', 'cricket', 'black soldier fly larvae']), size: insectSize(grams, 60, 250), count: rng.int(5, 15), state: 'live' },
    shedEvery: 60, lengthK: 62, lengthMethod: 'total', housing: 'enclosure',
    enclosure: { w: 120, d: 60, h: 60, substrate: 'sand and soil mix', label: 'Beardie viv' },
    eggs: { count: [15, 26], days: 62, temp: 29, layMonth: 3, lead: 40, perRecord: 1 },
    genes: { codom: ['leatherback'], recessive: ['hypo', 'translucent', 'zero', 'witblits'], pattern: ['', '', 'Citrus', 'Red', 'Sandfire'] },
    price: [70, 140],
  },
  {
    id: 'heterodon-nasicus', code: 'HN', share: 6, adult: [250, 400], male: 0.45, hatchling: [5, 9], tau: 380, feedEvery: [8, 12], accept: 0.85,
    diet: rodent(['mouse']), shedEvery: 45, lengthK: 85, lengthMethod: 'total', housing: 'tub',
    eggs: { count: [8, 16], days: 55, temp: 28.5, layMonth: 4, lead: 40, perRecord: 1 },
    genes: { codom: ['anaconda', 'arctic'], recessive: ['albino', 'axanthic', 'toffeebelly', 'lavender'] },
    price: [120, 250],
  },
  {
    id: 'lampropeltis-californiae', code: 'KS', share: 5, adult: [600, 1000], male: 1.1, hatchling: [10, 15], tau: 450, feedEvery: [8, 12], accept: 0.95,
    diet: rodent(['mouse', 'rat']), shedEvery: 50, lengthK: 115, lengthMethod: 'total', housing: 'tub',
    eggs: { count: [6, 12], days: 60, temp: 28, layMonth: 5, lead: 45, perRecord: 1 },
    genes: { codom: [], recessive: ['albino', 'banana'], pattern: ['Banded', 'Banded', 'Striped', 'Aberrant', 'High white', 'Desert phase'] },
    price: [70, 130],
  },
  {
    id: 'boa-imperator', code: 'BI', share: 4, adult: [4000, 7500], male: 0.55, hatchling: [60, 100], tau: 800, feedEvery: [12, 21], accept: 0.92,
    diet: rodent(['rat', 'rabbit']), shedEvery: 55, lengthK: 105, lengthMethod: 'total', housing: 'enclosure',
    enclosure: { w: 180, d: 60, h: 60, substrate: 'aspen', label: 'Boa enclosure' },
    genes: { codom: ['hypo', 'jungle', 'motley'], recessive: ['kahl albino', 'sharp albino', 'anery'] },
    price: [150, 300],
  },
  {
    id: 'morelia-spilota', code: 'CP', share: 3, adult: [2000, 3500], male: 0.7, hatchling: [20, 35], tau: 650, feedEvery: [10, 18], accept: 0.9,
    diet: rodent(['mouse', 'rat']), shedEvery: 55, lengthK: 125, lengthMethod: 'total', housing: 'enclosure',
    enclosure: { w: 120, d: 60, h: 90, substrate: 'cypress mulch', label: 'Carpet enclosure' },
    genes: { codom: [], recessive: ['albino'], pattern: ['Coastal', 'Jungle', 'Diamond', 'Irian Jaya', 'Granite'] },
    price: [180, 350],
  },
  {
    id: 'tiliqua-scincoides', code: 'BT', share: 3, adult: [400, 600], male: 1.0, hatchling: [15, 25], tau: 420, feedEvery: [6, 9], accept: 0.9,
    diet: (rng) => ({ prey: rng.pick(['salad', 'omnivore diet', 'snail', 'dubia roach']), count: 1 }),
    shedEvery: 70, lengthK: 55, lengthMethod: 'total', housing: 'enclosure',
    enclosure: { w: 120, d: 60, h: 45, substrate: 'cypress mulch', label: 'Skink enclosure' },
    genes: { codom: ['hypo'], recessive: [], pattern: ['Eastern'] },
    price: [200, 400],
  },
  {
    id: 'testudo-hermanni', code: 'TH', share: 3, adult: [700, 1200], male: 0.7, hatchling: [12, 20], tau: 1500, feedEvery: [7, 10], accept: 0.97,
    diet: (rng) => ({ prey: rng.pick(['weeds', 'dandelion', 'hay and weeds', 'plantain leaves']), count: 1 }),
    shedEvery: null, lengthK: 16, lengthMethod: 'carapace', housing: 'outdoor',
    price: [150, 250],
  },
  {
    id: 'chamaeleo-calyptratus', code: 'VC', share: 2, adult: [90, 120], male: 1.5, hatchling: [1.5, 3], tau: 220, feedEvery: [5, 7], accept: 0.9,
    diet: insects(['cricket', 'dubia roach', 'silkworm', 'hornworm'], 20, 60, [3, 8]),
    shedEvery: 50, lengthK: 85, lengthMethod: 'total', housing: 'enclosure',
    enclosure: { w: 60, d: 60, h: 120, substrate: 'bioactive soil mix', label: 'Chameleon screen enclosure' },
    genes: { codom: [], recessive: ['translucent'] },
    price: [60, 120],
  },
]
const commonName = new Map(SPECIES.map((s) => [s.id, s.common_name]))

const PET_NAMES = [
  'Nova', 'Biscuit', 'Mango', 'Zeus', 'Luna', 'Pixel', 'Noodle', 'Sunny', 'Cleo', 'Ziggy', 'Basil', 'Peach', 'Oreo', 'Hazel', 'Ember',
  'Juniper', 'Kiwi', 'Loki', 'Maple', 'Nacho', 'Olive', 'Pepper', 'Quill', 'Rocket', 'Saffron', 'Tofu', 'Umber', 'Vesper', 'Waffle',
  'Xena', 'Yuki', 'Ziggy Jr', 'Apollo', 'Bramble', 'Cinder', 'Dune', 'Echo', 'Fig', 'Ginger', 'Honey', 'Indigo', 'Jasper', 'Kona',
  'Lemon', 'Medusa', 'Nyx', 'Onyx', 'Pumpkin', 'Quartz', 'Rio', 'Sable', 'Tango', 'Ursa', 'Vanilla', 'Willow', 'Yoshi', 'Zara',
  'Aurora', 'Banjo', 'Cocoa', 'Dragon', 'Elvis', 'Frodo', 'Gizmo', 'Hermes', 'Iggy', 'Jade', 'Kaa', 'Lilo', 'Monty', 'Nugget',
  'Orion', 'Pebble', 'Rusty', 'Sushi', 'Taco', 'Venus', 'Wasabi', 'Ash', 'Blaze', 'Caramel', 'Dotty', 'Fudge', 'Goldie', 'Hunter',
  'Ivy', 'Kai', 'Lava', 'Mocha', 'Nemo', 'Opal', 'Pistachio', 'Rex', 'Spike', 'Toffee', 'Viper', 'Whisper', 'Athena', 'Bowser',
  'Chai', 'Diesel', 'Enzo', 'Flint', 'Gaia', 'Hera', 'Inka', 'Jinx', 'Karma', 'Lotus', 'Mamba', 'Ninja', 'Ozzy', 'Pearl', 'Rosie',
  'Shadow', 'Thor', 'Umami', 'Vinnie', 'Wolfie', 'Zorro', 'Amber', 'Bean', 'Clover', 'Domino', 'Elsa', 'Freya', 'Gus', 'Hugo',
]
const FIRST_NAMES = ['Anna', 'Ben', 'Clara', 'David', 'Elena', 'Felix', 'Greta', 'Hannah', 'Jonas', 'Julia', 'Kai', 'Lena', 'Lukas', 'Marie', 'Max', 'Mia', 'Noah', 'Paul', 'Sophie', 'Tim', 'Emma', 'Leon', 'Laura', 'Finn', 'Sara', 'Tom', 'Nina', 'Jan', 'Eva', 'Erik', 'Lisa', 'Milan', 'Ines', 'Pieter', 'Chloé', 'Mateo', 'Agnieszka', 'Lars', 'Freja', 'Oliver']
const LAST_NAMES = ['Müller', 'Schmidt', 'Schneider', 'Fischer', 'Weber', 'Meyer', 'Wagner', 'Becker', 'Hoffmann', 'Koch', 'Richter', 'Klein', 'Wolf', 'Neumann', 'Schwarz', 'Braun', 'Zimmermann', 'Krüger', 'Hartmann', 'Lange', 'de Vries', 'Jansen', 'Peeters', 'Dubois', 'Nowak', 'Hansen', 'Berger', 'Huber', 'Rossi', 'García']
const PLACES: [string, string, string, string][] = [ // city, region, postal code, country
  ['Berlin', 'Berlin', '10115', 'DE'], ['Hamburg', 'Hamburg', '20095', 'DE'], ['Munich', 'Bavaria', '80331', 'DE'], ['Cologne', 'North Rhine-Westphalia', '50667', 'DE'],
  ['Frankfurt', 'Hesse', '60311', 'DE'], ['Leipzig', 'Saxony', '04109', 'DE'], ['Dortmund', 'North Rhine-Westphalia', '44135', 'DE'], ['Hanover', 'Lower Saxony', '30159', 'DE'],
  ['Utrecht', 'Utrecht', '3511', 'NL'], ['Rotterdam', 'South Holland', '3011', 'NL'], ['Antwerp', 'Antwerp', '2000', 'BE'], ['Vienna', 'Vienna', '1010', 'AT'],
  ['Graz', 'Styria', '8010', 'AT'], ['Strasbourg', 'Grand Est', '67000', 'FR'], ['Copenhagen', 'Capital Region', '1050', 'DK'], ['Poznań', 'Greater Poland', '61-001', 'PL'],
]
const STREETS = ['Hauptstraße', 'Gartenweg', 'Lindenallee', 'Bahnhofstraße', 'Schulstraße', 'Kirchplatz', 'Waldweg', 'Rosenstraße', 'Bergstraße', 'Am Markt']
const slug = (s: string) => s.toLowerCase().normalize('NFD').replace(/[\u0300-\u036f]/g, '').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')
const title = (s: string) => s.replace(/(^|\s)([a-z])/g, (_, space: string, ch: string) => space + ch.toUpperCase())

// ---------------------------------------------------------------------------------------------------------------
// The generated collection

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

/** Builds the collection in memory; deterministic for a seed and `now`, except the ids (fresh, so fills never clash). */
export function generateDemoData(options: DemoOptions = {}): DemoData {
  const rng = new Rng(options.seed ?? 1)
  const target = Math.max(1, Math.floor(options.animals ?? 300))
  const now = (options.now ?? new Date()).getTime()
  const today = startOfDay(now)
  const historyStart = today - HISTORY_DAYS * DAY
  /** An instant on day `ms` between the given hours (UTC), never after now. */
  const onDay = (ms: number, fromHour: number, toHour: number) => Math.min(startOfDay(ms) + rng.float(fromHour, toHour) * HOUR, now - HOUR)
  const out: DemoData = { environments: [], contacts: [], animals: [], 'breeding-records': [], clutches: [], conditions: [], activities: [], invoices: [], documents: [] }
  const stamps = (created: number, updated = created) => ({ created_at: iso(Math.min(created, now)), updated_at: iso(Math.min(Math.max(created, updated), now)) })

  // --- Contacts: customers, vets, suppliers, fellow breeders.
  const contacts: { id: string; kind: string; name: string; company: string | null }[] = []
  const addContact = (kind: string, name: string, company: string | null, extra: Row = {}) => {
    const [city, region, postal, country] = rng.pick(PLACES)
    const id = newId('contact')
    const email = `${slug(name).replace(/-/g, '.')}@${rng.pick(['example.com', 'example.org', 'example.net'])}`
    contacts.push({ id, kind, name, company })
    out.contacts.push({
      id, name, company, kind, email, phone: `+${country === 'DE' ? '49' : country === 'NL' ? '31' : country === 'AT' ? '43' : '32'} ${rng.int(150, 179)} ${rng.int(1_000_000, 9_999_999)}`,
      address_line1: `${rng.pick(STREETS)} ${rng.int(1, 120)}`, city, region, postal_code: postal, country, tags: [], notes: null,
      ...stamps(historyStart - rng.int(30, 900) * DAY), ...extra,
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
  const customerCount = Math.max(4, Math.round(target / 7))
  const customers = Array.from({ length: customerCount }, () => {
    const name = `${rng.pick(FIRST_NAMES)} ${rng.pick(LAST_NAMES)}`
    return addContact('customer', name, null, { tags: rng.chance(0.25) ? ['repeat buyer'] : rng.chance(0.2) ? ['expo'] : [] })
  })
  const contactName = new Map(contacts.map((c) => [c.id, c.company ?? c.name]))

  // --- Animals: founders (bought in, or bred here before the history began), then hatchlings of the clutches below.
  const animals: DemoAnimal[] = []
  // Names are dealt from a shuffled deck; once it runs out, the second round are "II"s (as keepers do).
  let deck: string[] = []
  let round = 0
  const petName = () => {
    if (!deck.length) { deck = rng.shuffle(PET_NAMES); round++ }
    const name = deck.pop()!
    return round === 1 ? name : `${name} ${['II', 'III', 'IV', 'V'][round - 2] ?? round}`
  }
  const serial = new Map<string, number>()
  const nextRef = (code: string) => { const n = (serial.get(code) ?? 0) + 1; serial.set(code, n); return `${code}-${String(n).padStart(3, '0')}` }

  const weightAt = (a: DemoAnimal, at: number) => {
    const [h0, h1] = a.profile.hatchling
    const start = (h0 + h1) / 2
    return a.adultGrams - (a.adultGrams - start) * Math.exp(-(at - a.born) / DAY / a.profile.tau)
  }
  /** A founder's genes; a hatchling's come from its parents. */
  const randomGenes = (p: Profile): string[] => {
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
  const pattern = (p: Profile) => (p.genes?.pattern ? rng.pick(p.genes.pattern) : '')
  const morphOf = (p: Profile, traits: string[], base: string): string | null => {
    if (!p.genes) return null
    const visual = traits.filter((t) => !t.includes('het'))
    if (p.id === 'pantherophis-guttatus' && visual.includes('amel') && visual.includes('anery')) {
      visual.splice(visual.indexOf('amel'), 1, 'snow'); visual.splice(visual.indexOf('anery'), 1)
    }
    return title([base, ...visual].filter(Boolean).join(' ')) || 'Normal'
  }
  const makeAnimal = (p: Profile, fields: Partial<DemoAnimal> & Pick<DemoAnimal, 'born' | 'sex'>): DemoAnimal => {
    const traits = fields.traits ?? randomGenes(p)
    const a: DemoAnimal = {
      id: newId('animal'), profile: p, name: '', reference_id: nextRef(p.code), acquired: null,
      adultGrams: rng.around((p.adult[0] + p.adult[1]) / 2, 0.18) * (fields.sex === 'male' ? p.male : 1),
      traits, morph: morphOf(p, traits, pattern(p)), dam_id: null, sire_id: null, status: 'active', endedAt: null, tags: [], notes: null,
      metadata: {}, environment_id: null, bred: false, weight: null, ...fields,
    }
    a.name ||= petName()
    animals.push(a)
    return a
  }

  const byShare = PROFILES.map((p) => [p, p.share] as const)
  const addFounder = (p: Profile, ownBredFrom?: { dam: DemoAnimal; sire: DemoAnimal }) => {
    const sex = rng.chance(0.5) ? 'female' : 'male'
    if (ownBredFrom) {
      // Bred here a season or two before the history starts: kept back from a clutch of two founders that were
      // adult and already here.
      const { dam, sire } = ownBredFrom
      const earliest = Math.max(dam.acquired ?? dam.born, sire.acquired ?? sire.born) + 200 * DAY
      const born = rng.int(Math.max(earliest, dam.born + 600 * DAY, sire.born + 600 * DAY), historyStart - 60 * DAY)
      return makeAnimal(p, {
        sex, born, dam_id: ownBredFrom.dam.id, sire_id: ownBredFrom.sire.id, traits: inherit(p, ownBredFrom.dam, ownBredFrom.sire),
        tags: ['holdback'], metadata: { origin: 'bred here' },
      })
    }
    const born = today - rng.int(300, 2900) * DAY
    const acquired = Math.max(born + rng.int(70, 200) * DAY, today - rng.int(20, 2200) * DAY)
    const seller = rng.chance(0.7) ? rng.pick(breeders) : null
    return makeAnimal(p, {
      sex, born, acquired,
      metadata: { origin: 'captive bred', source: seller ? contactName.get(seller)! : 'Terraristika Hamm', ...(p.id === 'testudo-hermanni' ? { microchip: `276098100${rng.int(100_000, 999_999)}` } : {}) },
      notes: seller ? null : 'Bought at the Hamm expo.',
    })
  }
  /** Codominant genes pass with a 50% chance; a visual recessive makes hets, a het makes possible hets. */
  function inherit(p: Profile, dam: DemoAnimal, sire: DemoAnimal): string[] {
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

  const founderCount = Math.max(1, Math.round(target * 0.5))
  for (let i = 0; i < founderCount; i++) {
    const p = rng.weighted(byShare)
    const adults = animals.filter((a) => a.profile === p && !a.dam_id && (a.acquired ?? a.born) < historyStart - 800 * DAY && a.born < historyStart - 900 * DAY)
    const dam = adults.find((a) => a.sex === 'female'), sire = adults.find((a) => a.sex === 'male')
    addFounder(p, p.eggs && dam && sire && rng.chance(0.3) ? { dam, sire } : undefined)
  }

  // --- Breeding: pairings per species and season, their clutches, and the hatchlings they gave.
  const incubators = new Map<number, string>() // incubation temperature → incubator id, made with the rooms below
  const incubatorFor = (temp: number) => { let id = incubators.get(temp); if (!id) incubators.set(temp, id = newId('environment')); return id }
  let budget = target - animals.length
  const breedingProfiles = PROFILES.filter((p) => p.eggs)
  const shareSum = breedingProfiles.reduce((s, p) => s + p.share, 0)
  const thisYear = new Date(today).getUTCFullYear()
  let clutchSeq = 0
  for (const season of [thisYear - 1, thisYear]) {
    for (const p of breedingProfiles) {
      const eggs = p.eggs!
      let speciesBudget = Math.round((target - founderCount) / 2 * (p.share / shareSum))
      const layTarget = Date.UTC(season, eggs.layMonth, rng.int(1, 28))
      const pairedTarget = layTarget - eggs.lead * DAY
      if (pairedTarget < historyStart - 60 * DAY) continue
      const females = rng.shuffle(animals.filter((a) => a.profile === p && a.sex === 'female' && a.born < pairedTarget - 600 * DAY && (a.acquired ?? a.born) < pairedTarget))
      const males = animals.filter((a) => a.profile === p && a.sex === 'male' && a.born < pairedTarget - 450 * DAY && (a.acquired ?? a.born) < pairedTarget)
      if (!males.length) continue
      for (const dam of females.slice(0, Math.max(1, Math.round(females.length * 0.45)))) {
        const paired = pairedTarget + rng.int(-20, 20) * DAY
        // Pairings whose eggs would have hatched by now stop when the animal count is spent.
        if ((budget <= 0 || speciesBudget <= 0) && paired + (eggs.lead + eggs.days) * DAY < now) break
        const sire = rng.pick(males)
        dam.bred = sire.bred = true
        const ovulation = p.id === 'python-regius' ? paired + rng.int(90, 120) * DAY : null
        const preLayShed = ovulation ? ovulation + rng.int(14, 20) * DAY : null
        const laid = preLayShed ? preLayShed + rng.int(28, 32) * DAY : paired + eggs.lead * DAY + rng.int(-7, 7) * DAY
        const failed = rng.chance(0.12)
        const status = paired > now ? 'planned' : laid > now ? (ovulation && ovulation <= now ? 'gravid' : 'paired') : failed ? 'unsuccessful' : 'laid'
        const recordId = newId('breeding')
        out['breeding-records'].push({
          id: recordId, species_id: p.id, dam_id: dam.id, sire_id: sire.id, season, status,
          paired_on: status === 'planned' ? null : dateOf(paired),
          separated_on: status === 'planned' || paired + 35 * DAY > now ? null : dateOf(paired + rng.int(20, 40) * DAY),
          locks_observed: status === 'planned' ? 0 : rng.int(0, p.code === 'BP' ? 6 : 3),
          ovulation_on: ovulation && ovulation <= now && status !== 'unsuccessful' ? dateOf(ovulation) : null,
          pre_lay_shed_on: preLayShed && preLayShed <= now && status !== 'unsuccessful' ? dateOf(preLayShed) : null,
          notes: status === 'unsuccessful' ? rng.pick(['No locks seen; female not interested.', 'Follicles reabsorbed.', 'Paired twice, no ovulation.']) : null,
          ...stamps(status === 'planned' ? now - rng.int(2, 30) * DAY : paired, Math.min(laid, now)),
        })
        if (status !== 'laid') continue
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
          const allowance = Math.min(budget, Math.max(speciesBudget, eggs.count[0]))
          if (hatchedCount !== null && hatchedCount > allowance) {
            if (allowance <= 0) break
            hatchedCount = allowance
            fertile = Math.min(fertile, hatchedCount + 1)
            eggCount = fertile + slugs
          }
          const clutchStatus = clutchFailed && hatchedOn <= now ? 'failed' : hatched ? 'hatched' : 'incubating'
          const clutchId = newId('clutch')
          clutchSeq++
          out.clutches.push({
            id: clutchId, breeding_record_id: recordId, species_id: p.id, dam_id: dam.id, sire_id: sire.id, status: clutchStatus,
            laid_on: dateOf(laidOn), egg_count: eggCount,
            fertile_count: fertile, slug_count: slugs, hatched_count: clutchStatus === 'hatched' ? hatchedCount : clutchStatus === 'failed' ? 0 : null,
            incubator_id: incubatorFor(eggs.temp), incubation_temperature_c: eggs.temp, expected_hatch_on: dateOf(expected),
            hatched_on: clutchStatus === 'hatched' ? dateOf(hatchedOn) : null,
            notes: clutchStatus === 'failed' ? 'Eggs collapsed in week three; incubator humidity too low.' : null,
            ...stamps(onDay(laidOn, 8, 20), onDay(clutchStatus === 'incubating' ? laidOn : hatchedOn, 8, 20)),
          })
          if (clutchStatus !== 'hatched') continue
          const yy = String(new Date(hatchedOn).getUTCFullYear()).slice(2)
          for (let n = 1; n <= hatchedCount!; n++) {
            const ageDays = (now - hatchedOn) / DAY
            const a = makeAnimal(p, {
              sex: ageDays < 60 ? 'unknown' : rng.chance(0.5) ? 'female' : 'male', born: hatchedOn,
              traits: inherit(p, dam, sire), dam_id: dam.id, sire_id: sire.id, metadata: { origin: 'bred here', clutch: `${p.code}${yy}-${String(clutchSeq).padStart(2, '0')}` },
              name: `${p.code} ${yy}-${String(clutchSeq).padStart(2, '0')} #${n}`,
            })
            a.reference_id = `${p.code}${yy}-${String(clutchSeq).padStart(2, '0')}-${String(n).padStart(2, '0')}`
            budget--; speciesBudget--
          }
        }
      }
    }
  }
  // Whatever the clutches left of the animal count is bought in.
  while (animals.length < target) addFounder(rng.weighted(byShare))

  // --- Status: most animals are here; hatchlings are sold, some animals died, a few males are out on breeding loan.
  for (const a of animals) {
    const since = a.acquired ?? a.born
    const hatchling = Boolean(a.dam_id) && a.born >= historyStart
    if (a.bred) { a.tags.push('breeder'); continue }
    if (hatchling) {
      const age = (now - a.born) / DAY
      const r = rng.float()
      if (age > 20 && r < 0.06) { a.status = 'deceased'; a.endedAt = a.born + rng.int(12, Math.min(70, Math.floor(age) - 1)) * DAY; a.notes = 'Failure to thrive: never took a meal.' }
      else if (age > 75 && r < 0.64) { a.status = 'sold'; a.endedAt = Math.min(a.born + rng.int(70, 200) * DAY, now - rng.int(2, 20) * DAY) }
      else if (r < 0.74 && age > 60) { a.tags.push('holdback'); a.name = petName() }
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
      a.notes = `On breeding loan to ${contactName.get(rng.pick(breeders))} since ${dateOf(a.endedAt)}.`
    } else if (since > now - 60 * DAY) a.tags.push('quarantine')
  }

  // --- Sales: sold animals grouped into invoices for customers; a couple of draft invoices reserve animals.
  const sold = animals.filter((a) => a.status === 'sold').sort((x, y) => x.endedAt! - y.endedAt!)
  const sales: { customer: string; issued: number; items: DemoAnimal[]; status: 'paid' | 'open' | 'draft' }[] = []
  for (const a of sold) {
    const last = sales.at(-1)
    if (last && last.items.length < 3 && a.endedAt! - last.issued < 10 * DAY && rng.chance(0.35)) { a.endedAt = last.issued; last.items.push(a); continue }
    sales.push({ customer: rng.pick(customers), issued: a.endedAt!, items: [a], status: a.endedAt! > now - 14 * DAY && rng.chance(0.5) ? 'open' : 'paid' })
  }
  for (const a of animals.filter((x) => x.tags.includes('for sale')).slice(0, 2)) {
    a.tags.splice(a.tags.indexOf('for sale'), 1, 'reserved')
    sales.push({ customer: rng.pick(customers), issued: now - rng.int(1, 6) * DAY, items: [a], status: 'draft' })
  }
  const priceOf = (a: DemoAnimal) => {
    const [lo, hi] = a.profile.price
    const visual = a.traits.filter((t) => !t.includes('het')).length, hets = a.traits.length - visual
    return roundTo(rng.float(lo, hi) * (1 + 0.7 * visual + 0.25 * hets), 5) * 100
  }
  const invoiceNumbers = new Map<number, number>()
  const nextNumber = (at: number) => {
    const year = new Date(at).getUTCFullYear()
    const n = (invoiceNumbers.get(year) ?? 0) + 1
    invoiceNumbers.set(year, n)
    return `INV-${year}-${String(n).padStart(4, '0')}`
  }
  const describe = (a: DemoAnimal) => `${commonName.get(a.profile.id)}${a.morph && a.morph !== 'Normal' ? `, ${a.morph}` : ''}, ${a.sex === 'unknown' ? 'unsexed' : a.sex} (${a.reference_id})`
  for (const sale of sales.sort((x, y) => x.issued - y.issued)) {
    const lines: InvoiceLine[] = sale.items.map((a) => { const unit = priceOf(a); return { description: describe(a), quantity: 1, unit_amount: unit, amount: unit, animal_id: a.id } })
    if (rng.chance(0.4)) lines.push({ description: 'Shipping (overnight, insulated box with heat pack)', quantity: 1, unit_amount: 3900, amount: 3900, animal_id: null })
    const subtotal = lines.reduce((s, l) => s + l.amount, 0)
    const tax = Math.round(subtotal * 0.19)
    const invoice = (status: string, number: string, notes: string | null) => ({
      id: newId('invoice'), number, contact_id: sale.customer, status, currency: 'EUR', issued_on: dateOf(sale.issued),
      due_on: dateOf(sale.issued + 14 * DAY), paid_at: status === 'paid' ? iso(onDay(sale.issued + rng.int(0, 6) * DAY, 18, 22)) : null,
      line_items: lines, subtotal, tax, total: subtotal + tax, notes, ...stamps(onDay(sale.issued, 9, 18)),
    })
    if (rng.chance(0.04)) {
      const voided = nextNumber(sale.issued)
      const number = nextNumber(sale.issued)
      out.invoices.push(invoice('void', voided, `Issued with the wrong address; replaced by ${number}.`))
      out.invoices.push(invoice(sale.status, number, null))
    } else out.invoices.push(invoice(sale.status, nextNumber(sale.issued), sale.status === 'draft' ? 'Reserved; deposit expected.' : null))
  }

  // --- Housing: rooms, racks of tubs, enclosures, incubators, an outdoor pen; every animal here has a place.
  const setUp = historyStart - 900 * DAY
  const addEnv = (fields: Row) => {
    const id = (fields.id as string | undefined) ?? newId('environment')
    out.environments.push({ parent_id: null, location: null, width_cm: null, depth_cm: null, height_cm: null, substrate: null, notes: null, ...stamps(setUp + out.environments.length * HOUR), ...fields, id })
    return id
  }
  if (!incubators.size) incubatorFor(29) // every breeder has one, even before the first clutch
  const snakeRoom = addEnv({ name: 'Snake room', kind: 'room', location: 'Basement', width_cm: 420, depth_cm: 380, height_cm: 240, notes: 'Kept at 26 °C by a thermostat on the room heater.' })
  const lizardRoom = addEnv({ name: 'Lizard room', kind: 'room', location: 'First floor', width_cm: 500, depth_cm: 360, height_cm: 250 })
  const quarantineRoom = addEnv({ name: 'Quarantine & incubation', kind: 'room', location: 'Basement, separate air', width_cm: 280, depth_cm: 250, height_cm: 240 })
  for (const [temp, id] of [...incubators].sort(([a], [b]) => a - b)) {
    addEnv({ id, name: `Incubator ${temp} °C`, kind: 'incubator', parent_id: quarantineRoom, width_cm: 60, depth_cm: 50, height_cm: 70, substrate: 'perlite', notes: 'Eggs on perlite in sealed boxes.' })
  }
  const here = animals.filter((a) => a.status === 'active')
  const rackFor = (a: DemoAnimal) => a.tags.includes('quarantine') ? 'Q' : (now - a.born) / DAY < 240 ? 'H' : a.profile.code === 'BP' ? 'P' : a.profile.code === 'LG' ? 'G' : 'C'
  const RACKS: Record<string, { label: string; tub: [number, number, number]; substrate: string; parent: string }> = {
    P: { label: 'Python rack', tub: [85, 45, 15], substrate: 'aspen', parent: snakeRoom },
    C: { label: 'Colubrid rack', tub: [60, 40, 15], substrate: 'aspen', parent: snakeRoom },
    G: { label: 'Gecko rack', tub: [60, 40, 20], substrate: 'paper towel and moss hide', parent: lizardRoom },
    H: { label: 'Hatchling rack', tub: [35, 25, 12], substrate: 'paper towel', parent: snakeRoom },
    Q: { label: 'Quarantine rack', tub: [60, 40, 15], substrate: 'paper towel', parent: quarantineRoom },
  }
  let rackLetter = 0
  for (const [key, rack] of Object.entries(RACKS)) {
    const residents = here.filter((a) => a.profile.housing === 'tub' && rackFor(a) === key)
    for (let i = 0; i < residents.length; i += 18) {
      const letter = String.fromCharCode(65 + rackLetter++)
      const rackId = addEnv({ name: `${rack.label} ${letter}`, kind: 'rack', parent_id: rack.parent, width_cm: rack.tub[0] + 10, depth_cm: rack.tub[1] + 5, height_cm: 200 })
      // 18 tubs a rack; the spare tubs stay empty.
      for (let slot = 0; slot < 18; slot++) {
        const tub = addEnv({ name: `${letter}${String(slot + 1).padStart(2, '0')}`, kind: 'tub', parent_id: rackId, width_cm: rack.tub[0], depth_cm: rack.tub[1], height_cm: rack.tub[2], substrate: rack.substrate })
        const resident = residents[i + slot]
        if (resident) resident.environment_id = tub
      }
    }
  }
  let enclosureNo = 0
  for (const a of here.filter((x) => x.profile.housing === 'enclosure')) {
    const e = a.profile.enclosure!
    const young = (now - a.born) / DAY < 150
    a.environment_id = addEnv({
      name: `${e.label} ${++enclosureNo}`, kind: 'enclosure', parent_id: a.tags.includes('quarantine') ? quarantineRoom : lizardRoom,
      width_cm: young ? Math.round(e.w / 2) : e.w, depth_cm: young ? Math.round(e.d / 2) : e.d, height_cm: young ? Math.round(e.h / 2) : e.h, substrate: e.substrate,
      notes: a.profile.code === 'BD' ? 'T5 HO 12% UVB, basking spot 40 °C.' : null,
    })
  }
  const tortoises = here.filter((a) => a.profile.housing === 'outdoor')
  if (tortoises.length) {
    const pen = addEnv({ name: 'Tortoise garden', kind: 'outdoor', location: 'Back garden, south-facing', width_cm: 600, depth_cm: 400, substrate: 'soil, grass and weeds', notes: 'Cold frame for spring and autumn; hibernation in the fridge Nov–Mar.' })
    for (const a of tortoises) a.environment_id = pen
  }

  // --- Medical conditions, with their medication doses.
  const CONDITIONS: Record<string, [string, string, string, string | null, [string, number, string, string] | null][]> = {
    // name, category, severity, treatment, [drug, dose, unit, route]
    snake: [
      ['Respiratory infection', 'respiratory', 'moderate', 'Enrofloxacin 10 mg/kg IM every 48 h for 14 days; hot spot raised to 33 °C.', ['Enrofloxacin (Baytril)', 10, 'mg/kg', 'injection']],
      ['Snake mites', 'parasite', 'mild', 'Permethrin spray on the tub and furnishings, repeated after 10 days; paper substrate.', null],
      ['Stuck shed', 'dermatological', 'mild', 'Warm soaks and a humid hide.', null],
      ['Scale rot', 'dermatological', 'moderate', 'Chlorhexidine scrub daily, dry paper substrate.', ['Chlorhexidine 0.05%', 5, 'ml', 'topical']],
      ['Stomatitis', 'infection', 'moderate', 'Mouth rinsed with chlorhexidine; antibiotics.', ['Ceftazidime (Fortum)', 20, 'mg/kg', 'injection']],
      ['Regurgitation', 'other', 'mild', 'Fasted two weeks, then smaller prey; temperatures checked.', null],
    ],
    gecko: [
      ['Retained shed on toes', 'dermatological', 'mild', 'Soaks and gentle removal with a cotton bud.', null],
      ['Metabolic bone disease', 'metabolic', 'moderate', 'Calcium with D3 at every feeding; UVB added.', ['Calcium gluconate', 100, 'mg/kg', 'oral']],
      ['Pinworms', 'parasite', 'mild', 'Fenbendazole 50 mg/kg orally for 5 days, repeated after 2 weeks.', ['Fenbendazole (Panacur)', 50, 'mg/kg', 'oral']],
      ['Tail loss', 'injury', 'mild', 'Kept on paper towel until healed.', null],
      ['Impaction', 'other', 'moderate', 'Warm baths, liquid paraffin; loose substrate removed.', ['Liquid paraffin', 0.2, 'ml', 'oral']],
    ],
    lizard: [
      ['Metabolic bone disease', 'metabolic', 'moderate', 'Calcium with D3; UVB tube replaced.', ['Calcium gluconate', 100, 'mg/kg', 'oral']],
      ['Coccidiosis', 'parasite', 'moderate', 'Toltrazuril 15 mg/kg orally, 3 days.', ['Toltrazuril (Baycox)', 15, 'mg/kg', 'oral']],
      ['Thermal burn', 'injury', 'mild', 'Basking lamp guarded; silver sulfadiazine cream.', ['Silver sulfadiazine', 1, 'ml', 'topical']],
      ['Respiratory infection', 'respiratory', 'moderate', 'Enrofloxacin 10 mg/kg every 48 h.', ['Enrofloxacin (Baytril)', 10, 'mg/kg', 'injection']],
    ],
    tortoise: [
      ['Runny nose syndrome', 'respiratory', 'moderate', 'Nasal flush, warmer night temperatures, antibiotics.', ['Enrofloxacin (Baytril)', 10, 'mg/kg', 'injection']],
      ['Shell rot', 'infection', 'mild', 'Povidone-iodine on the scute, kept dry.', ['Povidone-iodine', 2, 'ml', 'topical']],
      ['Beak overgrowth', 'other', 'mild', 'Beak trimmed; cuttlebone offered.', null],
    ],
  }
  const groupOf = (p: Profile) => (['BP', 'CS', 'HN', 'KS', 'BI', 'CP'].includes(p.code) ? 'snake' : ['LG', 'CG'].includes(p.code) ? 'gecko' : p.code === 'TH' ? 'tortoise' : 'lizard')
  const medications = new Map<string, Row[]>() // animal id → medication activities
  const lifeOf = (a: DemoAnimal): [number, number] => [Math.max(a.acquired ?? a.born, historyStart, a.born + 14 * DAY), Math.min(a.endedAt ?? now, now - HOUR)]
  for (const a of rng.shuffle(animals).slice(0, Math.max(1, Math.round(animals.length * 0.07)))) {
    const [from, to] = lifeOf(a)
    if (to - from < 30 * DAY) continue
    const [name, category, severity, treatment, drug] = rng.pick(CONDITIONS[groupOf(a.profile)]!)
    const diagnosed = rng.int(from, to - 5 * DAY)
    const course = rng.int(14, 45) * DAY
    const status = a.status === 'deceased' || diagnosed + course < now - 10 * DAY ? 'resolved' : rng.chance(0.5) ? 'monitoring' : 'active'
    const seenByVet = drug !== null || severity !== 'mild' || rng.chance(0.3)
    const vet = seenByVet ? rng.pick(vets) : null
    const id = newId('condition')
    out.conditions.push({
      id, animal_id: a.id, name, category, severity, status, diagnosed_on: dateOf(diagnosed),
      resolved_on: status === 'resolved' ? dateOf(Math.min(diagnosed + course, to)) : null,
      veterinarian: vet ? vetNames[vets.indexOf(vet)]! : null, treatment, notes: status === 'monitoring' ? 'Treatment finished; weighing weekly.' : null,
      ...stamps(onDay(diagnosed, 9, 18), status === 'resolved' ? diagnosed + course : diagnosed),
    })
    if (drug) {
      const doses: Row[] = []
      for (let t = diagnosed; t < Math.min(diagnosed + course, to) && doses.length < 10; t += 2 * DAY) {
        const occurred = onDay(t, 8, 10)
        doses.push({ animal_id: a.id, type: 'medication', occurred_at: iso(occurred), details: { drug: drug[0], dose: drug[1], unit: drug[2], route: drug[3], condition_id: id }, notes: null, ...stamps(occurred + 5 * 60_000) })
      }
      medications.set(a.id, doses)
    }
    if (vet) {
      out.documents.push(document('vet_report', `Vet report: ${name} (${a.name})`, `vet-report-${dateOf(diagnosed)}-${slug(a.reference_id)}.pdf`, 'application/pdf', a.id, vet, diagnosed))
    }
  }

  // --- Activities: the daily log. Feedings with prey that fits the animal, weighings that follow its growth, sheds,
  //     cleanings, handling, the odd note. The newest weighing is the animal's latest weight.
  const NOTES = ['In blue; eyes cloudy.', 'Moved to a bigger tub.', 'Looking plump and alert.', 'Soaked for 20 minutes.', 'Photographed for the website.',
    'Very active tonight.', 'Hid all week; left alone.', 'Checked temperatures: hot spot 32 °C, cool side 26 °C.', 'New hide added.', 'Drank a lot after the cleaning.']
  for (const a of animals) {
    const p = a.profile
    const [from, to] = lifeOf(a)
    const log: Row[] = []
    const add = (type: string, occurred: number, details: Row, notes: string | null = null) => {
      if (occurred > to) return
      log.push({ animal_id: a.id, type, occurred_at: iso(occurred), details, notes, ...stamps(occurred + rng.int(1, 30) * 60_000) })
    }
    const juvenile = (t: number) => (t - a.born) / DAY < 365
    // Feedings.
    for (let t = from + rng.float(0, 3) * DAY; t < to; t += rng.around(p.feedEvery[juvenile(t) ? 0 : 1], 0.25) * DAY) {
      const grams = weightAt(a, t)
      const accepted = rng.chance(juvenile(t) ? Math.min(0.97, p.accept + 0.08) : p.accept)
      const meal = p.diet(rng, grams)
      add('feeding', onDay(t, 17, 21), { ...meal, accepted }, accepted ? null : rng.pick(['Refused.', 'Struck but dropped it.', 'Not interested; in blue?', 'Left it overnight, removed in the morning.']))
    }
    // Weighings: every three weeks while growing, every month or so after; always one on arrival.
    for (let t = from + DAY; t < to; t += (juvenile(t) ? 21 : rng.int(30, 45)) * DAY) {
      const grams = weightAt(a, t) * rng.around(1, 0.03)
      add('weight', onDay(t, 8, 11), { grams: grams < 100 ? oneDecimal(grams) : Math.round(grams) })
    }
    // Sheds.
    if (p.shedEvery) {
      for (let t = from + rng.float(5, p.shedEvery) * DAY; t < to; t += rng.around(p.shedEvery * (juvenile(t) ? 0.7 : 1), 0.2) * DAY) {
        const complete = rng.chance(p.code === 'VC' ? 0.2 : 0.88)
        add('shed', onDay(t, 7, 12), { complete, quality: complete ? 'good' : rng.pick(['fair', 'poor']), ...(complete ? {} : { assisted: rng.chance(0.5) }) })
      }
    }
    // Cleanings: spot cleans, a full clean with new substrate every few months.
    for (let t = from + rng.float(2, 14) * DAY, n = 0; t < to; t += rng.int(30, 50) * DAY, n++) {
      const full = n % 4 === 3
      add('cleaning', onDay(t, 12, 16), full ? { kind: 'full', substrate_changed: true, disinfectant: 'F10SC' } : { kind: p.housing === 'outdoor' ? 'water_change' : 'spot' })
    }
    // Handling, lengths, droppings and notes now and then.
    for (let t = from + rng.float(5, 40) * DAY; t < to; t += rng.int(60, 150) * DAY) {
      add('handling', onDay(t, 15, 20), { minutes: rng.int(5, 30), temperament: rng.weighted([['calm', 7], ['nervous', 2], ['defensive', 1]] as const) })
    }
    for (let t = from + rng.float(20, 120) * DAY; t < to; t += rng.int(150, 200) * DAY) {
      add('length', onDay(t, 9, 12), { millimetres: Math.round(p.lengthK * Math.cbrt(weightAt(a, t))), method: p.lengthMethod })
    }
    if (groupOf(p) !== 'snake') {
      for (let t = from + rng.float(10, 60) * DAY; t < to; t += rng.int(60, 120) * DAY) add('defecation', onDay(t, 8, 12), { urates: 'normal', consistency: rng.weighted([['normal', 8], ['loose', 1], ['hard', 1]] as const) })
    }
    for (let t = from + rng.float(30, 200) * DAY; t < to; t += rng.int(90, 240) * DAY) add('note', onDay(t, 10, 20), {}, rng.pick(NOTES))
    log.push(...(medications.get(a.id) ?? []))
    // The newest weighing is the animal's latest weight, as a POST of it would have made it.
    const weighings = log.filter((r) => r.type === 'weight')
    const newest = weighings.reduce<Row | undefined>((best, r) => (!best || (r.occurred_at as string) > (best.occurred_at as string) ? r : best), undefined)
    if (newest) a.weight = { grams: (newest.details as { grams: number }).grams, at: newest.occurred_at as string }
    out.activities.push(...log)
  }

  // --- Documents: receipts, permits, pedigrees, loan contracts, photos.
  function document(kind: string, docTitle: string, fileName: string, contentType: string, animalId: string | null, contactId: string | null, issued: number): Row {
    const size = contentType === 'application/pdf' ? rng.int(40_000, 900_000) : rng.int(1_500_000, 6_000_000)
    return {
      id: newId('document'), title: docTitle, kind, animal_id: animalId, contact_id: contactId, file_name: fileName, content_type: contentType, size_bytes: size,
      sha256: rng.hex(64), url: `https://files.example.com/demo/${fileName}`, issued_on: dateOf(issued), notes: null, ...stamps(onDay(issued, 9, 20)),
    }
  }
  for (const a of animals) {
    if (a.acquired && a.metadata.source && a.acquired >= historyStart - 365 * DAY) {
      const seller = contacts.find((c) => c.company === a.metadata.source)
      out.documents.push(document('receipt', `Purchase receipt: ${a.name} (${a.reference_id})`, `receipt-${dateOf(a.acquired)}-${slug(a.reference_id)}.pdf`, 'application/pdf', a.id, seller?.id ?? null, a.acquired))
    }
    if (a.profile.id === 'testudo-hermanni') {
      out.documents.push(document('permit', `Article 10 certificate: ${a.name} (${a.reference_id})`, `article-10-${slug(a.reference_id)}.pdf`, 'application/pdf', a.id, null, a.acquired ?? a.born))
    }
    if (a.tags.includes('holdback') && a.dam_id && rng.chance(0.6)) {
      out.documents.push(document('pedigree', `Pedigree: ${a.name} (${a.reference_id})`, `pedigree-${slug(a.reference_id)}.pdf`, 'application/pdf', a.id, null, a.born + 60 * DAY))
    }
    if (a.status === 'on_loan') {
      const partner = contacts.find((c) => a.notes?.includes(c.company ?? c.name))
      out.documents.push(document('contract', `Breeding loan agreement: ${a.name}`, `loan-agreement-${slug(a.reference_id)}.pdf`, 'application/pdf', a.id, partner?.id ?? null, a.endedAt!))
    }
    if (a.status === 'active' && rng.chance(0.08)) {
      const taken = rng.int(Math.max(a.born, historyStart), now - DAY)
      out.documents.push(document('photo', `Photo: ${a.name}`, `${slug(a.name)}-${dateOf(taken)}.jpg`, 'image/jpeg', a.id, null, taken))
    }
  }
  out.documents.push(document('permit', 'Permit for commercial breeding (§ 11 TierSchG)', 'permit-11-tierschg.pdf', 'application/pdf', null, null, historyStart - 400 * DAY))
  out.documents.push(document('other', 'Feeder price list 2025', 'frostfutter-pricelist-2025.pdf', 'application/pdf', null, suppliers[0]!, Date.UTC(2025, 0, 6)))

  // --- Animals last: their weights, homes and statuses are settled now.
  for (const a of animals) {
    const created = onDay(a.acquired ?? a.born, 9, 18)
    out.animals.push({
      id: a.id, name: a.name, reference_id: a.reference_id, species_id: a.profile.id, sex: a.sex, status: a.status, morph: a.morph, traits: a.traits,
      birth_date: dateOf(a.born), acquired_date: a.acquired ? dateOf(a.acquired) : null, weight_grams: a.weight?.grams ?? null, weighed_at: a.weight?.at ?? null,
      environment_id: a.status === 'active' ? a.environment_id : null, dam_id: a.dam_id, sire_id: a.sire_id, tags: a.tags, notes: a.notes, metadata: a.metadata,
      ...stamps(created, Math.max(created, a.endedAt ?? 0, a.weight ? Date.parse(a.weight.at) : 0)),
    })
  }
  return out
}

/**
 * Fills an account that has no animals yet with a generated collection, in one transaction (all of it or none).
 * Returns how many records of each area it wrote.
 */
export async function fillDemoAccount(deps: Deps, accountId: string, options: DemoOptions = {}): Promise<Record<keyof DemoData, number>> {
  if (await accountHasAnimals(deps.database.db, accountId)) throw new Error(`account ${accountId} already has animals; demo data goes into an empty account`)
  const data = generateDemoData(options)
  await deps.database.db.transaction(async (tx) => {
    for (const area of INSERT_ORDER) await importRecordsIn(tx, accountId, area, data[area])
  })
  return Object.fromEntries(INSERT_ORDER.map((area) => [area, data[area].length])) as Record<keyof DemoData, number>
}
