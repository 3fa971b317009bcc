// Every operation the SDK calls, by the document's operationId. `satisfies` checks each entry against the
// generated `paths` (see RouteOf), so a wrong method or path here does not compile.
import type { OperationId, Route } from './types.ts'

export const ROUTES = {
  getErrorType: { method: 'GET', path: '/api/v1/errors/{code}' },
  getStatus: { method: 'GET', path: '/api/v1/status' },
  getMe: { method: 'GET', path: '/api/v1/me' },
  listSpecies: { method: 'GET', path: '/api/v1/species' },
  listActivityTypes: { method: 'GET', path: '/api/v1/activity-types' },
  listAnimalTypes: { method: 'GET', path: '/api/v1/animal-types' },

  listAnimals: { method: 'GET', path: '/api/v1/animals' },
  createAnimal: { method: 'POST', path: '/api/v1/animals' },
  getAnimal: { method: 'GET', path: '/api/v1/animals/{id}' },
  updateAnimal: { method: 'PATCH', path: '/api/v1/animals/{id}' },
  deleteAnimal: { method: 'DELETE', path: '/api/v1/animals/{id}' },

  listActivities: { method: 'GET', path: '/api/v1/activities' },
  createActivity: { method: 'POST', path: '/api/v1/activities', idempotencyKey: true },

  listClutches: { method: 'GET', path: '/api/v1/breeding/clutches' },
  listBreedingRecords: { method: 'GET', path: '/api/v1/breeding/records' },
  listConditions: { method: 'GET', path: '/api/v1/medical/conditions' },
  listDocuments: { method: 'GET', path: '/api/v1/documents' },
  listContacts: { method: 'GET', path: '/api/v1/contacts' },
  listInvoices: { method: 'GET', path: '/api/v1/sales/invoices' },

  listEnvironments: { method: 'GET', path: '/api/v1/environment/environments' },
  listMetrics: { method: 'GET', path: '/api/v1/environment/metrics' },
  queryReadings: { method: 'GET', path: '/api/v1/environment/readings' },
  streamReadings: { method: 'GET', path: '/api/v1/environment/readings/stream' },
  listAlertRules: { method: 'GET', path: '/api/v1/environment/alert-rules' },
  createAlertRule: { method: 'POST', path: '/api/v1/environment/alert-rules', idempotencyKey: true },
  getAlertRule: { method: 'GET', path: '/api/v1/environment/alert-rules/{id}' },
  updateAlertRule: { method: 'PATCH', path: '/api/v1/environment/alert-rules/{id}' },
  deleteAlertRule: { method: 'DELETE', path: '/api/v1/environment/alert-rules/{id}' },
  listAlerts: { method: 'GET', path: '/api/v1/environment/alerts' },
  getAlert: { method: 'GET', path: '/api/v1/environment/alerts/{id}' },

  listDevices: { method: 'GET', path: '/api/v1/sensors/devices' },
  createDevice: { method: 'POST', path: '/api/v1/sensors/devices' },
  getDevice: { method: 'GET', path: '/api/v1/sensors/devices/{id}' },
  updateDevice: { method: 'PATCH', path: '/api/v1/sensors/devices/{id}' },
  deleteDevice: { method: 'DELETE', path: '/api/v1/sensors/devices/{id}' },
  startDeviceClaim: { method: 'POST', path: '/api/v1/sensors/claim/start' },
  getDeviceClaim: { method: 'GET', path: '/api/v1/sensors/claim/status' },
  submitReadings: { method: 'POST', path: '/api/v1/sensors/readings' },

  listWebhookEndpoints: { method: 'GET', path: '/api/v1/webhooks/endpoints' },
  createWebhookEndpoint: { method: 'POST', path: '/api/v1/webhooks/endpoints' },
  getWebhookEndpoint: { method: 'GET', path: '/api/v1/webhooks/endpoints/{id}' },
  updateWebhookEndpoint: { method: 'PATCH', path: '/api/v1/webhooks/endpoints/{id}' },
  deleteWebhookEndpoint: { method: 'DELETE', path: '/api/v1/webhooks/endpoints/{id}' },
  testWebhookEndpoint: { method: 'POST', path: '/api/v1/webhooks/endpoints/{id}/test' },
  listWebhookAttempts: { method: 'GET', path: '/api/v1/webhooks/endpoints/{id}/attempts' },
  recoverWebhookEndpoint: { method: 'POST', path: '/api/v1/webhooks/endpoints/{id}/recover' },
  resendWebhookEvent: { method: 'POST', path: '/api/v1/webhooks/endpoints/{id}/resend' },
  listEvents: { method: 'GET', path: '/api/v1/events' },
  getEvent: { method: 'GET', path: '/api/v1/events/{id}' },
  streamEvents: { method: 'GET', path: '/api/v1/events/stream' },
} as const satisfies { [K in OperationId]?: Route<K> }

export type RoutedOperationId = keyof typeof ROUTES

/**
 * The document's operations the SDK leaves out, and why; a test requires ROUTES and this list together to name
 * every operation the service publishes, so a new endpoint is either given a method or listed here.
 */
export const NOT_COVERED: Partial<Record<OperationId, string>> = {
  checkLiveness: 'operators and load balancers, outside /api/v1',
  checkReadiness: 'operators and load balancers, outside /api/v1',
  getMetrics: 'Prometheus, outside /api/v1',
  submitPing: 'constrained firmware: the device key travels in the query string',
  submitPingForm: 'constrained firmware: the device key travels in the form',
  influxV1Write: 'InfluxDB clients (line protocol), outside /api/v1',
  influxV2Write: 'InfluxDB clients (line protocol), outside /api/v1',
  getOpenApiDocument: 'the document these types are generated from',
  getDocsPage: 'an HTML page',
}
