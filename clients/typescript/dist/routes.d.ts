import type { OperationId } from './types.ts';
export declare const ROUTES: {
    readonly getErrorType: {
        readonly method: "GET";
        readonly path: "/api/v1/errors/{code}";
    };
    readonly getStatus: {
        readonly method: "GET";
        readonly path: "/api/v1/status";
    };
    readonly getMe: {
        readonly method: "GET";
        readonly path: "/api/v1/me";
    };
    readonly listSpecies: {
        readonly method: "GET";
        readonly path: "/api/v1/species";
    };
    readonly listActivityTypes: {
        readonly method: "GET";
        readonly path: "/api/v1/activity-types";
    };
    readonly listAnimalTypes: {
        readonly method: "GET";
        readonly path: "/api/v1/animal-types";
    };
    readonly listAnimals: {
        readonly method: "GET";
        readonly path: "/api/v1/animals";
    };
    readonly createAnimal: {
        readonly method: "POST";
        readonly path: "/api/v1/animals";
    };
    readonly getAnimal: {
        readonly method: "GET";
        readonly path: "/api/v1/animals/{id}";
    };
    readonly updateAnimal: {
        readonly method: "PATCH";
        readonly path: "/api/v1/animals/{id}";
    };
    readonly deleteAnimal: {
        readonly method: "DELETE";
        readonly path: "/api/v1/animals/{id}";
    };
    readonly listActivities: {
        readonly method: "GET";
        readonly path: "/api/v1/activities";
    };
    readonly createActivity: {
        readonly method: "POST";
        readonly path: "/api/v1/activities";
        readonly idempotencyKey: true;
    };
    readonly listClutches: {
        readonly method: "GET";
        readonly path: "/api/v1/breeding/clutches";
    };
    readonly listBreedingRecords: {
        readonly method: "GET";
        readonly path: "/api/v1/breeding/records";
    };
    readonly listConditions: {
        readonly method: "GET";
        readonly path: "/api/v1/medical/conditions";
    };
    readonly listDocuments: {
        readonly method: "GET";
        readonly path: "/api/v1/documents";
    };
    readonly listContacts: {
        readonly method: "GET";
        readonly path: "/api/v1/contacts";
    };
    readonly listInvoices: {
        readonly method: "GET";
        readonly path: "/api/v1/sales/invoices";
    };
    readonly listEnvironments: {
        readonly method: "GET";
        readonly path: "/api/v1/environment/environments";
    };
    readonly listMetrics: {
        readonly method: "GET";
        readonly path: "/api/v1/environment/metrics";
    };
    readonly queryReadings: {
        readonly method: "GET";
        readonly path: "/api/v1/environment/readings";
    };
    readonly streamReadings: {
        readonly method: "GET";
        readonly path: "/api/v1/environment/readings/stream";
    };
    readonly listAlertRules: {
        readonly method: "GET";
        readonly path: "/api/v1/environment/alert-rules";
    };
    readonly createAlertRule: {
        readonly method: "POST";
        readonly path: "/api/v1/environment/alert-rules";
        readonly idempotencyKey: true;
    };
    readonly getAlertRule: {
        readonly method: "GET";
        readonly path: "/api/v1/environment/alert-rules/{id}";
    };
    readonly updateAlertRule: {
        readonly method: "PATCH";
        readonly path: "/api/v1/environment/alert-rules/{id}";
    };
    readonly deleteAlertRule: {
        readonly method: "DELETE";
        readonly path: "/api/v1/environment/alert-rules/{id}";
    };
    readonly listAlerts: {
        readonly method: "GET";
        readonly path: "/api/v1/environment/alerts";
    };
    readonly getAlert: {
        readonly method: "GET";
        readonly path: "/api/v1/environment/alerts/{id}";
    };
    readonly listDevices: {
        readonly method: "GET";
        readonly path: "/api/v1/sensors/devices";
    };
    readonly createDevice: {
        readonly method: "POST";
        readonly path: "/api/v1/sensors/devices";
    };
    readonly getDevice: {
        readonly method: "GET";
        readonly path: "/api/v1/sensors/devices/{id}";
    };
    readonly updateDevice: {
        readonly method: "PATCH";
        readonly path: "/api/v1/sensors/devices/{id}";
    };
    readonly deleteDevice: {
        readonly method: "DELETE";
        readonly path: "/api/v1/sensors/devices/{id}";
    };
    readonly startDeviceClaim: {
        readonly method: "POST";
        readonly path: "/api/v1/sensors/claim/start";
    };
    readonly getDeviceClaim: {
        readonly method: "GET";
        readonly path: "/api/v1/sensors/claim/status";
    };
    readonly submitReadings: {
        readonly method: "POST";
        readonly path: "/api/v1/sensors/readings";
    };
    readonly listWebhookEndpoints: {
        readonly method: "GET";
        readonly path: "/api/v1/webhooks/endpoints";
    };
    readonly createWebhookEndpoint: {
        readonly method: "POST";
        readonly path: "/api/v1/webhooks/endpoints";
    };
    readonly getWebhookEndpoint: {
        readonly method: "GET";
        readonly path: "/api/v1/webhooks/endpoints/{id}";
    };
    readonly updateWebhookEndpoint: {
        readonly method: "PATCH";
        readonly path: "/api/v1/webhooks/endpoints/{id}";
    };
    readonly deleteWebhookEndpoint: {
        readonly method: "DELETE";
        readonly path: "/api/v1/webhooks/endpoints/{id}";
    };
    readonly testWebhookEndpoint: {
        readonly method: "POST";
        readonly path: "/api/v1/webhooks/endpoints/{id}/test";
    };
    readonly listWebhookAttempts: {
        readonly method: "GET";
        readonly path: "/api/v1/webhooks/endpoints/{id}/attempts";
    };
    readonly recoverWebhookEndpoint: {
        readonly method: "POST";
        readonly path: "/api/v1/webhooks/endpoints/{id}/recover";
    };
    readonly resendWebhookEvent: {
        readonly method: "POST";
        readonly path: "/api/v1/webhooks/endpoints/{id}/resend";
    };
    readonly listEvents: {
        readonly method: "GET";
        readonly path: "/api/v1/events";
    };
    readonly getEvent: {
        readonly method: "GET";
        readonly path: "/api/v1/events/{id}";
    };
    readonly streamEvents: {
        readonly method: "GET";
        readonly path: "/api/v1/events/stream";
    };
};
export type RoutedOperationId = keyof typeof ROUTES;
/**
 * The document's operations the SDK leaves out, and why; a test requires ROUTES and this list together to name
 * every operation the service publishes, so a new endpoint is either given a method or listed here.
 */
export declare const NOT_COVERED: Partial<Record<OperationId, string>>;
