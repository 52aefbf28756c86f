/**
 * Compiled by `npm run typecheck`, never run: each `@ts-expect-error` line must be a compile
 * error (tsc fails on one that is not), and every other line must compile. The rules of the data
 * layer's work (src/store/work.ts, src/store/query.ts) that the compiler enforces.
 */
import { statement, type Arg } from '../../src/store/query.js'
import { all, first, lockRow, run, tryLock, type DataAccess } from '../../src/store/work.js'

declare const data: DataAccess

const stock = statement('types.stock', (db, arg: Arg<{ petId: number }>) => db
  .selectFrom('inventory').select('quantity').where('pet_id', '=', arg('petId')))
const restock = statement('types.restock', (db, arg: Arg<{ petId: number, quantity: number }>) => db
  .updateTable('inventory').set({ quantity: arg('quantity') }).where('pet_id', '=', arg('petId')))
const placed = statement('types.placed', (db, arg: Arg<{ petId: number }>) => db
  .insertInto('orders').values({ pet_id: arg('petId'), quantity: 1, ship_date: '2026-12-01T10:00:00Z', status: 'placed', complete: false }).returning('id'))

// A read's work reads: SELECTs only.
export const reads = data.read(function * () {
  const entry = yield * first(stock, { petId: 1 })
  return entry?.quantity
})

// A write's work may read, lock and write.
export const writes = data.write(function * () {
  yield * lockRow('inventory', 1)
  const entry = yield * first(stock, { petId: 1 })
  yield * run(restock, { petId: 1, quantity: (entry?.quantity ?? 0) + 1 })
  return yield * all(placed, { petId: 1 })
})

// @ts-expect-error a read's work cannot write
export const readThatWrites = data.read(function * () { return yield * run(restock, { petId: 1, quantity: 2 }) })

// @ts-expect-error nor read rows from a write (INSERT … RETURNING)
export const readThatInserts = data.read(function * () { return yield * all(placed, { petId: 1 }) })

// @ts-expect-error nor lock a row
export const readThatLocks = data.read(function * () { yield * lockRow('inventory', 1) })

// @ts-expect-error nor take a named lock
export const readThatTryLocks = data.read(function * () { return yield * tryLock('scope') })

// @ts-expect-error `run` is for statements that write
export const runOfARead = data.write(function * () { return yield * run(stock, { petId: 1 }) })

// @ts-expect-error a placeholder binds one value: an array is one placeholder per element, not one argument
export const arrayArgument = statement('types.array', (db, arg: Arg<{ petIds: number[] }>) => db.selectFrom('inventory').select('quantity').where('pet_id', 'in', arg('petIds')))

// @ts-expect-error nor an object
export const objectArgument = statement('types.object', (db, arg: Arg<{ pet: { id: number } }>) => db.selectFrom('inventory').select('quantity').where('pet_id', '=', arg('pet').id))

// Values a placeholder binds: text, numbers, booleans, null.
export const scalars = statement('types.scalars', (db, arg: Arg<{ id: number, shipDate: string, complete: boolean, name: string | null }>) => db
  .selectFrom('orders').innerJoin('pets', 'pets.id', 'orders.pet_id').select('orders.id')
  .where('orders.id', '=', arg('id')).where('ship_date', '=', arg('shipDate')).where('complete', '=', arg('complete')).where('category_name', 'is not', arg('name')))
