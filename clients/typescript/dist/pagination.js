export class Paginator {
    fetchPage;
    startCursor;
    constructor(
    /** Fetches the page after `cursor` (the first page for undefined). */
    fetchPage, 
    /** A cursor to resume from, e.g. one kept from an earlier run. */
    startCursor) {
        this.fetchPage = fetchPage;
        this.startCursor = startCursor;
    }
    /** Page by page, for callers that want `next_cursor` (to resume later) or to batch per page. */
    async *pages() {
        let cursor = this.startCursor;
        for (;;) {
            const page = await this.fetchPage(cursor);
            yield page;
            if (!page.has_more)
                return;
            // A page saying "more" without a new cursor would loop forever on the same page.
            if (!page.next_cursor || page.next_cursor === cursor)
                throw new Error('the service said has_more without a new next_cursor');
            cursor = page.next_cursor;
        }
    }
    async *[Symbol.asyncIterator]() {
        for await (const page of this.pages())
            yield* page.data;
    }
    /** Every item, all pages followed: for lists known to be small. */
    async toArray() {
        const items = [];
        for await (const item of this)
            items.push(item);
        return items;
    }
}
