// The SDK's surface: one method per operation, grouped by resource area as the reference groups them. Each
// method is one line handing typed input to the transport; the types come from the generated document, so a
// method cannot send a field, filter or header the service does not publish.
import { Paginator } from './pagination.ts'
import type { RoutedOperationId } from './routes.ts'
import { Transport, type CallOptions, type ClientOptions, type RateLimitStatus, type Result } from './transport.ts'
import { resumingStream, type StreamEvent, type StreamOptions } from './streams.ts'
import type { BodyOf, Input, ItemOf, ListOperationId, ListQuery, Page, PathParamsOf, QueryOf, ResultOf, Schemas } from './types.ts'

/** Options of a conditional write: `ifMatch` is the ETag you read (see `request`); a stale one is a 412. */
export interface ConditionalOptions extends CallOptions { ifMatch?: string }

export class HusbandryClient {
  private readonly transport: Transport

  constructor(options: ClientOptions) {
    this.transport = new Transport(options)
  }

  /** The key's rate-limit budget as the latest answer reported it. */
  get rateLimit(): RateLimitStatus | undefined { return this.transport.rateLimit }

  /**
   * Any operation by its operationId, answering the parsed body and the Response (its body already read): for
   * headers such as ETag (to send as `ifMatch`) or Idempotent-Replayed. Retries as every other call does.
   */
  request<K extends RoutedOperationId>(operationId: K, input: Input<K>, options?: CallOptions): Promise<Result<K>> {
    return this.transport.request(operationId, input, options)
  }

  private async call<K extends RoutedOperationId>(operationId: K, input: Input<K>, options?: CallOptions): Promise<ResultOf<K>> {
    return (await this.transport.request(operationId, input, options)).data
  }

  /** A lazily fetched list; a `cursor` in `query` is where it starts. */
  private list<K extends ListOperationId & RoutedOperationId>(operationId: K, query: ListQuery<K> | undefined, options: CallOptions | undefined, input: object = {}): Paginator<ItemOf<K>> {
    const { cursor: start, ...filters } = (query ?? {}) as { cursor?: string }
    const page = (cursor: string | undefined) =>
      this.call(operationId, { ...input, query: { ...filters, cursor } } as Input<K>, options) as Promise<Page<ItemOf<K>>>
    return new Paginator(page, start)
  }

  // ---- account and reference data ----

  /** GET /status: public; `limited` while access is restricted. */
  status = (options?: CallOptions) => this.call('getStatus', {}, options)
  /** GET /me: the account behind the key, the scopes it holds and its rate limits. */
  me = (options?: CallOptions) => this.call('getMe', {}, options)
  errorTypes = {
    /** GET /errors/{code}: what a problem's `code` means (its `type` URL). */
    get: (code: PathParamsOf<'getErrorType'>['code'], options?: CallOptions) => this.call('getErrorType', { path: { code } }, options),
  }
  species = { list: (query?: ListQuery<'listSpecies'>, options?: CallOptions) => this.list('listSpecies', query, options) }
  animalTypes = { list: (query?: ListQuery<'listAnimalTypes'>, options?: CallOptions) => this.list('listAnimalTypes', query, options) }
  activityTypes = { list: (query?: ListQuery<'listActivityTypes'>, options?: CallOptions) => this.list('listActivityTypes', query, options) }

  // ---- records ----

  animals = {
    list: (query?: ListQuery<'listAnimals'>, options?: CallOptions) => this.list('listAnimals', query, options),
    get: (id: string, options?: CallOptions) => this.call('getAnimal', { path: { id } }, options),
    create: (animal: BodyOf<'createAnimal'>, options?: CallOptions) => this.call('createAnimal', { body: animal }, options),
    /** A JSON merge patch: members present replace, `null` clears. */
    update: (id: string, patch: BodyOf<'updateAnimal'>, options?: ConditionalOptions) =>
      this.call('updateAnimal', { path: { id }, body: patch, headers: { 'if-match': options?.ifMatch } }, options),
    delete: (id: string, options?: ConditionalOptions) => this.call('deleteAnimal', { path: { id }, headers: { 'if-match': options?.ifMatch } }, options),
  }

