import type { Schemas } from './types.ts';
export type Problem = Schemas['Problem'];
/** One entry of a problem's `errors`: a JSON Pointer into the request and what is wrong there. */
export type ProblemDetail = Problem['errors'][number];
export declare class ProblemError extends Error {
    /** The problem body as sent (or as made up for an answer that had none). */
    readonly problem: Problem;
    /** The response's headers: X-Request-Id, Retry-After, RateLimit… */
    readonly headers: Headers;
    readonly name = "ProblemError";
    constructor(
    /** The problem body as sent (or as made up for an answer that had none). */
    problem: Problem, 
    /** The response's headers: X-Request-Id, Retry-After, RateLimit… */
    headers: Headers);
    get status(): number;
    /** A URL naming the kind of problem; GET it (or `client.errorTypes.get(code)`) for what it means. */
    get type(): string;
    get title(): string;
    get detail(): string;
    /** The stable machine-readable code, e.g. `validation_failed`, `rate_limited`, `not_found`. */
    get code(): string;
    get errors(): ProblemDetail[];
    get requestId(): string;
    /** Reads `response`'s body (which it consumes) into a ProblemError. */
    static from(response: Response): Promise<ProblemError>;
}
