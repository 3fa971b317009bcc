// Server-Sent Event streams (GET /environment/readings/stream, GET /events/stream) as async iterators that resume:
// the SDK reads the stream itself (no EventSource: it needs the key in a header, and runs on Node and Bun alike),
// and when the connection ends (a network error, the server's `shutdown` when it drains, `dropped` for a client
// that fell behind) it connects again with the last id it handed out as Last-Event-ID, so the service replays what
// was missed (readings at least once: drop repeats by `id`). A `revoked` key ends the iteration with a
// ProblemError; so does a refusal other than 429/503 (which are waited out, as every call waits them out).
import { ProblemError } from "./errors.js";
import { retryAfterMs } from "./transport.js";
const MAX_DELAY_MS = 30_000;
/** The events of `open`'s stream, connected again with Last-Event-ID until `signal` aborts. */
export async function* resumingStream(open, options = {}) {
    let lastEventId = options.lastEventId;
    let retryMs = 1_000;
    let failures = 0;
    for (;;) {
        let reason = 'connection ended';
        let delayMs;
        try {
            const response = await open(lastEventId, options.signal);
            if (response.status === 429 || response.status === 503) {
                const problem = await ProblemError.from(response);
                delayMs = retryAfterMs(response.headers.get('retry-after')) ?? retryMs;
                reason = problem.code;
            }
            else if (!response.ok || !response.body) {
                throw await ProblemError.from(response);
            }
            else {
                failures = 0;
                for await (const event of parseEvents(response.body)) {
                    if (event.retry !== undefined) {
                        retryMs = event.retry;
                        continue;
                    }
                    if (event.event === 'revoked')
                        throw new ProblemError({ type: 'about:blank', title: 'Invalid token', status: 401, code: 'invalid_token', detail: 'The key was revoked while the stream was open.', request_id: response.headers.get('x-request-id') ?? '', errors: [] }, response.headers);
                    if (event.id !== undefined)
                        lastEventId = event.id;
                    const parsed = { id: event.id, event: event.event, data: JSON.parse(event.data) };
                    yield parsed;
                    if (event.event === 'shutdown' || event.event === 'dropped')
                        reason = event.event;
                }
            }
        }
        catch (error) {
            if (options.signal?.aborted || error instanceof ProblemError)
                throw error;
            reason = String(error?.message ?? error);
            failures++;
        }
        if (options.signal?.aborted || options.reconnect === false)
            return;
        const wait = delayMs ?? Math.min(MAX_DELAY_MS, retryMs * 2 ** Math.max(0, failures - 1));
        options.onReconnect?.({ reason, lastEventId, delayMs: wait });
        await new Promise((resolve) => {
            const timer = setTimeout(resolve, wait);
            options.signal?.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
        });
        if (options.signal?.aborted)
            return;
    }
}
/** The event-stream format (WHATWG HTML §9.2.6): fields per line, an empty line ends an event, `:` lines are comments. */
async function* parseEvents(body) {
    const decoder = new TextDecoder();
    let buffer = '';
    let id;
    let event = '';
    let data = [];
    const reader = body.getReader();
    try {
        for (;;) {
            const { value, done } = await reader.read();
            if (done)
                return;
            buffer += decoder.decode(value, { stream: true });
            let newline;
            while ((newline = buffer.search(/\r\n|\n|\r/)) >= 0) {
                const line = buffer.slice(0, newline);
                buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
                if (line === '') {
                    if (data.length)
                        yield { id, event: event || 'message', data: data.join('\n') };
                    event = '';
                    data = [];
                    continue;
                }
                if (line.startsWith(':'))
                    continue;
                const colon = line.indexOf(':');
                const field = colon < 0 ? line : line.slice(0, colon);
                const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
                if (field === 'data')
                    data.push(text);
                else if (field === 'event')
                    event = text;
                else if (field === 'id' && !text.includes('\0'))
                    id = text;
                else if (field === 'retry' && /^\d+$/.test(text))
                    yield { id, event: '', data: '', retry: Number(text) };
            }
        }
    }
    finally {
        await reader.cancel().catch(() => { });
    }
}
