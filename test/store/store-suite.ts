import type { Test } from 'tap'
import { StoreUnavailableError } from '../../src/contract/errors.js'
import { demoCatalogue } from '../../src/store/demo-catalogue.js'
import type { Catalogue, Order, PetRecord, Store } from '../../src/store/types.js'
import { addSyntheticPets } from '../../src/store/synthetic.js'
import type { Teardown } from '../helpers/app.js'
import { apiKeysRepository } from '../../src/repositories/api-keys.js'
import { petsRepository } from '../../src/repositories/pets.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { allOrders } from '../../src/repositories/orders.js'
import { EVENT_SCOPES, ALL_SCOPES } from '../helpers/contract.js'

/** A fresh, migrated, empty store of one engine, closed (and its storage removed) in teardown. */
export type StoreFactory = (t: Teardown) => Promise<Store>

const MAX_ID = 9007199254740991
const MAX_QUANTITY = 2147483647

const pet = (id: number, extra: Partial<PetRecord> = {}): PetRecord => ({ id, name: `Pet ${id}`, photoUrls: [], ...extra })
const order = (id: number, petId: number, quantity: number, status: Order['status']): Order =>
  ({ id, petId, quantity, shipDate: '2026-12-01T10:00:00.000Z', status, complete: status === 'delivered' })

/**
 * Every behaviour the handlers and CLIs rely on, written once and run on each engine
 * (test/store/sqlite.test.ts, test/store/postgres.test.ts).
 */
