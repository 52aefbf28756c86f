import { sql } from 'kysely'
import { inventoryFields } from './inventory-fields.js'
import { statement, type Access, type Arg, type Statement } from './query.js'
import { toInventoryItem, toOrder, toPet, type InventoryRow } from './rows.js'
import { statusExpression } from './sql.js'
import type { Store } from './types.js'
import { all, first, type DataAccess, type ReadWork, type StepOf } from './work.js'

/**
 * The store's queries that read the same on both engines, written once with Kysely. The engines
 * run them through their own executors; what differs by engine (lists built as JSON text by the
 * database, the change log, batched PATCHes, bulk imports) stays in sqlite/ and postgres/.
 */

/** Every field of InventoryItem from the field map (inventory-fields.ts), under its own name. */
const inventorySelection = Object.entries(inventoryFields).map(([name, field]) => sql<unknown>`${sql.raw(field('i'))}`.as(name))

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

type SharedMethods = Pick<Store, 'countPets' | 'highestPetId' | 'listInventory' | 'listOrders'>

/**
 * The Store methods whose queries are the same on both engines, over the engine's read and write
 * (which keep their caches coherent).
 */
export function sharedMethods (data: DataAccess): SharedMethods {
  return {
    countPets: () => data.read(function * () { return count((yield * one(queries.countPets, {})).n) }),
    highestPetId: () => data.read(function * () { return count((yield * one(queries.highestPetId, {})).id) }),
    listInventory: () => data.read(listInventory),
    listOrders: () => data.read(function * () { return (yield * all(queries.listOrders, {})).map(toOrder) })
  }
}
