import type { Test } from 'tap'
import { apiKeysRepository, issueApiKey } from '../../src/repositories/api-keys.js'
import { webhooksRepository } from '../../src/repositories/webhooks.js'
import { SecretBox } from '../../src/webhooks/secrets.js'
import { newSecret } from '../../src/webhooks/signing.js'
import { idempotencyRepository, IDEMPOTENCY_TTL_MS } from '../../src/repositories/idempotency.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { ordersRepository } from '../../src/repositories/orders.js'
import { petsRepository } from '../../src/repositories/pets.js'
import { statement, type Arg } from '../../src/store/query.js'
import { statusOf } from '../../src/store/rows.js'
import type { Store } from '../../src/store/types.js'
import { all, first, lockRow, run, tryLock, type Work } from '../../src/store/work.js'
import type { StoreFactory } from '../store/store-suite.js'
import { EVENT_SCOPES, ALL_SCOPES } from '../helpers/contract.js'

const SHIP = '2026-12-01T10:00:00.000Z'

/** A write of the test's own: sets a pet's stock, the way a repository would. */
const setStock = statement('test.setStock', (db, arg: Arg<{ petId: number, quantity: number }>) => db
  .updateTable('inventory').set({ quantity: arg('quantity') }).where('pet_id', '=', arg('petId')))

class InjectedFault extends Error {}

const eventPets = statement('test.eventPets', (db) => db.selectFrom('webhook_events').select('payload').where('type', '=', 'inventory.updated').orderBy('id'))

const restockBy = statement('test.restockBy', (db, arg: Arg<{ petId: number, units: number }>) => db
  .updateTable('inventory').set((eb) => ({ quantity: eb('quantity', '+', arg('units')) })).where('pet_id', '=', arg('petId')))
const stockOf = statement('test.stockOf', (db, arg: Arg<{ petId: number }>) => db
  .selectFrom('inventory').select('quantity').where('pet_id', '=', arg('petId')))
const addOrder = statement('test.addOrder', (db, arg: Arg<{ petId: number }>) => db
  .insertInto('orders').values({ pet_id: arg('petId'), quantity: 1, ship_date: SHIP, status: 'placed', complete: false }).returning('id'))
// A SELECT whose common table expression deletes: typed as a read, found out when it runs.
const sneakyDelete = statement('test.sneakyDelete', (db) => db
  .with('gone', (cte) => cte.deleteFrom('orders').returning('id')).selectFrom('gone').select('id'))

/** A store with pets 1…3 in stock: 7, 2 and 0 units; the repositories over it, on a clock the test moves. */
async function setUp (t: Test, factory: StoreFactory) {
  const store: Store = await factory(t)
  await store.importCatalogue({
    pets: [1, 2, 3].map((id) => ({ id, name: `Pet ${id}`, photoUrls: [] })),
    inventory: [{ petId: 1, quantity: 7 }, { petId: 2, quantity: 2 }, { petId: 3, quantity: 0 }]
  })
  let clock = Date.parse('2026-11-25T12:00:00Z')
  const now = () => clock
  const idempotency = idempotencyRepository(store)
  return {
    store,
    now,
    advance: (ms: number) => { clock += ms },
    idempotency,
    orders: ordersRepository(store, idempotency, now, EVENT_SCOPES),
    inventory: inventoryRepository(store, EVENT_SCOPES),
    pets: petsRepository(store),
    apiKeys: apiKeysRepository(store),
    statusOf: async (petId: number) => (await inventoryRepository(store, EVENT_SCOPES).list()).find((item) => item.petId === petId)?.status
  }
}

