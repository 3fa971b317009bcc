// A tiny seeded PRNG: the same seed gives the same collection (Math.random cannot be seeded).

function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

export class Rng {
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
