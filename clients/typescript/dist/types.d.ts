import type { components, operations, paths } from './api.ts';
export type Schemas = components['schemas'];
export type OperationId = keyof operations;
type Op<K extends OperationId> = operations[K];
/** `never` for "none"; shapes below test for it. */
type Or<T, Else> = [T] extends [never] ? Else : T;
export type PathParamsOf<K extends OperationId> = NonNullable<Op<K>['parameters']['path']>;
export type QueryOf<K extends OperationId> = NonNullable<Op<K>['parameters']['query']>;
export type HeadersOf<K extends OperationId> = NonNullable<Op<K>['parameters']['header']>;
type RequestBody<K extends OperationId> = Op<K> extends {
    requestBody?: infer R;
} ? NonNullable<R> : never;
/** The JSON body an operation takes (the SDK always sends application/json, which every write accepts). */
export type BodyOf<K extends OperationId> = RequestBody<K> extends {
    content: {
        'application/json': infer B;
    };
} ? B : never;
type BodyRequired<K extends OperationId> = Op<K> extends {
    requestBody: object;
} ? true : false;
type Responses<K extends OperationId> = Op<K>['responses'];
type SuccessStatus = 200 | 201 | 202 | 204;
/** The JSON an operation answers on success; `void` when it answers 204 only. */
export type ResultOf<K extends OperationId> = Or<{
    [S in keyof Responses<K> & SuccessStatus]: Responses<K>[S] extends {
        content: {
            'application/json': infer B;
        };
    } ? B : never;
}[keyof Responses<K> & SuccessStatus], void>;
/** Everything a call to operation K sends besides the key: typed, and present only where the document has it. */
export type Input<K extends OperationId> = ([PathParamsOf<K>] extends [never] ? {
    path?: undefined;
} : {
    path: PathParamsOf<K>;
}) & ([QueryOf<K>] extends [never] ? {
    query?: undefined;
} : {
    query?: QueryOf<K>;
}) & ([BodyOf<K>] extends [never] ? {
    body?: undefined;
} : BodyRequired<K> extends true ? {
    body: BodyOf<K>;
} : {
    body?: BodyOf<K>;
}) & ([HeadersOf<K>] extends [never] ? {
    headers?: undefined;
} : {
    headers?: HeadersOf<K>;
});
/** One page of a list (CONTRACT §4). */
export interface Page<T> {
    data: T[];
    has_more: boolean;
    next_cursor: string | null;
}
/** The item type of a cursor-paginated list operation; `never` for any other. */
export type ItemOf<K extends OperationId> = ResultOf<K> extends Page<infer T> ? T : never;
/** The operations that answer a page and take a `cursor`. */
export type ListOperationId = {
    [K in OperationId]: [ItemOf<K>] extends [never] ? never : 'cursor' extends keyof QueryOf<K> ? K : never;
}[OperationId];
/** A list's filters; the SDK sets `cursor` itself while iterating (pass one only to resume from it). */
export type ListQuery<K extends ListOperationId> = QueryOf<K>;
export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';
/**
 * Where the document serves operation K: the one (method, path) pair whose entry in `paths` is `operations[K]`.
 * The route table is checked against this, so a route the SDK calls always exists, with that method, in the
 * document the types came from.
 */
export type RouteOf<K extends OperationId> = {
    [P in keyof paths]: {
        [M in 'get' | 'post' | 'patch' | 'delete']: paths[P][M] extends Op<K> ? Op<K> extends paths[P][M] ? {
            method: Uppercase<M>;
            path: P;
        } : never : never;
    }['get' | 'post' | 'patch' | 'delete'];
}[keyof paths];
/** A route, plus `idempotencyKey: true` (allowed only where the operation takes an Idempotency-Key header). */
export type Route<K extends OperationId> = RouteOf<K> & {
    idempotencyKey?: [HeadersOf<K>] extends [never] ? never : 'idempotency-key' extends keyof HeadersOf<K> ? boolean : never;
};
export {};
