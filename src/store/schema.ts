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

export type TableName = keyof Database

/** The primary key column of each table that a transaction may lock a row of (work.ts lockRow). */
export const primaryKeyOf: Readonly<Record<TableName, string>> = {
  pets: 'id',
  inventory: 'pet_id',
  orders: 'id',
  api_keys: 'id',
  idempotency_keys: 'idempotency_key'
}

/**
 * The row lock a write to a table needs first, in every repository's work (work.ts writeRules):
 * every write of the stock or of an order holds its pet's inventory row, so the writers of one
 * pet take turns and what each read of the stock stays true until it commits.
 */
export const writeLocks: Readonly<Partial<Record<TableName, TableName>>> = {
  inventory: 'inventory',
  orders: 'inventory'
}