/** Every repository method, written once and run on each engine (sqlite.test.ts, postgres.test.ts here). */
export function repositorySuite (t: Test, factory: StoreFactory): void {
  t.test('a PATCH committed after an endpoint subscribed, in the same batch, records its event', async (t) => {
    const r = await setUp(t, factory)
    const { record } = await issueApiKey(r.store, { name: 'events', plan: 'free', scopes: ALL_SCOPES })
    const webhooks = webhooksRepository(r.store, new SecretBox(undefined), r.now)
    // On SQLite, writes called in one event-loop turn are one batch of the group commit, run in
    // call order. On PostgreSQL each runs on a connection of its own and the three commit in any
    // order, so the second change waits for the subscription's commit (it raced it before, and
    // sometimes committed first: no event, rightly).
    const before = r.inventory.update(1, 6)
    const subscribed = webhooks.create(record.id, { url: 'https://hooks.example.com/in', events: ['inventory.updated'] }, newSecret())
    const change = () => r.inventory.update(2, 1)
    const [earlier, created, after] = await Promise.all([before, subscribed, r.store.engine === 'sqlite' ? change() : subscribed.then(change)])
    t.ok(earlier !== undefined && after !== undefined && created.kind === 'created', 'all three written')
    const events = await r.store.read(() => all(eventPets, {}))
    // On SQLite the first change precedes the subscription in the batch, so it has no event; on
    // PostgreSQL the three run side by side on their own connections, and it may have one.
    const petIds = events.map((e) => (JSON.parse(e.payload) as { data: { petId: number } }).data.petId)
    t.ok(petIds.includes(2), `the change after the subscription has its event (events for pets ${petIds.join(', ')})`)
    t.ok(petIds.every((id) => id === 1 || id === 2) && new Set(petIds).size === petIds.length, 'one event per change at most')
  })

  t.test('the status rule: statusOf (JavaScript, for the events) agrees with the SQL of every list', async (t) => {
    const store: Store = await factory(t)
    // Every stock of 0…3 against open orders reserving 0…4 units, and orders that reserve nothing
    // (delivered, and a cancelled one's absence): one pet per pair.
    const pairs = [0, 1, 2, 3].flatMap((quantity) => [0, 1, 2, 3, 4].map((reserved) => ({ quantity, reserved })))
    let orderId = 0
    await store.importCatalogue({
      pets: pairs.map((_, i) => ({ id: i + 1, name: `Pet ${i + 1}`, photoUrls: [] })),
      inventory: pairs.map(({ quantity }, i) => ({ petId: i + 1, quantity })),
      orders: pairs.flatMap(({ reserved }, i) => [
        ...(reserved > 0 ? [{ id: ++orderId, petId: i + 1, quantity: Math.ceil(reserved / 2), shipDate: SHIP, status: 'placed' as const, complete: false }] : []),
        ...(reserved > 1 ? [{ id: ++orderId, petId: i + 1, quantity: Math.floor(reserved / 2), shipDate: SHIP, status: 'approved' as const, complete: false }] : []),
        { id: ++orderId, petId: i + 1, quantity: 3, shipDate: SHIP, status: 'delivered' as const, complete: true }
      ])
    })
    const listed = await inventoryRepository(store, EVENT_SCOPES).list()
    t.same(listed.map((item) => item.status), pairs.map(({ quantity, reserved }) => statusOf(quantity, reserved)),
      `the ${pairs.length} pairs of stock and reserved units get the same status from both`)
    t.same(new Set(listed.map((item) => item.status)), new Set(['sold', 'pending', 'available']), 'every status is among them')
  })

  t.test('place: reserves stock, never beyond it; the status follows at once', async (t) => {
    const r = await setUp(t, factory)
    const first = await r.orders.place({ petId: 1, quantity: 5, shipDate: SHIP })
    t.equal(first.kind, 'done')
    if (first.kind !== 'done' || first.outcome.kind !== 'placed') throw new Error('not placed')
    t.match(first.outcome.order, { petId: 1, quantity: 5, shipDate: SHIP, status: 'placed', complete: false })
    t.ok(first.outcome.order.id >= 1)
    t.same(await r.orders.get(first.outcome.order.id), first.outcome.order)
    t.equal(await r.statusOf(1), 'available', '5 of 7 reserved')
    t.same(await r.orders.place({ petId: 1, quantity: 3, shipDate: SHIP }), { kind: 'done', outcome: { kind: 'insufficient_stock', available: 2 }, replayed: false })
    const second = await r.orders.place({ petId: 1, quantity: 2, shipDate: SHIP })
    t.match(second, { kind: 'done', outcome: { kind: 'placed' } })
    t.equal(await r.statusOf(1), 'pending', 'every unit reserved')
    t.same(await r.orders.place({ petId: 3, quantity: 1, shipDate: SHIP }), { kind: 'done', outcome: { kind: 'insufficient_stock', available: 0 }, replayed: false })
    t.same(await r.orders.place({ petId: 99, quantity: 1, shipDate: SHIP }), { kind: 'done', outcome: { kind: 'no_inventory' }, replayed: false })
  })

  t.test('place: concurrent orders never reserve more than the stock', async (t) => {
    const r = await setUp(t, factory)
    const outcomes = await Promise.all(Array.from({ length: 12 }, () => r.orders.place({ petId: 1, quantity: 1, shipDate: SHIP })))
    const kinds = outcomes.map((o) => o.kind === 'done' ? o.outcome.kind : o.kind)
    t.equal(kinds.filter((k) => k === 'placed').length, 7)
    t.equal(kinds.filter((k) => k === 'insufficient_stock').length, 5)
  })

  t.test('place with an Idempotency-Key: replayed, refused for another request, scoped to the API key', async (t) => {
    const r = await setUp(t, factory)
    const key = { apiKeyId: 'k1', key: 'retry-1', fingerprint: 'f1' }
    const first = await r.orders.place({ petId: 1, quantity: 1, shipDate: SHIP }, key)
    const again = await r.orders.place({ petId: 1, quantity: 1, shipDate: SHIP }, key)
    t.match(first, { kind: 'done', replayed: false, outcome: { kind: 'placed' } })
    t.same(again, { ...first, replayed: true })
    t.same(await r.orders.place({ petId: 1, quantity: 2, shipDate: SHIP }, { ...key, fingerprint: 'f2' }), { kind: 'reused' })
    t.match(await r.orders.place({ petId: 1, quantity: 1, shipDate: SHIP }, { ...key, apiKeyId: 'k2' }), { kind: 'done', replayed: false })
    t.equal((await r.orders.page({ limit: 100 })).orders.length, 2, 'the replay placed nothing')
    // After 24 hours the key is free again, and the sweep removes the record.
    r.advance(IDEMPOTENCY_TTL_MS + 1)
    t.equal(await r.idempotency.sweep(r.now()), 2)
    t.equal(await r.idempotency.sweep(r.now()), 0)
    t.match(await r.orders.place({ petId: 1, quantity: 2, shipDate: SHIP }, { ...key, fingerprint: 'f2' }), { kind: 'done', replayed: false })
  })

  t.test('a write that throws fails alone: the writes queued beside it commit, and each is read back', async (t) => {
    const r = await setUp(t, factory)
    // All made in one synchronous stretch: on SQLite they share one group commit; on PostgreSQL
    // the PATCHes share one statement.
    const calls = [
      r.inventory.update(1, 9),
      r.orders.place({ petId: 2, quantity: 1, shipDate: SHIP }),
      r.store.write(function * () {
        yield * lockRow('inventory', 3)
        yield * run(setStock, { petId: 3, quantity: 5 })
        throw new InjectedFault('injected after its write')
      }),
      r.orders.place({ petId: 1, quantity: 2, shipDate: SHIP }),
      r.inventory.update(2, 8),
      r.orders.place({ petId: 2, quantity: 1, shipDate: SHIP })
    ]
    const [patch1, order2, thrown, order1, patch2, order2b] = await Promise.allSettled(calls)
    t.equal(thrown!.status, 'rejected', 'the throwing write fails')
    t.type((thrown as PromiseRejectedResult).reason, InjectedFault, '…with its own error')
    for (const [name, result] of Object.entries({ patch1, order2, order1, patch2, order2b })) {
      t.equal(result!.status, 'fulfilled', `${name} is acknowledged (${result!.status === 'rejected' ? String((result as PromiseRejectedResult).reason) : 'ok'})`)
    }
    const stock = new Map((await inventoryRepository(r.store, EVENT_SCOPES).list()).map((item) => [item.petId, item.quantity]))
    t.equal(stock.get(1), 9, 'the first PATCH is read back')
    t.equal(stock.get(2), 8, 'the second PATCH is read back')
    t.equal(stock.get(3), 0, 'what the throwing write did is undone')
    const placed = (await r.orders.page({ limit: 100 })).orders
    t.same(placed.map((o) => [o.petId, o.quantity]).sort(), [[1, 2], [2, 1], [2, 1]], 'every acknowledged order is read back')
  })

  t.test('the rules of work hold on every engine: reads only read, locks come first and guard the writes they must', async (t) => {
    const r = await setUp(t, factory)
    await r.orders.place({ petId: 1, quantity: 1, shipDate: SHIP })
    const orders = async () => (await r.orders.page({ limit: 100 })).orders.length
    await t.rejects(r.store.read(() => all(sneakyDelete, {})), { name: 'WorkRuleError', message: /a read ran a step that writes/ },
      'a read whose SELECT writes is refused before it runs')
    t.equal(await orders(), 1, 'and deleted nothing')
    await t.rejects(r.store.write(function * (): Work<unknown> { return yield * all(addOrder, { petId: 1 }) }),
      { name: 'WorkRuleError', message: "test.addOrder writes orders without lockRow('inventory', …) first" }, 'an order written without its pet\'s lock is refused')
    await t.rejects(r.store.write(function * (): Work<unknown> {
      yield * lockRow('inventory', 1)
      yield * run(setStock, { petId: 1, quantity: 3 })
      return yield * tryLock('late')
    }), { name: 'WorkRuleError', message: /tryLock after the write test.setStock/ }, 'a lock taken after a write is refused')
    t.equal(await orders(), 1, 'neither wrote anything')
    t.equal((await r.store.read(() => first(stockOf, { petId: 1 })))?.quantity, 7, 'the stock is as it was')
  })

  t.test('a write the database refuses for a constraint is the same 409 on every engine, and changes nothing', async (t) => {
    const r = await setUp(t, factory)
    const refused = (code: string) => ({ name: 'ConstraintViolation', code, statusCode: 409 })
    // The bound of a stock count: 2^31 - 1 (InventoryUpdate.quantity's maximum in openapi.yaml).
    await r.inventory.update(1, 2147483647)
    await t.rejects(r.store.write(function * () {
      yield * lockRow('inventory', 1)
      return yield * run(restockBy, { petId: 1, units: 1 })
    }), refused('out_of_range'), 'a restock past the bound')
    t.equal((await r.store.read(() => first(stockOf, { petId: 1 })))?.quantity, 2147483647, 'the stock is unchanged')
    await t.rejects(r.inventory.update(2, -1), refused('out_of_range'), 'a stock below 0 (the PATCH\'s own path)')
    await r.apiKeys.create({ id: 'key_a', name: 'a', plan: 'pro', keyHash: 'hash-a', perMinute: null, perDay: null, scopes: ALL_SCOPES })
    await t.rejects(r.apiKeys.create({ id: 'key_b', name: 'b', plan: 'pro', keyHash: 'hash-a', perMinute: null, perDay: null, scopes: ALL_SCOPES }), refused('already_exists'), 'a key hash taken')
    await t.rejects(r.store.write(function * () {
      yield * lockRow('inventory', 99)
      return yield * all(addOrder, { petId: 99 })
    }), refused('invalid_reference'), 'an order of a pet that does not exist')
    t.same((await inventoryRepository(r.store, EVENT_SCOPES).list()).map((item) => item.quantity), [2147483647, 2, 0], 'nothing changed')
  })

  t.test('setStatus: transitions, delivery takes the units out of stock', async (t) => {
    const r = await setUp(t, factory)
    const placed = await r.orders.place({ petId: 1, quantity: 3, shipDate: SHIP })
    if (placed.kind !== 'done' || placed.outcome.kind !== 'placed') throw new Error('not placed')
    const id = placed.outcome.order.id
    t.match(await r.orders.setStatus(id, 'approved'), { kind: 'updated', order: { status: 'approved', complete: false } })
    t.match(await r.orders.setStatus(id, 'approved'), { kind: 'updated', order: { status: 'approved' } }, 'its own status changes nothing')
    t.match(await r.orders.setStatus(id, 'delivered'), { kind: 'updated', order: { status: 'delivered', complete: true } })
    t.equal((await inventoryRepository(r.store, EVENT_SCOPES).list()).find((i) => i.petId === 1)?.quantity, 4)
    t.same(await r.orders.setStatus(id, 'approved'), { kind: 'invalid_transition', from: 'delivered' })
    t.same(await r.orders.setStatus(999, 'approved'), { kind: 'not_found' })
    // Stock lowered below an open order: delivering it is refused and changes nothing.
    const other = await r.orders.place({ petId: 2, quantity: 2, shipDate: SHIP })
    if (other.kind !== 'done' || other.outcome.kind !== 'placed') throw new Error('not placed')
    await r.inventory.update(2, 1)
    t.match(await r.orders.setStatus(other.outcome.order.id, 'delivered'), { kind: 'insufficient_stock', stock: 1 })
    t.match(await r.orders.get(other.outcome.order.id), { status: 'placed' })
  })

  t.test('cancel: an open order is deleted, a delivered one stays', async (t) => {
    const r = await setUp(t, factory)
    const a = await r.orders.place({ petId: 2, quantity: 2, shipDate: SHIP })
    if (a.kind !== 'done' || a.outcome.kind !== 'placed') throw new Error('not placed')
    t.equal(await r.statusOf(2), 'pending')
    t.same(await r.orders.cancel(a.outcome.order.id), { kind: 'cancelled' })
    t.equal(await r.statusOf(2), 'available')
    t.same(await r.orders.cancel(a.outcome.order.id), { kind: 'not_found' })
    t.equal(await r.orders.get(a.outcome.order.id), undefined)
    const b = await r.orders.place({ petId: 2, quantity: 1, shipDate: SHIP })
    if (b.kind !== 'done' || b.outcome.kind !== 'placed') throw new Error('not placed')
    t.ok(b.outcome.order.id > a.outcome.order.id, 'a cancelled order id is never given again')
    await r.orders.setStatus(b.outcome.order.id, 'delivered')
    t.same(await r.orders.cancel(b.outcome.order.id), { kind: 'invalid_transition', from: 'delivered' })
  })

  t.test('place: ids come after every imported order', async (t) => {
    const r = await setUp(t, factory)
    await r.store.importCatalogue({ orders: [{ id: 40, petId: 1, quantity: 1, shipDate: SHIP, status: 'delivered', complete: true }] })
    const placed = await r.orders.place({ petId: 1, quantity: 1, shipDate: SHIP })
    if (placed.kind !== 'done' || placed.outcome.kind !== 'placed') throw new Error('not placed')
    t.ok(placed.outcome.order.id > 40, `the first order placed after an import of order 40 is ${placed.outcome.order.id}`)
  })

  t.test('page: in id order, filtered, with more while others follow', async (t) => {
    const r = await setUp(t, factory)
    for (const petId of [1, 2, 1, 1, 2]) await r.orders.place({ petId, quantity: 1, shipDate: SHIP })
    const all = (await r.orders.page({ limit: 100 })).orders
    t.equal(all.length, 5)
    t.same(all.map((o) => o.id), [...all.map((o) => o.id)].sort((a, b) => a - b))
    const page1 = await r.orders.page({ limit: 2 })
    t.equal(page1.more, true)
    const page2 = await r.orders.page({ limit: 2, afterId: page1.orders[1]!.id })
    const page3 = await r.orders.page({ limit: 2, afterId: page2.orders[1]!.id })
    t.equal(page3.more, false)
    t.same([...page1.orders, ...page2.orders, ...page3.orders], all)
    t.same((await r.orders.page({ limit: 100, petId: 2 })).orders.map((o) => o.petId), [2, 2])
    await r.orders.setStatus(all[0]!.id, 'approved')
    t.same((await r.orders.page({ limit: 100, statuses: ['approved'] })).orders.map((o) => o.id), [all[0]!.id])
    t.equal((await r.orders.page({ limit: 100, statuses: ['placed', 'approved'], petId: 1 })).orders.length, 3)
  })

  t.test('API keys: created, found while active, listed, revoked once, counted', async (t) => {
    const r = await setUp(t, factory)
    const key = { id: 'key_a', name: 'partner', plan: 'pro', keyHash: 'hash-a', perMinute: null, perDay: null, scopes: ALL_SCOPES }
    const created = await r.apiKeys.create(key)
    t.match(created, { id: 'key_a', name: 'partner', plan: 'pro', perMinute: null, perDay: null, revokedAt: null })
    t.same(await r.apiKeys.findActive('hash-a'), created)
    await r.apiKeys.create({ ...key, id: 'key_b', keyHash: 'hash-b', plan: 'enterprise', perMinute: 10, perDay: 100, scopes: ALL_SCOPES })
    t.same((await r.apiKeys.list()).map((k) => k.id), ['key_a', 'key_b'])
    t.equal(await r.apiKeys.count(), 2)
    const revoked = await r.apiKeys.revoke('key_a')
    t.ok(revoked?.revokedAt, 'revoked, with its time')
    t.equal(await r.apiKeys.findActive('hash-a'), undefined, 'no longer active')
    t.equal((await r.apiKeys.revoke('key_a'))?.revokedAt, revoked?.revokedAt, 'a second revocation keeps the first time')
    t.equal(await r.apiKeys.revoke('key_none'), undefined)
    const many = Array.from({ length: 40 }, (_, i) => `hash-${i}`)
    await Promise.all(many.slice(0, 35).map((keyHash, i) => r.apiKeys.create({ ...key, id: `key_m${i}`, keyHash, scopes: ALL_SCOPES })))
    await r.apiKeys.revoke('key_m3')
    const found = await r.apiKeys.findActiveMany([...many, 'hash-a', 'hash-b'])
    t.same([...found.keys()].sort(), [...many.slice(0, 35).filter((keyHash) => keyHash !== 'hash-3'), 'hash-b'].sort(),
      'findActiveMany: the active keys among 42 hashes (more than one statement\'s worth), by hash')
    t.same(found.get('hash-7'), await r.apiKeys.findActive('hash-7'), 'each the same record as findActive')
  })

  t.test('pets and inventory repositories', async (t) => {
    const r = await setUp(t, factory)
    t.match(await r.pets.get(1), { id: 1, status: 'available' })
    t.equal(await r.pets.get(42), undefined)
    t.match(await r.inventory.update(3, 4), { petId: 3, quantity: 4, status: 'available' })
    t.equal(await r.inventory.update(42, 4), undefined)
    const list = await r.inventory.listJson()
    t.match(typeof list === 'string' ? list : list.bytes.toString(), /"petId":3,"quantity":4/)
  })
}