export function storeSuite (t: Test, engine: Store['engine'], factory: StoreFactory): void {
  t.test('migrations are idempotent and a fresh store is empty', async (t) => {
    const store = await factory(t)
    t.equal(store.engine, engine)
    await store.migrate()
    await store.migrate()
    await store.ping()
    t.equal(await petsRepository(store).count(), 0)
    t.same(await inventoryRepository(store, EVENT_SCOPES).list(), [])
    t.same(await allOrders(store), [])
    t.equal(await apiKeysRepository(store).count(), 0)
  })

  t.test('the demo catalogue: counts, inventory ordered by petId with the status rule, orders by id', async (t) => {
    const store = await factory(t)
    const { pets, inventory, orders: demoOrders } = demoCatalogue as Required<Catalogue>
    t.same(await store.importCatalogue(demoCatalogue), { pets: pets.length, inventory: inventory.length, orders: demoOrders.length })
    t.equal(await petsRepository(store).count(), pets.length)
    const statuses = Object.fromEntries((await inventoryRepository(store, EVENT_SCOPES).list()).map((i) => [i.petId, i.status]))
    // Pet 12 (the examples' pet): 7 in stock, order 42 reserves 2.
    t.same(statuses, { 1: 'available', 2: 'available', 3: 'pending', 4: 'available', 5: 'sold', 6: 'available', 7: 'pending', 8: 'available', 9: 'sold', 10: 'available', 12: 'available' })
    const ascending = (ids: number[]) => [...ids].sort((x, y) => x - y)
    t.same((await inventoryRepository(store, EVENT_SCOPES).list()).map((i) => i.petId), ascending(inventory.map((i) => i.petId)))
    const orders = await allOrders(store)
    t.same(orders.map((o) => o.id), ascending(demoOrders.map((o) => o.id)))
    t.same(orders[0], demoCatalogue.orders![0], 'an order comes back exactly as imported (complete is a boolean, shipDate unchanged)')
    t.same(orders[1], demoCatalogue.orders![1])
  })

  t.test('ordering does not depend on insertion order', async (t) => {
    const store = await factory(t)
    await store.importCatalogue({
      pets: [pet(30), pet(2), pet(MAX_ID), pet(11)],
      orders: [order(9, 30, 1, 'placed'), order(1, 2, 1, 'delivered'), order(MAX_ID, 11, 1, 'approved')]
    })
    t.same((await inventoryRepository(store, EVENT_SCOPES).list()).map((i) => i.petId), [2, 11, 30, MAX_ID])
    t.same((await allOrders(store)).map((o) => o.id), [1, 9, MAX_ID])
  })

  t.test('the status rule: sold at 0, pending when open orders reserve the stock, available otherwise', async (t) => {
    const store = await factory(t)
    await store.importCatalogue({
      pets: [pet(1), pet(2), pet(3)],
      orders: [
        order(1, 1, 2, 'placed'), order(2, 1, 1, 'approved'), // 3 reserved for pet 1
        order(3, 2, 5, 'delivered'), // delivered orders reserve nothing
        order(4, 3, 1, 'placed')
      ]
    })
    const expectations: [number, number, string][] = [
      [1, 0, 'sold'], [1, 1, 'pending'], [1, 3, 'pending'], [1, 4, 'available'], [1, MAX_QUANTITY, 'available'],
      [2, 0, 'sold'], [2, 1, 'available'], [3, 1, 'pending'], [3, 2, 'available']
    ]
    for (const [petId, quantity, status] of expectations) {
      t.same(await store.inventory.update(petId, quantity), { petId, quantity, status }, `pet ${petId} at ${quantity}: ${status}`)
      t.same((await inventoryRepository(store, EVENT_SCOPES).list()).find((i) => i.petId === petId), { petId, quantity, status }, 'the list agrees')
      t.equal((await petsRepository(store).get(petId))?.status, status, 'the pet agrees')
    }
  })

  t.test('updateInventory: undefined for a pet without an entry, bounds accepted, the write persists', async (t) => {
    const store = await factory(t)
    await store.importCatalogue({ pets: [pet(1), pet(MAX_ID)] })
    t.equal(await store.inventory.update(2, 1), undefined, 'no such pet')
    t.same(await store.inventory.update(MAX_ID, MAX_QUANTITY), { petId: MAX_ID, quantity: MAX_QUANTITY, status: 'available' }, 'the largest id and quantity')
    t.same(await store.inventory.update(1, 0), { petId: 1, quantity: 0, status: 'sold' })
    t.same(await inventoryRepository(store, EVENT_SCOPES).list(), [{ petId: 1, quantity: 0, status: 'sold' }, { petId: MAX_ID, quantity: MAX_QUANTITY, status: 'available' }])
    await t.rejects(store.inventory.update(1, -1), 'a negative quantity is refused by the schema')
    t.equal((await inventoryRepository(store, EVENT_SCOPES).list())[0]!.quantity, 0, 'and changed nothing')
  })

  t.test('concurrent updates of one entry leave one of the written values', async (t) => {
    const store = await factory(t)
    await store.importCatalogue({ pets: [pet(1)], orders: [order(1, 1, 50, 'placed')] })
    const values = Array.from({ length: 100 }, (_, i) => i + 1)
    const results = await Promise.all(values.map((q) => store.inventory.update(1, q)))
    for (const r of results) t.equal(r?.status, r!.quantity <= 50 ? 'pending' : 'available', `each answer is consistent (${r?.quantity})`)
    const [item] = await inventoryRepository(store, EVENT_SCOPES).list()
    t.ok(values.includes(item!.quantity), `final quantity ${item!.quantity} is one of the written values`)
  })

  t.test('getPet: every field, optional parts omitted, undefined when unknown', async (t) => {
    const store = await factory(t)
    const full = pet(MAX_ID, { name: 'Rex "the" \\ dog, {1}', category: { id: MAX_ID, name: 'Dogs' }, photoUrls: ['https://x.example/a.jpg', 'https://x.example/b,c.jpg'], tags: [{ id: 1, name: 'friendly' }, { id: MAX_ID, name: 'ünïcode ✓' }] })
    await store.importCatalogue({ pets: [full, pet(2)], inventory: [{ petId: MAX_ID, quantity: 3 }] })
    t.same(await petsRepository(store).get(MAX_ID), { ...full, status: 'available' })
    t.strictSame(await petsRepository(store).get(2), { id: 2, name: 'Pet 2', photoUrls: [], status: 'sold' }, 'no category or tags keys when absent')
    t.same((await petsRepository(store).get(2))?.tags, undefined)
    t.equal(await petsRepository(store).get(3), undefined)
    t.equal(typeof (await petsRepository(store).get(MAX_ID))!.id, 'number', 'ids are numbers')
  })

  t.test('import upserts: a second import replaces fields and keeps stock it does not mention', async (t) => {
    const store = await factory(t)
    await store.importCatalogue({
      pets: [pet(1, { category: { id: 1, name: 'Dogs' }, tags: [{ id: 1, name: 'old' }] }), pet(2)],
      inventory: [{ petId: 1, quantity: 5 }, { petId: 2, quantity: 6 }],
      orders: [order(1, 1, 1, 'placed')]
    })
    const counts = await store.importCatalogue({
      pets: [pet(1, { name: 'Renamed', photoUrls: ['https://x.example/p.jpg'] })],
      inventory: [{ petId: 2, quantity: 9 }],
      orders: [order(1, 2, 3, 'delivered')]
    })
    t.same(counts, { pets: 1, inventory: 1, orders: 1 })
    t.strictSame(await petsRepository(store).get(1), { id: 1, name: 'Renamed', photoUrls: ['https://x.example/p.jpg'], status: 'available' }, 'category and tags are replaced by their absence')
    t.same(await inventoryRepository(store, EVENT_SCOPES).list(), [{ petId: 1, quantity: 5, status: 'available' }, { petId: 2, quantity: 9, status: 'available' }], 're-imported pet 1 keeps its stock')
    t.same(await allOrders(store), [order(1, 2, 3, 'delivered')])
    t.equal(await petsRepository(store).count(), 2)
  })

  t.test('import: a pet without inventory gets an entry at 0; the last duplicate wins', async (t) => {
    const store = await factory(t)
    const counts = await store.importCatalogue({
      pets: [pet(1, { name: 'first' }), pet(1, { name: 'second' })],
      inventory: [{ petId: 1, quantity: 4 }, { petId: 1, quantity: 7 }],
      orders: [order(5, 1, 1, 'placed'), order(5, 1, 2, 'approved')]
    })
    t.same(counts, { pets: 2, inventory: 2, orders: 2 }, 'counts are of the entries given')
    t.equal((await petsRepository(store).get(1))?.name, 'second')
    t.same(await inventoryRepository(store, EVENT_SCOPES).list(), [{ petId: 1, quantity: 7, status: 'available' }])
    t.same(await allOrders(store), [order(5, 1, 2, 'approved')])
    await store.importCatalogue({ pets: [pet(2)] })
    t.same((await inventoryRepository(store, EVENT_SCOPES).list())[1], { petId: 2, quantity: 0, status: 'sold' })
  })

  t.test('import is one transaction: a bad entry leaves nothing behind', async (t) => {
    const store = await factory(t)
    await store.importCatalogue({ pets: [pet(1)], inventory: [{ petId: 1, quantity: 3 }] })
    const bad: Catalogue = { pets: [pet(1, { name: 'changed' }), pet(2)], inventory: [{ petId: 1, quantity: 8 }], orders: [order(1, 99, 1, 'placed')] }
    await t.rejects(store.importCatalogue(bad), 'an order for an unknown pet is refused')
    t.equal((await petsRepository(store).get(1))?.name, 'Pet 1')
    t.equal(await petsRepository(store).get(2), undefined)
    t.same(await inventoryRepository(store, EVENT_SCOPES).list(), [{ petId: 1, quantity: 3, status: 'available' }])
    t.same(await allOrders(store), [])
    await t.rejects(store.importCatalogue({ inventory: [{ petId: 42, quantity: 1 }] }), 'inventory for an unknown pet is refused')
  })

  t.test('synthetic pets: exactly N on an empty store, then continuing after the highest id', async (t) => {
    const store = await factory(t)
    await addSyntheticPets(store, 120)
    t.equal(await petsRepository(store).count(), 120)
    const items = await inventoryRepository(store, EVENT_SCOPES).list()
    t.equal(items.length, 120)
    t.same(items.map((i) => i.petId), Array.from({ length: 120 }, (_, i) => i + 1))
    t.ok(items.every((i) => i.quantity === i.petId % 50), 'quantity is id % 50')
    t.strictSame(await petsRepository(store).get(7), { id: 7, name: 'Pet 7', photoUrls: [], status: 'available' })
    await store.importCatalogue({ pets: [pet(1000)] })
    await addSyntheticPets(store, 2)
    t.same((await inventoryRepository(store, EVENT_SCOPES).list()).slice(-2).map((i) => i.petId), [1001, 1002])
  })

  t.test('synthetic pets never pass the largest exact id, and refusing adds nothing', async (t) => {
    const store = await factory(t)
    await store.importCatalogue({ pets: [pet(Number.MAX_SAFE_INTEGER - 1)] })
    await t.rejects(addSyntheticPets(store, 2), /ids would pass 9007199254740991/)
    t.equal(await petsRepository(store).count(), 1)
    await addSyntheticPets(store, 1)
    t.same((await inventoryRepository(store, EVENT_SCOPES).list()).map((i) => i.petId), [Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER])
  })

  t.test('API keys: create, look up by hash, list in creation order, revoke once', async (t) => {
    const store = await factory(t)
    const a = await apiKeysRepository(store).create({ id: 'key_a', name: 'first', plan: 'free', keyHash: 'hash-a', perMinute: null, perDay: null, scopes: ALL_SCOPES })
    t.match(a, { id: 'key_a', name: 'first', plan: 'free', perMinute: null, perDay: null, revokedAt: null })
    t.match(a.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const b = await apiKeysRepository(store).create({ id: 'key_0', name: 'second', plan: 'enterprise', keyHash: 'hash-b', perMinute: MAX_QUANTITY, perDay: 100000, scopes: ALL_SCOPES })
    t.same({ perMinute: b.perMinute, perDay: b.perDay }, { perMinute: MAX_QUANTITY, perDay: 100000 })
    t.equal(await apiKeysRepository(store).count(), 2)
    t.same((await apiKeysRepository(store).list()).map((k) => k.id), ['key_a', 'key_0'], 'ordered by creation time, not id')
    t.same(await apiKeysRepository(store).findActive('hash-a'), a)
    t.equal(await apiKeysRepository(store).findActive('hash-x'), undefined)
    await t.rejects(apiKeysRepository(store).create({ id: 'key_c', name: 'dup', plan: 'free', keyHash: 'hash-a', perMinute: null, perDay: null, scopes: ALL_SCOPES }), 'a hash is unique')

    const revoked = await apiKeysRepository(store).revoke('key_a')
    t.match(revoked, { id: 'key_a', name: 'first' })
    t.match(revoked?.revokedAt, /^\d{4}-/)
    t.equal(await apiKeysRepository(store).findActive('hash-a'), undefined, 'a revoked key is not found from the next lookup on')
    t.same(await apiKeysRepository(store).revoke('key_a'), revoked, 'revoking again keeps the first revocation')
    t.equal(await apiKeysRepository(store).revoke('key_missing'), undefined)
    t.same(await apiKeysRepository(store).findActive('hash-b'), b, 'other keys are untouched')
    t.equal(await apiKeysRepository(store).count(), 2, 'revoked keys are still counted')
  })

  t.test('a closed store rejects with StoreUnavailableError', async (t) => {
    const store = await factory(t)
    await store.close()
    await store.close()
    await t.rejects(store.ping(), StoreUnavailableError)
    await t.rejects(inventoryRepository(store, EVENT_SCOPES).list(), StoreUnavailableError)
  })
}
