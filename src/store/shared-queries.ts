import { sql } from 'kysely'
import { inventoryFields } from './inventory-fields.js'
import { statement, type Access, type Arg, type Statement } from './query.js'
import { toInventoryItem, toOrder, toPet, type InventoryRow } from './rows.js'
import { statusExpression } from './sql.js'
import type { ApiKeyRecord, NewApiKey, Store } from './types.js'
import { all, first, run, type DataAccess, type ReadWork, type StepOf } from './work.js'

/**
 * The store's queries that read the same on both engines, written once with Kysely. The engines
 * run them through their own executors; what differs by engine (lists built as JSON text by the
 * database, the change log, batched PATCHes, bulk imports) stays in sqlite/ and postgres/.
 */

/** The api_keys columns under the names of ApiKeyRecord. */
const keyColumns = ['id', 'name', 'plan', 'per_minute as perMinute', 'per_day as perDay', 'created_at as createdAt', 'revoked_at as revokedAt'] as const

/** Every field of InventoryItem from the field map (inventory-fields.ts), under its own name. */
const inventorySelection = Object.entries(inventoryFields).map(([name, field]) => sql<unknown>`${sql.raw(field('i'))}`.as(name))

/** How many keys one lookup of several asks about: a statement has a fixed number of placeholders. */
export const KEY_HASH_SLOTS = 32
type KeyHashSlots = Record<`hash${number}`, string>

export const queries = {
  countPets: statement('pets.count', (db) => db.selectFrom('pets').select((eb) => eb.fn.countAll<number>().as('n'))),
  highestPetId: statement('pets.highestId', (db) => db.selectFrom('pets').select((eb) => eb.fn.coalesce(eb.fn.max('id'), sql<number>`0`).as('id'))),
  getPet: statement('pets.get', (db, arg: Arg<{ petId: number }>) => db
    .selectFrom('pets as p')
    .leftJoin('inventory as i', 'i.pet_id', 'p.id')
    .select(['p.id', 'p.name', 'p.category_id', 'p.category_name', 'p.photo_urls', 'p.tags'])
    .select(sql<string>`${sql.raw(statusExpression('p.id', 'COALESCE(i.quantity, 0)'))}`.as('status'))
    .where('p.id', '=', arg('petId'))),
  listInventory: statement('inventory.list', (db) => db.selectFrom('inventory as i').select(inventorySelection).orderBy('i.pet_id')),
  listOrders: statement('orders.list', (db) => db
    .selectFrom('orders').select(['id', 'pet_id as petId', 'quantity', 'ship_date as shipDate', 'status', 'complete']).orderBy('id')),
  insertKey: statement('apiKeys.insert', (db, arg: Arg<NewApiKey & { createdAt: string }>) => db
    .insertInto('api_keys')
    .values({ id: arg('id'), name: arg('name'), plan: arg('plan'), key_hash: arg('keyHash'), per_minute: arg('perMinute'), per_day: arg('perDay'), created_at: arg('createdAt') })
    .returning(keyColumns)),
  keyById: statement('apiKeys.byId', (db, arg: Arg<{ id: string }>) => db.selectFrom('api_keys').select(keyColumns).where('id', '=', arg('id'))),
  // Revokes once: a key revoked before keeps its first revocation time.
  revokeKey: statement('apiKeys.revoke', (db, arg: Arg<{ id: string, at: string }>) => db
    .updateTable('api_keys').set({ revoked_at: arg('at') }).where('id', '=', arg('id')).where('revoked_at', 'is', null)),
  listKeys: statement('apiKeys.list', (db) => db.selectFrom('api_keys').select(keyColumns).orderBy('created_at').orderBy('id')),
  activeKeyByHash: statement('apiKeys.activeByHash', (db, arg: Arg<{ keyHash: string }>) => db
    .selectFrom('api_keys').select(keyColumns).where('key_hash', '=', arg('keyHash')).where('revoked_at', 'is', null)),
  activeKeysByHashes: statement('apiKeys.activeByHashes', (db, arg: Arg<KeyHashSlots>) => db
    .selectFrom('api_keys').select([...keyColumns, 'key_hash as keyHash'])
    .where('key_hash', 'in', Array.from({ length: KEY_HASH_SLOTS }, (_, i) => arg(`hash${i}`)))
    .where('revoked_at', 'is', null)),
  countKeys: statement('apiKeys.count', (db) => db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')))
}

/** COUNT(*) is a BIGINT on PostgreSQL, which pg hands over as a number here (pool.ts) or text elsewhere. */
const count = (value: unknown) => Number(value)

/** The first row of a statement that always returns one (an aggregate, a row just inserted). */
function * one<A, R, K extends Access> (statement: Statement<A, R, K>, args: A): Generator<StepOf<K>, R, unknown> {
  const row = yield * first(statement, args)
  if (row === undefined) throw new Error(`statement ${statement.name} returned no row`)
  return row
}

export function * getPet (petId: number): ReadWork<ReturnType<typeof toPet> | undefined> {
  const row = yield * first(queries.getPet, { petId })
  return row && toPet(row)
}

/** Every inventory entry, ordered by petId. */
function * listInventory (): ReadWork<ReturnType<typeof toInventoryItem>[]> {
  // The columns are the field map's, each under its field's name.
  return (yield * all(queries.listInventory, {})).map((row) => toInventoryItem(row as unknown as InventoryRow))
}

export function * activeKeyByHash (keyHash: string): ReadWork<ApiKeyRecord | undefined> {
  return yield * first(queries.activeKeyByHash, { keyHash })
}

/**
 * The active keys among these hashes, by hash: one statement per KEY_HASH_SLOTS hashes (slots
 * left over repeat the first hash).
 */
export function * activeKeysByHashes (keyHashes: readonly string[]): ReadWork<Map<string, ApiKeyRecord>> {
  const found = new Map<string, ApiKeyRecord>()
  for (let start = 0; start < keyHashes.length; start += KEY_HASH_SLOTS) {
    const chunk = keyHashes.slice(start, start + KEY_HASH_SLOTS)
    const args: KeyHashSlots = {}
    for (let i = 0; i < KEY_HASH_SLOTS; i++) args[`hash${i}`] = chunk[i] ?? chunk[0]!
    for (const { keyHash, ...record } of yield * all(queries.activeKeysByHashes, args)) found.set(keyHash, record)
  }
  return found
}

type SharedMethods = Pick<Store, 'countPets' | 'highestPetId' | 'listInventory' | 'listOrders' | 'createApiKey' | 'listApiKeys' | 'revokeApiKey' | 'countApiKeys'>

/**
 * The Store methods whose queries are the same on both engines, over the engine's read and write
 * (which keep their caches coherent: a key created or revoked here reaches every cache of keys).
 */
export function sharedMethods (data: DataAccess): SharedMethods {
  return {
    countPets: () => data.read(function * () { return count((yield * one(queries.countPets, {})).n) }),
    highestPetId: () => data.read(function * () { return count((yield * one(queries.highestPetId, {})).id) }),
    listInventory: () => data.read(listInventory),
    listOrders: () => data.read(function * () { return (yield * all(queries.listOrders, {})).map(toOrder) }),
    createApiKey: (key) => data.write(() => one(queries.insertKey, { ...key, createdAt: new Date().toISOString() })),
    listApiKeys: () => data.read(() => all(queries.listKeys, {})),
    revokeApiKey: (id) => data.write(function * () {
      yield * run(queries.revokeKey, { id, at: new Date().toISOString() })
      return yield * first(queries.keyById, { id })
    }),
    countApiKeys: () => data.read(function * () { return count((yield * one(queries.countKeys, {})).n) })
  }
}
