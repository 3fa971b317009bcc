// RenderedPages (ingest/rendered-pages.ts): a body is sent again only for the very same row objects under the same
// key; only pages whose rows last (all kept) are held; the least recently sent go first past the bounds.
import { describe, expect, test } from 'bun:test'
import type { JsonBody } from '../../src/http/compression.ts'
import { RenderedPages } from '../../ingest/rendered-pages.ts'

const rowsOf = (n: number) => Array.from({ length: n }, (_, i) => ({ i }))
/** A maker that counts its calls, each body new. */
const maker = () => {
  let made = 0
  return { make: (): JsonBody => ({ body: `page ${++made}`, gzipped: false, varies: true }), made: () => made }
}
const always = () => true

describe('pages sent again', () => {
  test('the same row objects under the same key: the body sent before; equal rows that are other objects, or another key: made anew', () => {
    let resent = 0
    const pages = new RenderedPages<object>(1_000, always, () => resent++)
    const rows = rowsOf(3)
    const { make, made } = maker()
    const first = pages.body('k', rows, make)
    expect(pages.body('k', [...rows], make)).toBe(first)
    expect({ made: made(), resent }).toEqual({ made: 1, resent: 1 })
    expect(pages.body('k', rowsOf(3), make)).not.toBe(first)
    expect(pages.body('other', rows, make).body).toBe('page 3')
    expect({ made: made(), resent }).toEqual({ made: 3, resent: 1 })
  })

  test('a page whose rows do not last is not held: asked again, it is made again', () => {
    const pages = new RenderedPages<object>(1_000, () => false)
    const rows = rowsOf(3)
    const { make, made } = maker()
    pages.body('k', rows, make)
    pages.body('k', rows, make)
    expect(made()).toBe(2)
  })

  test('past the rows bound the least recently sent page is dropped first', () => {
    const pages = new RenderedPages<object>(40, always)
    const [a, b, c, d] = [rowsOf(10), rowsOf(10), rowsOf(10), rowsOf(10)]
    const { make, made } = maker()
    for (const [key, rows] of [['a', a], ['b', b], ['c', c], ['d', d], ['a', a]] as const) pages.body(key, rows, make)
    expect(made()).toBe(4)
    // 50 rows past 40: b, the least recently sent, goes; a, c and d stay.
    pages.body('e', rowsOf(10), make)
    expect(made()).toBe(5)
    pages.body('a', a, make)
    pages.body('d', d, make)
    expect(made()).toBe(5)
    pages.body('b', b, make)
    expect(made()).toBe(6)
  })
})
