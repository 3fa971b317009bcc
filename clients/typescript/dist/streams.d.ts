/** One event: `event` is its name (`reading`, `bucket`, `event`, `skipped`, `dropped`, `shutdown`, `revoked`). */
export interface StreamEvent<T = unknown> {
    id: string | undefined;
    event: string;
    data: T;
}
export interface StreamOptions {
    /** Ends the iteration (and the connection). */
    signal?: AbortSignal;
    /** Resume after this id (one a previous stream handed out). */
    lastEventId?: string;
    /** Connect again after the connection ends (default true); false ends the iteration instead. */
    reconnect?: boolean;
    /** Called on each reconnection, with why and the id it resumes after. */
    onReconnect?: (event: {
        reason: string;
        lastEventId: string | undefined;
        delayMs: number;
    }) => void;
}
/** How the client opens a stream: the request with its key and a Last-Event-ID, answered as the raw Response. */
export type StreamOpener = (lastEventId: string | undefined, signal: AbortSignal | undefined) => Promise<Response>;
/** The events of `open`'s stream, connected again with Last-Event-ID until `signal` aborts. */
export declare function resumingStream<T>(open: StreamOpener, options?: StreamOptions): AsyncGenerator<StreamEvent<T>>;
