import type { Generated } from 'kysely'

/**
 * The tables of both engines, as Kysely types every query written once for SQLite and PostgreSQL
 * (shared-queries.ts and src/repositories/). Column types are what a query reads back on either engine: BIGINT ids are parsed
 * as numbers on PostgreSQL (pool.ts), and SQLite has no boolean, so `complete` is 0/1 there.
 * Migrations (sqlite/migrations, postgres/migrations) create the tables; a column added there is
 * added here.
 */
export interface Database {
  pets: PetsTable
  inventory: InventoryTable
  orders: OrdersTable
  api_keys: ApiKeysTable
  idempotency_keys: IdempotencyKeysTable
  service_keys: ServiceKeysTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_events: WebhookEventsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_attempts: WebhookAttemptsTable
}

export interface PetsTable {
  id: number
  name: string
  category_id: number | null
  category_name: string | null
  /** JSON text of the photo URLs. */
  photo_urls: string
  /** JSON text of the tags; NULL when the pet has none (not the same as an empty list). */
  tags: string | null
}

export interface InventoryTable {
  pet_id: number
  quantity: number
}

export interface OrdersTable {
  /** Given by the database (never reused, even after the highest order is cancelled). */
  id: Generated<number>
  pet_id: number
  quantity: number
  /** ISO 8601 text, as it was sent. */
  ship_date: string
  status: 'placed' | 'approved' | 'delivered'
  /** BOOLEAN on PostgreSQL, 0 or 1 on SQLite. */
  complete: boolean | number
}

export interface ApiKeysTable {
  id: string
  name: string
  plan: string
  key_hash: string
  /** The scopes the key holds (openapi.yaml, bearerAuth's x-scopes), separated by spaces. */
  scopes: Generated<string>
  per_minute: number | null
  per_day: number | null
  created_at: string
  revoked_at: string | null
}

/**
 * What an Idempotency-Key request answered (openapi.yaml, placeOrder): kept per API key for 24
 * hours, then removed by the idempotency repository's sweep.
 */
export interface IdempotencyKeysTable {
  api_key_id: string
  idempotency_key: string
  /** SHA-256 of the request, to tell a retry from another request under the same key. */
  fingerprint: string
  /** The outcome as JSON text, to be answered again to a retry. */
  outcome: string
  /** Milliseconds since the epoch after which the record is gone. */
  expires_at: number
}

/** Keys the service keeps for itself, the same for every instance (the cursor key of paged lists). */
export interface ServiceKeysTable {
  name: string
  value: string
}

/** A webhook endpoint of an API key (openapi.yaml, /webhooks). */
export interface WebhookEndpointsTable {
  id: Generated<number>
  api_key_id: string
  url: string
  description: string | null
  /** The event types it receives, separated by spaces. */
  events: string
  enabled: boolean
  disabled_reason: string | null
  /** whsec_… as it is, or encrypted with WEBHOOK_ENCRYPTION_KEY (enc:v1:…). */
  secret: string
  previous_secret: string | null
  /** Milliseconds since the epoch. */
  previous_secret_expires_at: number | null
  /** When the first attempt failed since the last one delivered (milliseconds since the epoch). */
  failing_since: number | null
  created_at: string
  updated_at: string
}

/** An event, recorded in the transaction of the change that caused it (the outbox). */
export interface WebhookEventsTable {
  id: Generated<number>
  event_id: string
  type: string
  created_at: string
  /** The envelope {id, type, createdAt, data} as JSON text. */
  payload: string
}

/** An event to deliver to one endpoint. */
export interface WebhookDeliveriesTable {
  id: Generated<number>
  event_id: number
  endpoint_id: number
  state: 'pending' | 'delivered' | 'failed'
  attempts: number
  /** Milliseconds since the epoch; null once the delivery is over. */
  next_attempt_at: number | null
  /** Milliseconds since the epoch until which an instance holds the delivery. */
  lease_until: number | null
  leased_by: string | null
}

/** One attempt of a delivery, as listWebhookDeliveries shows it. */
export interface WebhookAttemptsTable {
  id: Generated<number>
  delivery_id: number
  endpoint_id: number
  attempt: number
  attempted_at: string
  status_code: number | null
  error: string | null
  duration_ms: number
  response_body: string | null
  next_attempt_at: string | null
}

export type TableName = keyof Database

/** The primary key column of each table that a transaction may lock a row of (work.ts lockRow). */
export const primaryKeyOf: Readonly<Record<TableName, string>> = {
  pets: 'id',
  inventory: 'pet_id',
  orders: 'id',
  api_keys: 'id',
  idempotency_keys: 'idempotency_key',
  service_keys: 'name',
  webhook_endpoints: 'id',
  webhook_events: 'id',
  webhook_deliveries: 'id',
  webhook_attempts: 'id'
}

/**
 * The row lock a write to a table needs first, in every repository's work (work.ts writeRules):
 * every write of the stock or of an order holds its pet's inventory row, so the writers of one
 * pet take turns and what each read of the stock stays true until it commits; every write of a
 * webhook endpoint holds its API key's row.
 */
export const writeLocks: Readonly<Partial<Record<TableName, TableName>>> = {
  inventory: 'inventory',
  orders: 'inventory',
  // An API key's endpoints: their number is bounded per key, and a delivery's outcome updates its
  // endpoint; the key's row orders those writes.
  webhook_endpoints: 'api_keys'
}
