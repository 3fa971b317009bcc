import { Paginator } from './pagination.ts';
import type { RoutedOperationId } from './routes.ts';
import { type CallOptions, type ClientOptions, type RateLimitStatus, type Result } from './transport.ts';
import { type StreamEvent, type StreamOptions } from './streams.ts';
import type { BodyOf, Input, ListQuery, PathParamsOf, QueryOf, ResultOf, Schemas } from './types.ts';
/** Options of a conditional write: `ifMatch` is the ETag you read (see `request`); a stale one is a 412. */
export interface ConditionalOptions extends CallOptions {
    ifMatch?: string;
}
export declare class HusbandryClient {
    private readonly transport;
    constructor(options: ClientOptions);
    /** The key's rate-limit budget as the latest answer reported it. */
    get rateLimit(): RateLimitStatus | undefined;
    /**
     * Any operation by its operationId, answering the parsed body and the Response (its body already read): for
     * headers such as ETag (to send as `ifMatch`) or Idempotent-Replayed. Retries as every other call does.
     */
    request<K extends RoutedOperationId>(operationId: K, input: Input<K>, options?: CallOptions): Promise<Result<K>>;
    private call;
    /** A lazily fetched list; a `cursor` in `query` is where it starts. */
    private list;
    /** GET /status: public; `limited` while access is restricted. */
    status: (options?: CallOptions) => Promise<{
        status: "operational" | "limited" | "degraded";
        version: string;
        release_date: string;
    }>;
    /** GET /me: the account behind the key, the scopes it holds and its rate limits. */
    me: (options?: CallOptions) => Promise<{
        account: {
            id: string;
            name: string;
            plan: "free" | "keeper" | "breeder" | "professional";
            live_test_allowlisted: boolean;
            created_at: string;
        };
        key: {
            id: string;
            name: string;
            kind: "personal";
            token: string;
            expires_at: string | null;
            created_at: string;
        };
        scopes: string[];
        rate_limits: {
            policy: string;
            limit: number;
            remaining: number;
            window_seconds: number;
            reset_seconds: number;
            reset_at: number;
        };
    }>;
    errorTypes: {
        /** GET /errors/{code}: what a problem's `code` means (its `type` URL). */
        get: (code: PathParamsOf<"getErrorType">["code"], options?: CallOptions) => Promise<{
            code: string;
            status: number;
            title: string;
            description: string;
        }>;
    };
    species: {
        list: (query?: ListQuery<"listSpecies">, options?: CallOptions) => Paginator<{
            id: string;
            scientific_name: string;
            common_name: string;
            other_names: string[];
            family: string;
            group: string;
            class: "reptilia" | "amphibia";
            venomous: boolean;
            cites_appendix: "I" | "II" | "III" | null;
        }>;
    };
    animalTypes: {
        list: (query?: ListQuery<"listAnimalTypes">, options?: CallOptions) => Paginator<{
            species_id: string;
            scientific_name: string | null;
            common_name: string | null;
            count: number;
        }>;
    };
    activityTypes: {
        list: (query?: ListQuery<"listActivityTypes">, options?: CallOptions) => Paginator<{
            id: string;
            name: string;
            description: string;
            details_schema: {
                [key: string]: unknown;
            };
        }>;
    };
    animals: {
        list: (query?: ListQuery<"listAnimals">, options?: CallOptions) => Paginator<{
            id: string;
            name: string;
            reference_id: string | null;
            species_id: string;
            sex: "male" | "female" | "unknown";
            status: "active" | "sold" | "deceased" | "on_loan";
            morph: string | null;
            traits: string[];
            birth_date: string | null;
            acquired_date: string | null;
            weight_grams: number | null;
            weighed_at: string | null;
            environment_id: string | null;
            dam_id: string | null;
            sire_id: string | null;
            tags: string[];
            notes: string | null;
            metadata: {
                [key: string]: string;
            };
            created_at: string;
            updated_at: string;
        }>;
        get: (id: string, options?: CallOptions) => Promise<{
            id: string;
            name: string;
            reference_id: string | null;
            species_id: string;
            sex: "male" | "female" | "unknown";
            status: "active" | "sold" | "deceased" | "on_loan";
            morph: string | null;
            traits: string[];
            birth_date: string | null;
            acquired_date: string | null;
            weight_grams: number | null;
            weighed_at: string | null;
            environment_id: string | null;
            dam_id: string | null;
            sire_id: string | null;
            tags: string[];
            notes: string | null;
            metadata: {
                [key: string]: string;
            };
            created_at: string;
            updated_at: string;
        }>;
        create: (animal: BodyOf<"createAnimal">, options?: CallOptions) => Promise<{
            id: string;
            name: string;
            reference_id: string | null;
            species_id: string;
            sex: "male" | "female" | "unknown";
            status: "active" | "sold" | "deceased" | "on_loan";
            morph: string | null;
            traits: string[];
            birth_date: string | null;
            acquired_date: string | null;
            weight_grams: number | null;
            weighed_at: string | null;
            environment_id: string | null;
            dam_id: string | null;
            sire_id: string | null;
            tags: string[];
            notes: string | null;
            metadata: {
                [key: string]: string;
            };
            created_at: string;
            updated_at: string;
        }>;
        /** A JSON merge patch: members present replace, `null` clears. */
        update: (id: string, patch: BodyOf<"updateAnimal">, options?: ConditionalOptions) => Promise<{
            id: string;
            name: string;
            reference_id: string | null;
            species_id: string;
            sex: "male" | "female" | "unknown";
            status: "active" | "sold" | "deceased" | "on_loan";
            morph: string | null;
            traits: string[];
            birth_date: string | null;
            acquired_date: string | null;
            weight_grams: number | null;
            weighed_at: string | null;
            environment_id: string | null;
            dam_id: string | null;
            sire_id: string | null;
            tags: string[];
            notes: string | null;
            metadata: {
                [key: string]: string;
            };
            created_at: string;
            updated_at: string;
        }>;
        delete: (id: string, options?: ConditionalOptions) => Promise<void>;
    };
    activities: {
        list: (query?: ListQuery<"listActivities">, options?: CallOptions) => Paginator<{
            id: string;
            animal_id: string;
            type: string;
            occurred_at: string;
            details: {
                [key: string]: unknown;
            };
            notes: string | null;
            created_at: string;
            updated_at: string;
        }>;
        /**
         * POST /activities with an Idempotency-Key (a fresh UUID unless `options.idempotencyKey`), kept on every
         * retry: however often a lost answer makes the SDK send it again, the activity is written once.
         */
        create: (activity: BodyOf<"createActivity">, options?: CallOptions) => Promise<{
            id: string;
            animal_id: string;
            type: string;
            occurred_at: string;
            details: {
                [key: string]: unknown;
            };
            notes: string | null;
            created_at: string;
            updated_at: string;
        }>;
    };
    breeding: {
        clutches: {
            list: (query?: ListQuery<"listClutches">, options?: CallOptions) => Paginator<{
                id: string;
                breeding_record_id: string | null;
                species_id: string;
                dam_id: string | null;
                sire_id: string | null;
                status: "incubating" | "hatched" | "failed";
                laid_on: string;
                egg_count: number;
                fertile_count: number | null;
                slug_count: number | null;
                hatched_count: number | null;
                incubator_id: string | null;
                incubation_temperature_c: number | null;
                expected_hatch_on: string | null;
                hatched_on: string | null;
                notes: string | null;
                created_at: string;
                updated_at: string;
            }>;
        };
        records: {
            list: (query?: ListQuery<"listBreedingRecords">, options?: CallOptions) => Paginator<{
                id: string;
                species_id: string;
                dam_id: string | null;
                sire_id: string | null;
                season: number;
                status: "planned" | "paired" | "gravid" | "laid" | "unsuccessful";
                paired_on: string | null;
                separated_on: string | null;
                locks_observed: number;
                ovulation_on: string | null;
                pre_lay_shed_on: string | null;
                notes: string | null;
                created_at: string;
                updated_at: string;
            }>;
        };
    };
    medical: {
        conditions: {
            list: (query?: ListQuery<"listConditions">, options?: CallOptions) => Paginator<{
                id: string;
                animal_id: string;
                name: string;
                category: "infection" | "parasite" | "injury" | "metabolic" | "respiratory" | "dermatological" | "reproductive" | "other";
                severity: "mild" | "moderate" | "severe";
                status: "active" | "monitoring" | "resolved";
                diagnosed_on: string;
                resolved_on: string | null;
                veterinarian: string | null;
                treatment: string | null;
                notes: string | null;
                created_at: string;
                updated_at: string;
            }>;
        };
    };
    documents: {
        list: (query?: ListQuery<"listDocuments">, options?: CallOptions) => Paginator<{
            id: string;
            title: string;
            kind: "vet_report" | "permit" | "receipt" | "pedigree" | "photo" | "contract" | "other";
            animal_id: string | null;
            contact_id: string | null;
            file_name: string;
            content_type: string;
            size_bytes: number;
            sha256: string | null;
            url: string | null;
            issued_on: string | null;
            notes: string | null;
            created_at: string;
            updated_at: string;
        }>;
    };
    customers: {
        contacts: {
            list: (query?: ListQuery<"listContacts">, options?: CallOptions) => Paginator<{
                id: string;
                name: string;
                company: string | null;
                kind: "customer" | "supplier" | "veterinarian" | "breeder" | "other";
                email: string | null;
                phone: string | null;
                address_line1: string | null;
                city: string | null;
                region: string | null;
                postal_code: string | null;
                country: string | null;
                tags: string[];
                notes: string | null;
                created_at: string;
                updated_at: string;
            }>;
        };
        invoices: {
            list: (query?: ListQuery<"listInvoices">, options?: CallOptions) => Paginator<{
                id: string;
                number: string;
                contact_id: string | null;
                status: "draft" | "open" | "paid" | "void";
                currency: string;
                issued_on: string;
                due_on: string | null;
                paid_at: string | null;
                line_items: {
                    description: string;
                    quantity: number;
                    unit_amount: number;
                    amount: number;
                    animal_id: string | null;
                }[];
                subtotal: number;
                tax: number;
                total: number;
                notes: string | null;
                created_at: string;
                updated_at: string;
            }>;
        };
    };
    environment: {
        environments: {
            list: (query?: ListQuery<"listEnvironments">, options?: CallOptions) => Paginator<{
                id: string;
                name: string;
                kind: "enclosure" | "rack" | "tub" | "room" | "incubator" | "outdoor";
                parent_id: string | null;
                location: string | null;
                width_cm: number | null;
                depth_cm: number | null;
                height_cm: number | null;
                substrate: string | null;
                notes: string | null;
                created_at: string;
                updated_at: string;
            }>;
        };
        metrics: {
            list: (query?: ListQuery<"listMetrics">, options?: CallOptions) => Paginator<{
                id: string;
                name: string;
                unit: string;
                description: string;
                min: number;
                max: number;
            }>;
        };
        readings: {
            /** GET /environment/readings as JSON rows (raw, bucketed with `interval`/`agg`, or `latest`), page after page. */
            list: (query?: ListQuery<"queryReadings">, options?: CallOptions) => Paginator<{
                ts: string;
                device_id?: string;
                channel?: string;
                metric: string | null;
                environment_id: string | null;
                value?: number;
                avg?: number;
                min?: number;
                max?: number;
                last?: number;
                count?: number;
            }>;
            /**
             * GET /environment/readings/stream as an async iterator of `reading` events (or `bucket` events with `interval`),
             * plus `skipped` when a resume reached past the replay window. It reconnects by itself with Last-Event-ID, so
             * readings missed meanwhile come first (at least once: drop repeats by `id`); `break` or `signal` ends it.
             */
            stream: (query?: Omit<QueryOf<"streamReadings">, "last_event_id">, options?: StreamOptions) => AsyncGenerator<StreamEvent<Schemas["ReadingRow"]>>;
        };
        alertRules: {
            list: (query?: ListQuery<"listAlertRules">, options?: CallOptions) => Paginator<{
                id: string;
                name: string | null;
                environment_id: string | null;
                device_id: string | null;
                channel: string | null;
                metric: string;
                min: number | null;
                max: number | null;
                hysteresis: number;
                for_seconds: number;
                stale_after_seconds: number | null;
                created_at: string;
                updated_at: string;
            }>;
            get: (id: string, options?: CallOptions) => Promise<{
                id: string;
                name: string | null;
                environment_id: string | null;
                device_id: string | null;
                channel: string | null;
                metric: string;
                min: number | null;
                max: number | null;
                hysteresis: number;
                for_seconds: number;
                stale_after_seconds: number | null;
                created_at: string;
                updated_at: string;
            }>;
            /** Sent with an Idempotency-Key, like POST /activities. */
            create: (rule: BodyOf<"createAlertRule">, options?: CallOptions) => Promise<{
                id: string;
                name: string | null;
                environment_id: string | null;
                device_id: string | null;
                channel: string | null;
                metric: string;
                min: number | null;
                max: number | null;
                hysteresis: number;
                for_seconds: number;
                stale_after_seconds: number | null;
                created_at: string;
                updated_at: string;
            }>;
            update: (id: string, patch: BodyOf<"updateAlertRule">, options?: ConditionalOptions) => Promise<{
                id: string;
                name: string | null;
                environment_id: string | null;
                device_id: string | null;
                channel: string | null;
                metric: string;
                min: number | null;
                max: number | null;
                hysteresis: number;
                for_seconds: number;
                stale_after_seconds: number | null;
                created_at: string;
                updated_at: string;
            }>;
            delete: (id: string, options?: ConditionalOptions) => Promise<void>;
        };
        alerts: {
            list: (query?: ListQuery<"listAlerts">, options?: CallOptions) => Paginator<{
                id: string;
                rule_id: string;
                kind: "threshold" | "stale";
                state: "open" | "resolved";
                environment_id: string | null;
                device_id: string;
                channel: string;
                metric: string;
                rule: {
                    id: string;
                    name: string | null;
                    min: number | null;
                    max: number | null;
                    hysteresis: number;
                    for_seconds: number;
                    stale_after_seconds: number | null;
                };
                triggered_at: string;
                window: {
                    from: string;
                    to: string;
                };
                values: {
                    first: number | null;
                    last: number | null;
                    min: number | null;
                    max: number | null;
                    count: number | null;
                };
                resolved_at: string | null;
                resolved_value: number | null;
                resolved_reason: "recovered" | "rule_changed" | "rule_deleted" | null;
                created_at: string;
                updated_at: string;
            }>;
            get: (id: string, options?: CallOptions) => Promise<{
                id: string;
                rule_id: string;
                kind: "threshold" | "stale";
                state: "open" | "resolved";
                environment_id: string | null;
                device_id: string;
                channel: string;
                metric: string;
                rule: {
                    id: string;
                    name: string | null;
                    min: number | null;
                    max: number | null;
                    hysteresis: number;
                    for_seconds: number;
                    stale_after_seconds: number | null;
                };
                triggered_at: string;
                window: {
                    from: string;
                    to: string;
                };
                values: {
                    first: number | null;
                    last: number | null;
                    min: number | null;
                    max: number | null;
                    count: number | null;
                };
                resolved_at: string | null;
                resolved_value: number | null;
                resolved_reason: "recovered" | "rule_changed" | "rule_deleted" | null;
                created_at: string;
                updated_at: string;
            }>;
        };
    };
    sensors: {
        devices: {
            list: (query?: ListQuery<"listDevices">, options?: CallOptions) => Paginator<{
                id: string;
                name: string;
                model: string | null;
                hardware_id: string | null;
                channels: import("./api.ts").components["schemas"]["DeviceChannel"][];
                unmapped_channels: string[];
                last_seen_at: string | null;
                created_at: string;
                updated_at: string;
            }>;
            get: (id: string, options?: CallOptions) => Promise<{
                id: string;
                name: string;
                model: string | null;
                hardware_id: string | null;
                channels: import("./api.ts").components["schemas"]["DeviceChannel"][];
                unmapped_channels: string[];
                last_seen_at: string | null;
                created_at: string;
                updated_at: string;
            }>;
            /** Registers a device (or completes a pairing with `claim_code`); the answer carries its key, shown once. */
            create: (device: BodyOf<"createDevice">, options?: CallOptions) => Promise<{
                id: string;
                name: string;
                model: string | null;
                hardware_id: string | null;
                channels: import("./api.ts").components["schemas"]["DeviceChannel"][];
                unmapped_channels: string[];
                last_seen_at: string | null;
                created_at: string;
                updated_at: string;
                key: string | null;
            }>;
            update: (id: string, patch: BodyOf<"updateDevice">, options?: ConditionalOptions) => Promise<{
                id: string;
                name: string;
                model: string | null;
                hardware_id: string | null;
                channels: import("./api.ts").components["schemas"]["DeviceChannel"][];
                unmapped_channels: string[];
                last_seen_at: string | null;
                created_at: string;
                updated_at: string;
            }>;
            delete: (id: string, options?: ConditionalOptions) => Promise<void>;
        };
        /** Pairing (RFC 8628 shape), from the device's side: no key needed. */
        claims: {
            start: (claim?: BodyOf<"startDeviceClaim">, options?: CallOptions) => Promise<{
                claim_id: string;
                user_code: string;
                verification_uri: string;
                verification_uri_complete: string;
                expires_in: number;
                interval: number;
            }>;
            status: (query: QueryOf<"getDeviceClaim">, options?: CallOptions) => Promise<{
                status: "pending" | "slow_down" | "claimed" | "expired";
                device_id?: string;
                device_key?: string;
            }>;
        };
        readings: {
            /** POST /sensors/readings with a device key (only 429/503 are retried: a batch without `ts` would be stored twice). */
            submit: (batch: BodyOf<"submitReadings">, options?: CallOptions) => Promise<{
                accepted: number;
                rejected: {
                    index: number;
                    code: "invalid_reading" | "invalid_channel" | "invalid_value" | "invalid_timestamp" | "timestamp_in_future" | "duplicate_reading";
                    message: string;
                }[];
            }>;
        };
    };
    webhooks: {
        endpoints: {
            list: (query?: ListQuery<"listWebhookEndpoints">, options?: CallOptions) => Paginator<{
                id: string;
                url: string;
                description: string | null;
                enabled_events: string[];
                status: "enabled" | "disabled";
                disabled_reason: string | null;
                created_at: string;
                updated_at: string;
            }>;
            get: (id: string, options?: CallOptions) => Promise<{
                id: string;
                url: string;
                description: string | null;
                enabled_events: string[];
                status: "enabled" | "disabled";
                disabled_reason: string | null;
                created_at: string;
                updated_at: string;
                deliveries: {
                    pending: number;
                    succeeded: number;
                    failed: number;
                };
                recent_attempts: {
                    event_id: string;
                    event_type: string;
                    attempted_at: string;
                    status_code: number | null;
                    duration_ms: number;
                    error: string | null;
                }[];
            }>;
            /** The answer's `secret` (`whsec_…`) is shown this once: keep it for verifyWebhook. */
            create: (endpoint: BodyOf<"createWebhookEndpoint">, options?: CallOptions) => Promise<{
                id: string;
                url: string;
                description: string | null;
                enabled_events: string[];
                status: "enabled" | "disabled";
                disabled_reason: string | null;
                created_at: string;
                updated_at: string;
                secret: string;
            }>;
            update: (id: string, patch: BodyOf<"updateWebhookEndpoint">, options?: CallOptions) => Promise<{
                id: string;
                url: string;
                description: string | null;
                enabled_events: string[];
                status: "enabled" | "disabled";
                disabled_reason: string | null;
                created_at: string;
                updated_at: string;
                secret?: string;
            }>;
            delete: (id: string, options?: CallOptions) => Promise<void>;
            /** Sends a `webhook_endpoint.test` event to the endpoint. */
            test: (id: string, options?: CallOptions) => Promise<{
                event_id: string;
            }>;
            attempts: (id: string, query?: ListQuery<"listWebhookAttempts">, options?: CallOptions) => Paginator<{
                id: string;
                event_id: string;
                event_type: string;
                attempted_at: string;
                status_code: number | null;
                duration_ms: number;
                error: string | null;
            }>;
            recover: (id: string, body: BodyOf<"recoverWebhookEndpoint">, options?: CallOptions) => Promise<{
                recovered: number;
            }>;
            resend: (id: string, body: BodyOf<"resendWebhookEvent">, options?: CallOptions) => Promise<{
                event_id: string;
            }>;
        };
    };
    events: {
        list: (query?: ListQuery<"listEvents">, options?: CallOptions) => Paginator<{
            id: string;
            type: string;
            created_at: string;
            data: {
                object: {
                    [key: string]: unknown;
                };
                previous_attributes?: {
                    [key: string]: unknown;
                };
            };
        }>;
        /** An event exactly as its deliveries carry it. */
        get: (id: string, options?: CallOptions) => Promise<{
            id: string;
            type: string;
            created_at: string;
            data: {
                object: {
                    [key: string]: unknown;
                };
                previous_attributes?: {
                    [key: string]: unknown;
                };
            };
        }>;
        /** GET /events/stream as an async iterator of `event` events, resumed with Last-Event-ID as readings' stream is. */
        stream: (options?: StreamOptions) => AsyncGenerator<StreamEvent<ResultOf<"getEvent">>>;
    };
}
