// Webhook deliveries are signed per Standard Webhooks (CONTRACT §8): headers `webhook-id`, `webhook-timestamp`
// and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, several while a rotated
// secret is in its grace period). Verification is the standardwebhooks library's, not ours: it compares in
// constant time, accepts any of several signatures, and refuses timestamps more than 5 minutes off.
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
export { WebhookVerificationError };
/**
 * Checks a delivery's signature with the endpoint's secret (`whsec_…`, shown once when the endpoint was created)
 * and returns its event. Throws WebhookVerificationError when the signature, the timestamp or a header is wrong.
 *
 * `body` must be the raw request body exactly as received (read it with `await request.text()`, before any JSON
 * parsing): the signature covers those bytes, and re-serialised JSON is not guaranteed to match them.
 */
export function verifyWebhook(secret, body, headers) {
    const plain = headers instanceof Headers ? headerObject(headers) : lowerCased(headers);
    return new Webhook(secret).verify(body, plain);
}
/** Headers as a plain object, without iterating them (lib "DOM" alone, without "DOM.Iterable", has no iterator). */
function headerObject(headers) {
    const plain = {};
    headers.forEach((value, name) => { plain[name] = value; });
    return plain;
}
/** Plain header objects (Node's IncomingHttpHeaders, say) may not be lower-cased; the library looks names up as such. */
function lowerCased(headers) {
    return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}
