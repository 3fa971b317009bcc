// JSON pages of buckets as they were sent, for the next ask of the same page (issue 57). A dashboard asks the same
// question every few seconds, and all but the newest of its pages are made from kept buckets (kept-buckets.ts): the
// very row objects of the last ask, until a write into their time or their expiry has them read again. Making text of
// those rows again (presenting them, JSON.stringify, gzip) was most of what such a page cost: at the dense site the
// pages' JSON.stringify alone was 23.6 % of the server's CPU samples as the dashboards first asked, gzip 6.2 %.
//
// A page made from the same row objects, in the same order, as a page sent before under the same key (the account,
// the request's filters and window, the page's size and cursor, whether it is gzipped) is that page, byte for byte:
// its body is sent again. Only identity is trusted: a row read from the store is a new object every time, so any
// change to a page's rows (a write into a kept bucket's time, a bucket read again, a window's partial edge) makes it
// anew. Row objects are never changed once a store has answered them (kept-buckets.ts interns their strings as it
// keeps them, before anyone presents them, for text that is the same).
//
// Only a page made wholly of kept rows is held: any other cannot be made of the same objects again, and holding it
// held its rows too. On QuestDB 9.3.2, whose newest buckets are read from the store at every ask, the dense bench's
// server grew to 836 MiB that way (562 before) and its full collections took 1.7 s in all (each up to 500 ms).

import type { JsonBody } from '../src/http/compression.ts'

/**
 * The most bytes of bodies kept: a 10,000-row page of 5-minute averages is about 220 KB gzipped (1.8 MB as text, for a
 * client that takes no gzip), so the dense site's 25 rooms of 4 pages each (a walk's fifth holds its newest buckets, read
 * from the store at every ask) take 22 MB.
 */
const MAX_BYTES = 32 * 2 ** 20

interface Sent<Row> { rows: readonly Row[]; body: JsonBody; bytes: number }

export class RenderedPages<Row extends object> {
  private readonly pages = new Map<string, Sent<Row>>()
  private bytes = 0
  private rows = 0

  /**
   * `maxRows`: the most rows the pages held may be made from (0 holds none). A page holds its rows for as long as it is
   * held: the kept buckets' own when it was made, but a bucket read again or dropped there since stays here until its
   * page is made anew or dropped. `lasting`: whether rows are all kept now (they may be the same objects next time).
   */
  constructor(private readonly maxRows: number, private readonly lasting: (rows: readonly Row[]) => boolean, private readonly onReuse: () => void = () => {}, private readonly maxBytes = MAX_BYTES) {}

  /**
   * The body for the page of `rows` under `key`: the one sent before if it was made from these very rows, otherwise
   * `make()`'s, held for the next ask where its rows last. The least recently sent are dropped first past the bounds.
   */
  body(key: string, rows: readonly Row[], make: () => JsonBody): JsonBody {
    const sent = this.pages.get(key)
    if (sent) {
      this.drop(key, sent)
      if (sameObjects(sent.rows, rows)) {
        this.onReuse()
        this.keep(key, sent)
        return sent.body
      }
    }
    const body = make()
    const bytes = typeof body.body === 'string' ? body.body.length : body.body.byteLength
    if (bytes <= this.maxBytes / 4 && rows.length <= this.maxRows / 4 && this.lasting(rows)) this.keep(key, { rows, body, bytes })
    return body
  }

  private keep(key: string, sent: Sent<Row>): void {
    this.pages.set(key, sent)
    this.bytes += sent.bytes
    this.rows += sent.rows.length
    for (const [oldest, entry] of this.pages) {
      if (this.bytes <= this.maxBytes && this.rows <= this.maxRows) break
      this.drop(oldest, entry)
    }
  }

  private drop(key: string, sent: Sent<Row>): void {
    this.pages.delete(key)
    this.bytes -= sent.bytes
    this.rows -= sent.rows.length
  }
}

const sameObjects = (a: readonly object[], b: readonly object[]) => {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
