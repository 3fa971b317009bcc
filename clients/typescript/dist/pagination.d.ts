import type { Page } from './types.ts';
export declare class Paginator<T> implements AsyncIterable<T> {
    /** Fetches the page after `cursor` (the first page for undefined). */
    private readonly fetchPage;
    /** A cursor to resume from, e.g. one kept from an earlier run. */
    private readonly startCursor?;
    constructor(
    /** Fetches the page after `cursor` (the first page for undefined). */
    fetchPage: (cursor: string | undefined) => Promise<Page<T>>, 
    /** A cursor to resume from, e.g. one kept from an earlier run. */
    startCursor?: string | undefined);
    /** Page by page, for callers that want `next_cursor` (to resume later) or to batch per page. */
    pages(): AsyncGenerator<Page<T>, void, undefined>;
    [Symbol.asyncIterator](): AsyncGenerator<T, void, undefined>;
    /** Every item, all pages followed: for lists known to be small. */
    toArray(): Promise<T[]>;
}
