import { sql } from 'kysely'
import { statement, type Arg } from '../store/query.js'
import { toPet } from '../store/rows.js'
import { statusExpression } from '../store/sql.js'
import type { Pet, Store } from '../store/types.js'
import { all, first, type ReadWork } from '../store/work.js'

const q = {
  get: statement('pets.get', (db, arg: Arg<{ petId: number }>) => db
    .selectFrom('pets as p')
    .leftJoin('inventory as i', 'i.pet_id', 'p.id')
    .select(['p.id', 'p.name', 'p.category_id', 'p.category_name', 'p.photo_urls', 'p.tags'])
    .select(sql<string>`${sql.raw(statusExpression('p.id', 'COALESCE(i.quantity, 0)'))}`.as('status'))
    .where('p.id', '=', arg('petId'))),
  count: statement('pets.count', (db) => db.selectFrom('pets').select((eb) => eb.fn.countAll<number>().as('n'))),
  highestId: statement('pets.highestId', (db) => db.selectFrom('pets').select((eb) => eb.fn.coalesce(eb.fn.max('id'), sql<number>`0`).as('id')))
}

function * pet (petId: number): ReadWork<Pet | undefined> {
  const row = yield * first(q.get, { petId })
  return row && toPet(row)
}

/** Pets, with the status their stock and open orders give (kept in each engine's cache of pets). */
export interface PetsRepository {
  get (petId: number): Promise<Pet | undefined>
  count (): Promise<number>
  /** The highest pet id, 0 when there are no pets. */
  highestId (): Promise<number>
}

export function petsRepository (store: Store): PetsRepository {
  const cache = store.caches.pets
  return {
    get: async (petId) => await cache.get(petId, () => pet(petId)),
    // COUNT(*) and MAX of a BIGINT come from PostgreSQL as text when pg does not parse them.
    count: () => store.read(function * () { return Number((yield * all(q.count, {}))[0]?.n ?? 0) }),
    highestId: () => store.read(function * () { return Number((yield * all(q.highestId, {}))[0]?.id ?? 0) })
  }
}

