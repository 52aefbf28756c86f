import type { JsonListVersion } from '../contract/json-list.js'
import type { components } from '../generated/openapi.js'
import type { MaybePromise } from '../maybe-promise.js'
import type { DataAccess, ReadWork, Work } from './work.js'

export type InventoryItem = components['schemas']['InventoryItem']
export type Pet = components['schemas']['Pet']
export type Order = components['schemas']['Order']
export type PetStatus = components['schemas']['PetStatus']

/** A pet as it is imported: its status is derived from its stock, never given. */
export type PetRecord = Omit<Pet, 'status'>

/** What `db:seed FILE.json` and the demo catalogue load; every part is optional. */
export interface Catalogue {
  pets?: PetRecord[]
  inventory?: { petId: number, quantity: number }[]
  orders?: Order[]
}

/** A list as JSON text: the text itself, or a version of a list kept as one text per element. */
export type ListJson = string | JsonListVersion

export interface ImportCounts {
  pets: number
  inventory: number
  orders: number
}

export interface ApiKeyRecord {
  id: string
  name: string
  plan: string
  /** The scopes it holds (openapi.yaml, bearerAuth's x-scopes), in the document's order. */
  scopes: readonly string[]
  /** Only for enterprise keys: their own limits. */
  perMinute: number | null
  perDay: number | null
  createdAt: string
  revokedAt: string | null
}

export interface NewApiKey {
  id: string
  name: string
  plan: string
  keyHash: string
  scopes: readonly string[]
  perMinute: number | null
  perDay: number | null
}

/**
 * Everything the service stores, whatever the engine; the engine is chosen once, in createStore.
 * `read` and `write` run the repositories' work (src/repositories/), written once for both
 * engines; the methods below are the engine's own fast paths and its lifecycle.
 */
export interface Store extends DataAccess {
  readonly engine: 'sqlite' | 'postgres'
  /** Applies pending schema migrations; idempotent. */
  migrate (): Promise<void>
  /** Resolves when the storage answers; rejects with StoreUnavailableError otherwise. */
  ping (): Promise<void>
  close (): Promise<void>

  /** Upserts pets, inventory and orders in one transaction. */
  importCatalogue (catalogue: Catalogue): Promise<ImportCounts>
  /** The inventory's own paths, which each engine writes for itself (see src/repositories/inventory.ts). */
  readonly inventory: InventoryFastPaths

  /** Entries the engine keeps in memory, coherent with every writer (see docs/architecture.md). */
  readonly caches: EntryCaches
}

/**
 * A cache of entries by key, kept by the engine: a repository gives the read of an entry, the
 * engine answers from memory while nothing has changed the entry since (its own writes, other
 * processes' through the engine's change channel), and runs the read otherwise. Every /v1 request
 * asks for its key: an engine answers in the same call when it has the entry at hand, without a
 * promise.
 */
export interface KeyedCache<K, V> {
  get (key: K, read: () => ReadWork<V | undefined>): MaybePromise<V | undefined>
}

/** A KeyedCache that also looks several entries up at once. */
export interface BatchedCache<K, V> extends KeyedCache<K, V> {
  /** Several entries; `read` is given the keys the cache does not hold and reads them together. */
  getMany (keys: readonly K[], read: (missing: readonly K[]) => ReadWork<ReadonlyMap<K, V>>): MaybePromise<ReadonlyMap<K, V>>
}

/**
 * The inventory list and PATCH, each engine's own: the list as JSON text built by the database
 * and kept entry by entry from the change triggers; the PATCHes of one event-loop turn in one
 * commit (SQLite) or one round trip (PostgreSQL).
 */
export interface InventoryFastPaths<Json extends ListJson = ListJson> {
  /**
   * Every entry as JSON text, ordered by petId, built by the database without a JavaScript object
   * per row. An engine may hand out text it built before, as long as nothing it lists has changed since.
   */
  listJson (): Promise<Json>
  /**
   * Sets the quantity atomically; undefined when the pet has no inventory entry. When the entry's
   * quantity or status changes and an endpoint wants it, the inventory.updated event of `events`
   * is recorded in the PATCH's own transaction (without `events`, none: the store's own tests).
   */
  update (petId: number, quantity: number, events?: InventoryEvents): Promise<InventoryItem | undefined>
}

/**
 * How a PATCH records its inventory.updated event (src/repositories/inventory.ts gives it; the
 * queries are the webhooks repository's). An engine that runs work in the PATCH's transaction
 * uses `wanted` and `record`; PostgreSQL's PATCHes are one statement per batch, which records the
 * event itself (postgres/statements.ts), for endpoints whose key holds `scope`.
 */
export interface InventoryEvents {
  /** The scope an endpoint's API key needs to receive inventory.updated. */
  readonly scope: string
  /** The time events are stamped with (the app's clock; tests move it). */
  now (): number
  /** Whether an endpoint would receive the event now. */
  wanted (): ReadWork<boolean>
  record (item: InventoryItem, previous: { quantity: number, status: PetStatus }): Work<void>
}

export interface EntryCaches {
  /** Pets by id, with the status their stock and open orders give (src/repositories/pets.ts). */
  readonly pets: KeyedCache<number, Pet>
  /** Active (unrevoked) API keys by the SHA-256 of the key (src/repositories/api-keys.ts). */
  readonly activeKeys: BatchedCache<string, ApiKeyRecord>
}
