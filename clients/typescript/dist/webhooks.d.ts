import { WebhookVerificationError } from 'standardwebhooks';
import type { Schemas } from './types.ts';
declare global {
    /**
     * standardwebhooks' declarations name Node's `Buffer`, so a program type-checked without @types/node (a browser
     * or Deno build, `"types": []`) failed inside them. An empty interface merges with Node's where it exists and
     * names nothing new: the SDK itself only passes strings.
     */
    interface Buffer {
    }
}
/** A delivered event: `{ id, type, created_at, data: { object, previous_attributes? } }`. */
export type WebhookEvent = Schemas['Event'];
export { WebhookVerificationError };
/**
 * Checks a delivery's signature with the endpoint's secret (`whsec_…`, shown once when the endpoint was created)
 * and returns its event. Throws WebhookVerificationError when the signature, the timestamp or a header is wrong.
 *
 * `body` must be the raw request body exactly as received (read it with `await request.text()`, before any JSON
 * parsing): the signature covers those bytes, and re-serialised JSON is not guaranteed to match them.
 */
export declare function verifyWebhook(secret: string, body: string, headers: Headers | Record<string, string>): WebhookEvent;
