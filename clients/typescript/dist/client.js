// The SDK's surface: one method per operation, grouped by resource area as the reference groups them. Each
// method is one line handing typed input to the transport; the types come from the generated document, so a
// method cannot send a field, filter or header the service does not publish.
import { Paginator } from "./pagination.js";
import { Transport } from "./transport.js";
import { resumingStream } from "./streams.js";
export class HusbandryClient {
    transport;
    constructor(options) {
        this.transport = new Transport(options);
    }
    /** The key's rate-limit budget as the latest answer reported it. */
    get rateLimit() { return this.transport.rateLimit; }
    /**
     * Any operation by its operationId, answering the parsed body and the Response (its body already read): for
     * headers such as ETag (to send as `ifMatch`) or Idempotent-Replayed. Retries as every other call does.
     */
    request(operationId, input, options) {
        return this.transport.request(operationId, input, options);
    }
    async call(operationId, input, options) {
        return (await this.transport.request(operationId, input, options)).data;
    }
    /** A lazily fetched list; a `cursor` in `query` is where it starts. */
    list(operationId, query, options, input = {}) {
        const { cursor: start, ...filters } = (query ?? {});
        const page = (cursor) => this.call(operationId, { ...input, query: { ...filters, cursor } }, options);
        return new Paginator(page, start);
    }
    // ---- account and reference data ----
    /** GET /status: public; `limited` while access is restricted. */
    status = (options) => this.call('getStatus', {}, options);
    /** GET /me: the account behind the key, the scopes it holds and its rate limits. */
    me = (options) => this.call('getMe', {}, options);
    errorTypes = {
        /** GET /errors/{code}: what a problem's `code` means (its `type` URL). */
        get: (code, options) => this.call('getErrorType', { path: { code } }, options),
    };
    species = { list: (query, options) => this.list('listSpecies', query, options) };
    animalTypes = { list: (query, options) => this.list('listAnimalTypes', query, options) };
    activityTypes = { list: (query, options) => this.list('listActivityTypes', query, options) };
    // ---- records ----
    animals = {
        list: (query, options) => this.list('listAnimals', query, options),
        get: (id, options) => this.call('getAnimal', { path: { id } }, options),
        create: (animal, options) => this.call('createAnimal', { body: animal }, options),
        /** A JSON merge patch: members present replace, `null` clears. */
        update: (id, patch, options) => this.call('updateAnimal', { path: { id }, body: patch, headers: { 'if-match': options?.ifMatch } }, options),
        delete: (id, options) => this.call('deleteAnimal', { path: { id }, headers: { 'if-match': options?.ifMatch } }, options),
    };
    activities = {
        list: (query, options) => this.list('listActivities', query, options),
        /**
         * POST /activities with an Idempotency-Key (a fresh UUID unless `options.idempotencyKey`), kept on every
         * retry: however often a lost answer makes the SDK send it again, the activity is written once.
         */
        create: (activity, options) => this.call('createActivity', { body: activity }, options),
    };
    breeding = {
        clutches: { list: (query, options) => this.list('listClutches', query, options) },
        records: { list: (query, options) => this.list('listBreedingRecords', query, options) },
    };
    medical = {
        conditions: { list: (query, options) => this.list('listConditions', query, options) },
    };
    documents = { list: (query, options) => this.list('listDocuments', query, options) };
    customers = {
        contacts: { list: (query, options) => this.list('listContacts', query, options) },
        invoices: { list: (query, options) => this.list('listInvoices', query, options) },
    };
    // ---- environment and sensors ----
    environment = {
        environments: { list: (query, options) => this.list('listEnvironments', query, options) },
        metrics: { list: (query, options) => this.list('listMetrics', query, options) },
        readings: {
            /** GET /environment/readings as JSON rows (raw, bucketed with `interval`/`agg`, or `latest`), page after page. */
            list: (query, options) => this.list('queryReadings', query, options),
            /**
             * GET /environment/readings/stream as an async iterator of `reading` events (or `bucket` events with `interval`),
             * plus `skipped` when a resume reached past the replay window. It reconnects by itself with Last-Event-ID, so
             * readings missed meanwhile come first (at least once: drop repeats by `id`); `break` or `signal` ends it.
             */
            stream: (query, options) => resumingStream((lastEventId, signal) => this.transport.open('streamReadings', { query: query ?? {} }, lastEventId, signal), options),
        },
        alertRules: {
            list: (query, options) => this.list('listAlertRules', query, options),
            get: (id, options) => this.call('getAlertRule', { path: { id } }, options),
            /** Sent with an Idempotency-Key, like POST /activities. */
            create: (rule, options) => this.call('createAlertRule', { body: rule }, options),
            update: (id, patch, options) => this.call('updateAlertRule', { path: { id }, body: patch, headers: { 'if-match': options?.ifMatch } }, options),
            delete: (id, options) => this.call('deleteAlertRule', { path: { id }, headers: { 'if-match': options?.ifMatch } }, options),
        },
        alerts: {
            list: (query, options) => this.list('listAlerts', query, options),
            get: (id, options) => this.call('getAlert', { path: { id } }, options),
        },
    };
    sensors = {
        devices: {
            list: (query, options) => this.list('listDevices', query, options),
            get: (id, options) => this.call('getDevice', { path: { id } }, options),
            /** Registers a device (or completes a pairing with `claim_code`); the answer carries its key, shown once. */
            create: (device, options) => this.call('createDevice', { body: device }, options),
            update: (id, patch, options) => this.call('updateDevice', { path: { id }, body: patch, headers: { 'if-match': options?.ifMatch } }, options),
            delete: (id, options) => this.call('deleteDevice', { path: { id }, headers: { 'if-match': options?.ifMatch } }, options),
        },
        /** Pairing (RFC 8628 shape), from the device's side: no key needed. */
        claims: {
            start: (claim = {}, options) => this.call('startDeviceClaim', { body: claim }, options),
            status: (query, options) => this.call('getDeviceClaim', { query }, options),
        },
        readings: {
            /** POST /sensors/readings with a device key (only 429/503 are retried: a batch without `ts` would be stored twice). */
            submit: (batch, options) => this.call('submitReadings', { body: batch }, options),
        },
    };
    // ---- webhooks and events ----
    webhooks = {
        endpoints: {
            list: (query, options) => this.list('listWebhookEndpoints', query, options),
            get: (id, options) => this.call('getWebhookEndpoint', { path: { id } }, options),
            /** The answer's `secret` (`whsec_…`) is shown this once: keep it for verifyWebhook. */
            create: (endpoint, options) => this.call('createWebhookEndpoint', { body: endpoint }, options),
            update: (id, patch, options) => this.call('updateWebhookEndpoint', { path: { id }, body: patch }, options),
            delete: (id, options) => this.call('deleteWebhookEndpoint', { path: { id } }, options),
            /** Sends a `webhook_endpoint.test` event to the endpoint. */
            test: (id, options) => this.call('testWebhookEndpoint', { path: { id } }, options),
            attempts: (id, query, options) => this.list('listWebhookAttempts', query, options, { path: { id } }),
            recover: (id, body, options) => this.call('recoverWebhookEndpoint', { path: { id }, body }, options),
            resend: (id, body, options) => this.call('resendWebhookEvent', { path: { id }, body }, options),
        },
    };
    events = {
        list: (query, options) => this.list('listEvents', query, options),
        /** An event exactly as its deliveries carry it. */
        get: (id, options) => this.call('getEvent', { path: { id } }, options),
        /** GET /events/stream as an async iterator of `event` events, resumed with Last-Event-ID as readings' stream is. */
        stream: (options) => resumingStream((lastEventId, signal) => this.transport.open('streamEvents', {}, lastEventId, signal), options),
    };
}
