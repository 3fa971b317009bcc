// A list as an async iterator (CONTRACT §4): each page's `next_cursor` is passed as `cursor` for the next one
// until `has_more` is false. Pages are fetched lazily, one at a time, as the loop asks for items, so breaking
// out early fetches nothing more. Cursors are keyset positions: rows added or removed meanwhile neither repeat
// nor go missing.
import type { Page } from './types.ts'

export class Paginator<T> implements AsyncIterable<T> {
  constructor(
    /** Fetches the page after `cursor` (the first page for undefined). */
    private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
    /** A cursor to resume from, e.g. one kept from an earlier run. */
    private readonly startCursor?: string,
  ) {}

  /** Page by page, for callers that want `next_cursor` (to resume later) or to batch per page. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.startCursor
    for (;;) {
      const page = await this.fetchPage(cursor)
      yield page
      if (!page.has_more) return
      // A page saying "more" without a new cursor would loop forever on the same page.
      if (!page.next_cursor || page.next_cursor === cursor) throw new Error('the service said has_more without a new next_cursor')
      cursor = page.next_cursor
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data
  }

  /** Every item, all pages followed: for lists known to be small. */
  async toArray(): Promise<T[]> {
    const items: T[] = []
    for await (const item of this) items.push(item)
    return items
  }
}