  activities = {
    list: (query?: ListQuery<'listActivities'>, options?: CallOptions) => this.list('listActivities', query, options),
    /**
     * POST /activities with an Idempotency-Key (a fresh UUID unless `options.idempotencyKey`), kept on every
     * retry: however often a lost answer makes the SDK send it again, the activity is written once.
     */
    create: (activity: BodyOf<'createActivity'>, options?: CallOptions) => this.call('createActivity', { body: activity }, options),
  }

  breeding = {
    clutches: { list: (query?: ListQuery<'listClutches'>, options?: CallOptions) => this.list('listClutches', query, options) },
    records: { list: (query?: ListQuery<'listBreedingRecords'>, options?: CallOptions) => this.list('listBreedingRecords', query, options) },
  }
  medical = {
    conditions: { list: (query?: ListQuery<'listConditions'>, options?: CallOptions) => this.list('listConditions', query, options) },
  }
  documents = { list: (query?: ListQuery<'listDocuments'>, options?: CallOptions) => this.list('listDocuments', query, options) }
  customers = {
    contacts: { list: (query?: ListQuery<'listContacts'>, options?: CallOptions) => this.list('listContacts', query, options) },
    invoices: { list: (query?: ListQuery<'listInvoices'>, options?: CallOptions) => this.list('listInvoices', query, options) },
  }

  // ---- environment and sensors ----

  environment = {
    environments: { list: (query?: ListQuery<'listEnvironments'>, options?: CallOptions) => this.list('listEnvironments', query, options) },
    metrics: { list: (query?: ListQuery<'listMetrics'>, options?: CallOptions) => this.list('listMetrics', query, options) },
    readings: {
      /** GET /environment/readings as JSON rows (raw, bucketed with `interval`/`agg`, or `latest`), page after page. */
      list: (query?: ListQuery<'queryReadings'>, options?: CallOptions) => this.list('queryReadings', query, options),
      /**
       * GET /environment/readings/stream as an async iterator of `reading` events (or `bucket` events with `interval`),
       * plus `skipped` when a resume reached past the replay window. It reconnects by itself with Last-Event-ID, so
       * readings missed meanwhile come first (at least once: drop repeats by `id`); `break` or `signal` ends it.
       */
      stream: (query?: Omit<QueryOf<'streamReadings'>, 'last_event_id'>, options?: StreamOptions): AsyncGenerator<StreamEvent<Schemas['ReadingRow']>> =>
        resumingStream((lastEventId, signal) => this.transport.open('streamReadings', { query: query ?? {} } as Input<'streamReadings'>, lastEventId, signal), options),
    },
    alertRules: {
      list: (query?: ListQuery<'listAlertRules'>, options?: CallOptions) => this.list('listAlertRules', query, options),
      get: (id: string, options?: CallOptions) => this.call('getAlertRule', { path: { id } }, options),
      /** Sent with an Idempotency-Key, like POST /activities. */
      create: (rule: BodyOf<'createAlertRule'>, options?: CallOptions) => this.call('createAlertRule', { body: rule }, options),
      update: (id: string, patch: BodyOf<'updateAlertRule'>, options?: ConditionalOptions) =>
        this.call('updateAlertRule', { path: { id }, body: patch, headers: { 'if-match': options?.ifMatch } }, options),
      delete: (id: string, options?: ConditionalOptions) => this.call('deleteAlertRule', { path: { id }, headers: { 'if-match': options?.ifMatch } }, options),
    },
    alerts: {
      list: (query?: ListQuery<'listAlerts'>, options?: CallOptions) => this.list('listAlerts', query, options),
      get: (id: string, options?: CallOptions) => this.call('getAlert', { path: { id } }, options),
    },
  }

