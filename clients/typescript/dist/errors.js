export class ProblemError extends Error {
    problem;
    headers;
    name = 'ProblemError';
    constructor(
    /** The problem body as sent (or as made up for an answer that had none). */
    problem, 
    /** The response's headers: X-Request-Id, Retry-After, RateLimit… */
    headers) {
        // The message names what was wrong where, so an uncaught one in a log is enough to fix the call.
        const where = problem.errors.map((e) => `${e.path}: ${e.message}`).join('; ');
        super(`${problem.status} ${problem.code}: ${problem.detail || problem.title}${where ? ` (${where})` : ''}`);
        this.problem = problem;
        this.headers = headers;
    }
    get status() { return this.problem.status; }
    /** A URL naming the kind of problem; GET it (or `client.errorTypes.get(code)`) for what it means. */
    get type() { return this.problem.type; }
    get title() { return this.problem.title; }
    get detail() { return this.problem.detail; }
    /** The stable machine-readable code, e.g. `validation_failed`, `rate_limited`, `not_found`. */
    get code() { return this.problem.code; }
    get errors() { return this.problem.errors; }
    get requestId() { return this.problem.request_id; }
    /** Reads `response`'s body (which it consumes) into a ProblemError. */
    static async from(response) {
        const text = await response.text().catch(() => '');
        if (response.headers.get('content-type')?.includes('json')) {
            try {
                const body = JSON.parse(text);
                // The service always sends every member; the defaults only keep the getters honest for another sender
                // (RFC 9457: an absent type means about:blank).
                if (isProblem(body))
                    return new ProblemError({ type: 'about:blank', detail: '', request_id: response.headers.get('x-request-id') ?? '', errors: [], ...body }, response.headers);
            }
            catch {
                // Not JSON after all: described below like any other foreign answer.
            }
        }
        return new ProblemError({
            type: 'about:blank',
            title: response.statusText || `HTTP ${response.status}`,
            status: response.status,
            detail: text.slice(0, 500),
            code: 'unexpected_response',
            request_id: response.headers.get('x-request-id') ?? '',
            errors: [],
        }, response.headers);
    }
}
/** Enough of a problem to be one; the rest is filled in above. */
function isProblem(body) {
    const b = body;
    return typeof b === 'object' && b !== null && typeof b.status === 'number' && typeof b.code === 'string' && typeof b.title === 'string'
        && (b.errors === undefined || Array.isArray(b.errors));
}
