// What the demo collection is made of: the species a typical breeder keeps (with what differs between them),
// the names, places, illnesses and notes the generator draws from.
import { SPECIES } from '../../../db/reference/species.ts'
import type { Rng } from './random.ts'

export type Housing = 'tub' | 'enclosure' | 'outdoor'
export interface Feeding { prey: string; size?: string; count: number; state?: 'live' | 'pre_killed' | 'frozen_thawed' }

export interface Profile {
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

export const PROFILES: Profile[] = [
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
export const commonName = new Map(SPECIES.map((s) => [s.id, s.common_name]))

export const PET_NAMES = [
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
export const FIRST_NAMES = ['Anna', 'Ben', 'Clara', 'David', 'Elena', 'Felix', 'Greta', 'Hannah', 'Jonas', 'Julia', 'Kai', 'Lena', 'Lukas', 'Marie', 'Max', 'Mia', 'Noah', 'Paul', 'Sophie', 'Tim', 'Emma', 'Leon', 'Laura', 'Finn', 'Sara', 'Tom', 'Nina', 'Jan', 'Eva', 'Erik', 'Lisa', 'Milan', 'Ines', 'Pieter', 'Chloé', 'Mateo', 'Agnieszka', 'Lars', 'Freja', 'Oliver']
export const LAST_NAMES = ['Müller', 'Schmidt', 'Schneider', 'Fischer', 'Weber', 'Meyer', 'Wagner', 'Becker', 'Hoffmann', 'Koch', 'Richter', 'Klein', 'Wolf', 'Neumann', 'Schwarz', 'Braun', 'Zimmermann', 'Krüger', 'Hartmann', 'Lange', 'de Vries', 'Jansen', 'Peeters', 'Dubois', 'Nowak', 'Hansen', 'Berger', 'Huber', 'Rossi', 'García']
export const PLACES: [string, string, string, string][] = [ // city, region, postal code, country
  ['Berlin', 'Berlin', '10115', 'DE'], ['Hamburg', 'Hamburg', '20095', 'DE'], ['Munich', 'Bavaria', '80331', 'DE'], ['Cologne', 'North Rhine-Westphalia', '50667', 'DE'],
  ['Frankfurt', 'Hesse', '60311', 'DE'], ['Leipzig', 'Saxony', '04109', 'DE'], ['Dortmund', 'North Rhine-Westphalia', '44135', 'DE'], ['Hanover', 'Lower Saxony', '30159', 'DE'],
  ['Utrecht', 'Utrecht', '3511', 'NL'], ['Rotterdam', 'South Holland', '3011', 'NL'], ['Antwerp', 'Antwerp', '2000', 'BE'], ['Vienna', 'Vienna', '1010', 'AT'],
  ['Graz', 'Styria', '8010', 'AT'], ['Strasbourg', 'Grand Est', '67000', 'FR'], ['Copenhagen', 'Capital Region', '1050', 'DK'], ['Poznań', 'Greater Poland', '61-001', 'PL'],
]
export const STREETS = ['Hauptstraße', 'Gartenweg', 'Lindenallee', 'Bahnhofstraße', 'Schulstraße', 'Kirchplatz', 'Waldweg', 'Rosenstraße', 'Bergstraße', 'Am Markt']
export const slug = (s: string) => s.toLowerCase().normalize('NFD').replace(/[\u0300-\u036f]/g, '').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')
export const title = (s: string) => s.replace(/(^|\s)([a-z])/g, (_, space: string, ch: string) => space + ch.toUpperCase())

export type Group = 'snake' | 'gecko' | 'lizard' | 'tortoise'
export const groupOf = (p: Profile): Group => (['BP', 'CS', 'HN', 'KS', 'BI', 'CP'].includes(p.code) ? 'snake' : ['LG', 'CG'].includes(p.code) ? 'gecko' : p.code === 'TH' ? 'tortoise' : 'lizard')

/** Medical conditions per group, with their medication doses. */
export const CONDITIONS: Record<Group, [name: string, category: string, severity: string, treatment: string | null, drug: [name: string, dose: number, unit: string, route: string] | null][]> = {
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

/** The odd free-text note in the daily log. */
export const NOTES = ['In blue; eyes cloudy.', 'Moved to a bigger tub.', 'Looking plump and alert.', 'Soaked for 20 minutes.', 'Photographed for the website.',
  'Very active tonight.', 'Hid all week; left alone.', 'Checked temperatures: hot spot 32 °C, cool side 26 °C.', 'New hide added.', 'Drank a lot after the cleaning.']

/** Rack kinds: where a tub-housed animal lives (by quarantine, age and species), with their tub size and substrate. */
export const RACKS = {
  P: { label: 'Python rack', tub: [85, 45, 15], substrate: 'aspen', room: 'snake' },
  C: { label: 'Colubrid rack', tub: [60, 40, 15], substrate: 'aspen', room: 'snake' },
  G: { label: 'Gecko rack', tub: [60, 40, 20], substrate: 'paper towel and moss hide', room: 'lizard' },
  H: { label: 'Hatchling rack', tub: [35, 25, 12], substrate: 'paper towel', room: 'snake' },
  Q: { label: 'Quarantine rack', tub: [60, 40, 15], substrate: 'paper towel', room: 'quarantine' },
} as const satisfies Record<string, { label: string; tub: readonly [number, number, number]; substrate: string; room: 'snake' | 'lizard' | 'quarantine' }>
export type RackKey = keyof typeof RACKS