  sensors = {
    devices: {
      list: (query?: ListQuery<'listDevices'>, options?: CallOptions) => this.list('listDevices', query, options),
      get: (id: string, options?: CallOptions) => this.call('getDevice', { path: { id } }, options),
      /** Registers a device (or completes a pairing with `claim_code`); the answer carries its key, shown once. */
      create: (device: BodyOf<'createDevice'>, options?: CallOptions) => this.call('createDevice', { body: device }, options),
      update: (id: string, patch: BodyOf<'updateDevice'>, options?: ConditionalOptions) =>
        this.call('updateDevice', { path: { id }, body: patch, headers: { 'if-match': options?.ifMatch } }, options),
      delete: (id: string, options?: ConditionalOptions) => this.call('deleteDevice', { path: { id }, headers: { 'if-match': options?.ifMatch } }, options),
    },
    /** Pairing (RFC 8628 shape), from the device's side: no key needed. */
    claims: {
      start: (claim: BodyOf<'startDeviceClaim'> = {}, options?: CallOptions) => this.call('startDeviceClaim', { body: claim }, options),
      status: (query: QueryOf<'getDeviceClaim'>, options?: CallOptions) => this.call('getDeviceClaim', { query }, options),
    },
    readings: {
      /** POST /sensors/readings with a device key (only 429/503 are retried: a batch without `ts` would be stored twice). */
      submit: (batch: BodyOf<'submitReadings'>, options?: CallOptions) => this.call('submitReadings', { body: batch }, options),
    },
  }

  // ---- webhooks and events ----

  webhooks = {
    endpoints: {
      list: (query?: ListQuery<'listWebhookEndpoints'>, options?: CallOptions) => this.list('listWebhookEndpoints', query, options),
      get: (id: string, options?: CallOptions) => this.call('getWebhookEndpoint', { path: { id } }, options),
      /** The answer's `secret` (`whsec_…`) is shown this once: keep it for verifyWebhook. */
      create: (endpoint: BodyOf<'createWebhookEndpoint'>, options?: CallOptions) => this.call('createWebhookEndpoint', { body: endpoint }, options),
      update: (id: string, patch: BodyOf<'updateWebhookEndpoint'>, options?: CallOptions) => this.call('updateWebhookEndpoint', { path: { id }, body: patch }, options),
      delete: (id: string, options?: CallOptions) => this.call('deleteWebhookEndpoint', { path: { id } }, options),
      /** Sends a `webhook_endpoint.test` event to the endpoint. */
      test: (id: string, options?: CallOptions) => this.call('testWebhookEndpoint', { path: { id } }, options),
      attempts: (id: string, query?: ListQuery<'listWebhookAttempts'>, options?: CallOptions) => this.list('listWebhookAttempts', query, options, { path: { id } }),
      recover: (id: string, body: BodyOf<'recoverWebhookEndpoint'>, options?: CallOptions) => this.call('recoverWebhookEndpoint', { path: { id }, body }, options),
      resend: (id: string, body: BodyOf<'resendWebhookEvent'>, options?: CallOptions) => this.call('resendWebhookEvent', { path: { id }, body }, options),
    },
  }

  events = {
    list: (query?: ListQuery<'listEvents'>, options?: CallOptions) => this.list('listEvents', query, options),
    /** An event exactly as its deliveries carry it. */
    get: (id: string, options?: CallOptions) => this.call('getEvent', { path: { id } }, options),
    /** GET /events/stream as an async iterator of `event` events, resumed with Last-Event-ID as readings' stream is. */
    stream: (options?: StreamOptions): AsyncGenerator<StreamEvent<ResultOf<'getEvent'>>> =>
      resumingStream((lastEventId, signal) => this.transport.open('streamEvents', {} as Input<'streamEvents'>, lastEventId, signal), options),
  }
}
