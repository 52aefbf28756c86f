import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import t, { type Test } from 'tap'
import { orderColumns, toOrder, type OrderRow } from '../../src/store/rows.js'
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js'
import type { Catalogue, Order } from '../../src/store/types.js'
import { addSyntheticPets } from '../../src/store/synthetic.js'
import { createTestSchema, POSTGRES, type TestSchema } from '../helpers/postgres.js'
import { seededRandom } from '../helpers/random.js'
import { apiKeysRepository } from '../../src/repositories/api-keys.js'
import { petsRepository } from '../../src/repositories/pets.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { allOrders } from '../../src/repositories/orders.js'
import { EVENT_SCOPES, ALL_SCOPES } from '../helpers/contract.js'

/**
 * The PostgreSQL store's caches across instances (src/store/postgres/index.ts): each instance
 * keeps lists, pets and keys in memory and learns of other connections' writes by LISTEN/NOTIFY.
 * `syncChanges()` waits until every change committed before it has reached the caches; waits are
 * bounded, nothing here measures time.
 */

async function stores (t: Test, count: number, poolMax = 4): Promise<{ schema: TestSchema, stores: PostgresStore[] }> {
  const schema = await createTestSchema(t)
  const list = Array.from({ length: count }, () => createPostgresStore(schema.url(), { poolMax }))
  t.teardown(() => Promise.all(list.map((s) => s.close())))
  await list[0]!.migrate()
  return { schema, stores: list }
}

const sessionConfig = (schema: TestSchema): pg.ClientConfig => ({
  ...POSTGRES,
  options: `-c search_path=${schema.schema}`,
  // BIGINT ids as numbers, as the store reads them.
  types: { getTypeParser: (oid, format) => oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format) }
})

/** A connection of its own on the schema, as psql would be. */
async function sqlSession (t: Test, schema: TestSchema): Promise<pg.Client> {
  const client = new pg.Client(sessionConfig(schema))
  await client.connect()
  t.teardown(() => client.end())
  return client
}

/** Polls until `check` holds, for at most `limitMs`; the answer is whether it did. */
async function eventually (check: () => boolean | Promise<boolean>, limitMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + limitMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await sleep(20)
  }
  return check()
}

const order = (id: number, petId: number, quantity: number, status: Order['status']): Order =>
  ({ id, petId, quantity, shipDate: '2026-12-01T10:00:00.000Z', status, complete: status === 'delivered' })

const listOf = async (store: PostgresStore) => JSON.parse(await store.inventory.listJson()) as { petId: number, quantity: number, status: string }[]

t.test('two instances: each reads the other\'s writes, and plain SQL, once their notification has arrived', async (t) => {
  const { schema, stores: [a, b] } = await stores(t, 2)
  const psql = await sqlSession(t, schema)
  await a!.importCatalogue({ pets: [{ id: 1, name: 'a', photoUrls: [] }, { id: 2, name: 'b', photoUrls: [] }], inventory: [{ petId: 1, quantity: 5 }] })
  await Promise.all([a!.syncChanges(), b!.syncChanges()])
  t.ok(a!.listening && b!.listening, 'both listen')

  const first = await a!.inventory.listJson()
  t.equal(await a!.inventory.listJson(), first, 'nothing changed: the same text')
  await b!.inventory.update(1, 6)
  await a!.syncChanges()
  t.same((await listOf(a!))[0], { petId: 1, quantity: 6, status: 'available' }, 'a PATCH on the other instance')
  t.equal((await petsRepository(a!).get(1))?.status, 'available')

  await psql.query('UPDATE inventory SET quantity = 0 WHERE pet_id = 1')
  await a!.syncChanges()
  t.same((await listOf(a!))[0], { petId: 1, quantity: 0, status: 'sold' }, 'plain SQL on another connection')
  t.equal((await petsRepository(a!).get(1))?.status, 'sold', 'the cached pet too')

  await psql.query(`INSERT INTO orders (id, pet_id, quantity, ship_date, status, complete) VALUES (1, 1, 1, '2026-12-01T12:00:00.000Z', 'placed', false)`)
  await b!.inventory.update(1, 1)
  await a!.syncChanges()
  t.same((await listOf(a!))[0], { petId: 1, quantity: 1, status: 'pending' }, 'an order and a PATCH elsewhere')
  t.equal((await petsRepository(a!).get(1))?.status, 'pending')
  t.same((await allOrders(a!)).map((o) => o.id), [1], 'the order list')
  t.same((await listOf(b!))[0], { petId: 1, quantity: 1, status: 'pending' }, 'the writer agrees')

  await psql.query('DELETE FROM orders WHERE id = 1')
  await psql.query("INSERT INTO pets (id, name) VALUES (5, 'e')")
  await psql.query('INSERT INTO inventory (pet_id, quantity) VALUES (5, 3)')
  await a!.syncChanges()
  t.same(await listOf(a!), [{ petId: 1, quantity: 1, status: 'available' }, { petId: 2, quantity: 0, status: 'sold' }, { petId: 5, quantity: 3, status: 'available' }], 'an order gone, an entry added')
  t.same(await allOrders(a!), [])
  await psql.query('DELETE FROM pets WHERE id = 1')
  await a!.syncChanges()
  t.same((await listOf(a!)).map((i) => i.petId), [2, 5], 'a pet deleted with its entry')
  t.equal(await petsRepository(a!).get(1), undefined)
})

t.test('reads are served from memory while listening: a write that bypasses the triggers stays unseen', async (t) => {
  // session_replication_role = replica turns triggers off, so nothing is announced. This is how
  // the test tells a cached answer from a fresh one; never write to a live database this way.
  const { schema, stores: [a] } = await stores(t, 1)
  const psql = await sqlSession(t, schema)
  await addSyntheticPets(a!, 3)
  await a!.importCatalogue({ orders: [order(1, 2, 1, 'placed')] })
  await apiKeysRepository(a!).create({ id: 'key_1', name: 'k', plan: 'free', keyHash: 'hash-1', perMinute: null, perDay: null, scopes: ALL_SCOPES })
  await a!.syncChanges()
  const list = await a!.inventory.listJson()
  const pet = await petsRepository(a!).get(2)
  t.ok(await apiKeysRepository(a!).findActive('hash-1'))

  await psql.query('SET session_replication_role = replica')
  await psql.query('UPDATE inventory SET quantity = 40')
  await psql.query("UPDATE orders SET status = 'delivered'")
  await psql.query("UPDATE api_keys SET revoked_at = 'now'")
  await a!.syncChanges()
  t.equal(await a!.inventory.listJson(), list, 'the list from memory')
  t.same(await petsRepository(a!).get(2), pet, 'the pet from memory')
  t.ok((await allOrders(a!)).every((o) => o.status === 'delivered'), 'orders are not cached: read afresh (paged from the database)')
  t.ok(await apiKeysRepository(a!).findActive('hash-1'), 'the key from memory')
  t.ok((await inventoryRepository(a!, EVENT_SCOPES).list()).every((i) => i.quantity === 40), 'while the database has changed')

  await psql.query('SET session_replication_role = DEFAULT')
  await psql.query('UPDATE inventory SET quantity = 41 WHERE pet_id = 2')
  await a!.syncChanges()
  t.same((await listOf(a!)).map((i) => i.quantity), [1, 41, 3], 'an announced change reads its entry again, and only it')
})

t.test('this instance reads its own writes at once, also while reading and writing concurrently', async (t) => {
  const { stores: [a] } = await stores(t, 1)
  await addSyntheticPets(a!, 20)
  await a!.importCatalogue({ orders: [order(1, 3, 1025, 'placed')] })
  await a!.syncChanges()
  await a!.inventory.listJson()
  let violations = 0
  // One chain of writes per pet, 20 chains at once: after each acknowledgement the list and the
  // pet show exactly that write (nobody else writes that pet).
  await Promise.all(Array.from({ length: 20 }, async (_, chain) => {
    const petId = chain + 1
    for (let step = 0; step < 10; step++) {
      const quantity = 1020 + step
      const written = await a!.inventory.update(petId, quantity)
      const [item, pet] = await Promise.all([listOf(a!).then((l) => l.find((x) => x.petId === petId)), petsRepository(a!).get(petId)])
      if (item?.quantity !== quantity || item.status !== written?.status || pet?.status !== written.status) violations++
    }
  }))
  t.equal((await petsRepository(a!).get(3))?.status, 'available', 'pet 3 is past its order')
  t.equal(violations, 0, 'no read older than a write acknowledged before it')
  t.equal(await a!.inventory.listJson(), JSON.stringify(await inventoryRepository(a!, EVENT_SCOPES).list()), 'the final list is the database\'s')
})

t.test('thousands of random writes on two instances and plain SQL: the cached lists are a full rebuild, byte for byte', async (t) => {
  const { schema, stores: [a, b] } = await stores(t, 2)
  const psql = new pg.Pool({ ...sessionConfig(schema), max: 4 })
  t.teardown(() => psql.end())
  // Odd ids leave room for entries inserted between others (chunks split); 1,200 entries make
  // several chunks.
  await a!.importCatalogue({
    pets: Array.from({ length: 1200 }, (_, i) => ({ id: 2 * i + 1, name: `Pet ${2 * i + 1}`, photoUrls: [] })),
    inventory: Array.from({ length: 1200 }, (_, i) => ({ petId: 2 * i + 1, quantity: i % 7 }))
  })
  await Promise.all([a!.syncChanges(), b!.syncChanges()])

  const random = seededRandom(15)
  let nextOrder = 1
  const openOrders: number[] = []
  const writes: (() => Promise<unknown>)[] = [
    () => a!.inventory.update(random(2400) + 1, random(5)),
    () => b!.inventory.update(random(2400) + 1, random(5)),
    () => psql.query('UPDATE inventory SET quantity = $1 WHERE pet_id = $2', [random(5), random(2400) + 1]),
    () => {
      const petId = 2 * random(1200) + 1
      const id = nextOrder++
      openOrders.push(id)
      return (random(2) === 0 ? a! : b!).importCatalogue({ orders: [order(id, petId, random(4) + 1, random(2) === 0 ? 'placed' : 'approved')] })
    },
    () => psql.query("UPDATE orders SET status = 'delivered' WHERE id = $1", [openOrders[random(openOrders.length)] ?? 0]),
    () => psql.query('DELETE FROM orders WHERE id = $1', [openOrders[random(openOrders.length)] ?? 0]),
    () => {
      const id = 2 * random(1200) + 2
      const pets: Catalogue['pets'] = [{ id, name: `Even ${id}`, photoUrls: [] }]
      return (random(2) === 0 ? a! : b!).importCatalogue({ pets, inventory: [{ petId: id, quantity: random(3) }] })
    },
    () => psql.query('DELETE FROM pets WHERE id = $1 AND id % 2 = 0', [2 * random(1200) + 2]),
    () => psql.query('UPDATE inventory SET quantity = quantity + 1 WHERE pet_id BETWEEN $1 AND $1 + 40', [random(2400)])
  ]
  const reads: (() => Promise<unknown>)[] = [
    () => a!.inventory.listJson(),
    () => b!.inventory.listJson(),
    () => allOrders(a!),
    () => petsRepository(a!).get(random(2400) + 1)
  ]

  const compare = async (label: string) => {
    await Promise.all([a!.syncChanges(), b!.syncChanges()])
    const rebuilt = JSON.stringify(await inventoryRepository(a!, EVENT_SCOPES).list())
    const orders = JSON.stringify((await psql.query<OrderRow>(`SELECT ${orderColumns} FROM orders ORDER BY id`)).rows.map(toOrder))
    // Cached pets agree with the rebuilt list: here every pet has an entry, and an entry a pet.
    const statuses = new Map((JSON.parse(rebuilt) as { petId: number, status: string }[]).map((i) => [i.petId, i.status]))
    const ids = Array.from({ length: 20 }, () => random(2400) + 1)
    const pets = await Promise.all(ids.map(async (id) => (await petsRepository(a!).get(id))?.status === statuses.get(id)))
    return {
      inventory: (await a!.inventory.listJson()) === rebuilt && (await b!.inventory.listJson()) === rebuilt,
      orders: JSON.stringify(await allOrders(a!)) === orders && JSON.stringify(await allOrders(b!)) === orders,
      pets: pets.every(Boolean),
      label
    }
  }

  const mismatches: unknown[] = []
  let operations = 0
  for (let round = 0; round < 30; round++) {
    // 100 operations per round, 10 at a time, reads among the writes.
    for (let batch = 0; batch < 10; batch++) {
      await Promise.all(Array.from({ length: 10 }, () => {
        operations++
        const pick = random(10)
        return pick < 7 ? writes[random(writes.length)]!() : reads[random(reads.length)]!()
      }))
    }
    const result = await compare(`round ${round}`)
    if (!result.inventory || !result.orders || !result.pets) mismatches.push(result)
  }
  t.equal(operations, 3000)
  t.same(mismatches, [], 'after every round, both instances\' lists equal a full rebuild')
  const final = await listOf(a!)
  t.ok(final.length > 1200 && final.some((i) => i.petId % 2 === 0), `entries were inserted between others (${final.length} entries)`)
  t.ok(final.some((i) => i.status === 'pending'), 'orders made some pets pending')
})

t.test('a bulk write too large to name its ids announces "everything changed"', async (t) => {
  const { schema, stores: [a, b] } = await stores(t, 2)
  const psql = await sqlSession(t, schema)
  await addSyntheticPets(a!, 10)
  await Promise.all([a!.syncChanges(), b!.syncChanges()])
  await a!.inventory.listJson()
  const payloads: string[] = []
  await psql.query(`LISTEN "petstore ${schema.schema}"`)
  psql.on('notification', (message) => payloads.push(message.payload ?? ''))
  await addSyntheticPets(b!, 3000)
  await a!.syncChanges()
  t.equal((await listOf(a!)).length, 3010, 'the other instance has every entry')
  await psql.query('SELECT 1')
  t.ok(payloads.includes('pet *'), 'announced as every pet')
  t.ok(payloads.every((p) => Buffer.byteLength(p) < 8000), 'no payload over the limit')
})

t.test('a PATCH is announced once, by the writer after its commit; other writes by their triggers', async (t) => {
  const { schema, stores: [a] } = await stores(t, 1)
  const psql = await sqlSession(t, schema)
  await addSyntheticPets(a!, 3)
  const payloads: string[] = []
  psql.on('notification', (message) => payloads.push(message.payload ?? ''))
  await psql.query(`LISTEN "petstore ${schema.schema}"`)
  await a!.inventory.update(2, 9)
  await a!.inventory.update(7, 9)
  await apiKeysRepository(a!).create({ id: 'key_n', name: 'n', plan: 'free', keyHash: 'hash-n', perMinute: null, perDay: null, scopes: ALL_SCOPES })
  await psql.query('SET petstore.announce = off')
  await psql.query('UPDATE inventory SET quantity = 1')
  await psql.query('RESET petstore.announce')
  await psql.query('UPDATE inventory SET quantity = 2 WHERE pet_id = 3')
  await psql.query('SELECT 1')
  t.same(payloads, ['pet 2', 'pet 7', 'key hash-n', 'pet 3'],
    'one notification per PATCH (also of an unknown pet), none from a session that turned announcing off')
})

t.test('PATCHes of one event-loop turn share one statement and one announcement; each gets its own row', async (t) => {
  const { schema, stores: [a] } = await stores(t, 1)
  const psql = await sqlSession(t, schema)
  await addSyntheticPets(a!, 3)
  await a!.importCatalogue({ orders: [order(1, 2, 2, 'placed')] })
  const payloads: string[] = []
  psql.on('notification', (message) => payloads.push(message.payload ?? ''))
  await psql.query(`LISTEN "petstore ${schema.schema}"`)
  t.same(await Promise.all([a!.inventory.update(1, 10), a!.inventory.update(2, 2), a!.inventory.update(3, 0), a!.inventory.update(42, 1)]), [
    { petId: 1, quantity: 10, status: 'available' },
    { petId: 2, quantity: 2, status: 'pending' },
    { petId: 3, quantity: 0, status: 'sold' },
    undefined
  ], 'each caller gets its own entry (none for a pet without one)')
  await psql.query('SELECT 1')
  t.same(payloads, ['pet 1,2,3,42'], 'one announcement')

  const outcomes = await Promise.allSettled([a!.inventory.update(1, 11), a!.inventory.update(2, -1), a!.inventory.update(1, 12), a!.inventory.update(3, 13)])
  t.same(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'], 'a write the schema refuses fails alone')
  t.same(outcomes.map((o) => o.status === 'fulfilled' ? o.value?.quantity : undefined), [11, undefined, 12, 13], 'a second write of a pet in the same turn gets its own row')
  const list = await inventoryRepository(a!, EVENT_SCOPES).list()
  t.ok([11, 12].includes(list[0]!.quantity), `pet 1 holds one of its two writes (${list[0]!.quantity}): they were concurrent`)
  t.same(list.slice(1).map((i) => i.quantity), [2, 13], 'pet 2 unchanged, pet 3 written')
  t.equal(await a!.inventory.listJson(), JSON.stringify(list), 'the cached list agrees')
})

t.test('a lost listening connection: caches dropped, reads from the database until listening again, then caches resume', async (t) => {
  const { schema, stores: [a, b] } = await stores(t, 2)
  const psql = await sqlSession(t, schema)
  await addSyntheticPets(a!, 3)
  await a!.syncChanges()
  await a!.inventory.listJson()

  // Without its channel function the listener cannot come back until the function is restored;
  // meanwhile every write bypasses the triggers (which need the function), so none is announced.
  await psql.query('SET session_replication_role = replica')
  await psql.query('ALTER FUNCTION petstore_channel(text) RENAME TO petstore_channel_away')
  const killed = await psql.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [`petstore-listener ${schema.schema}`])
  t.equal(killed.rowCount, 1, 'one listening connection, ended by the server')
  t.ok(await eventually(() => !a!.listening), 'the instance knows it no longer listens')

  await psql.query('UPDATE inventory SET quantity = 30 WHERE pet_id = 1')
  t.equal((await listOf(a!))[0]!.quantity, 30, 'an unannounced write is read at once: nothing is cached')
  await psql.query('UPDATE inventory SET quantity = 0 WHERE pet_id = 2')
  t.equal((await petsRepository(a!).get(2))?.status, 'sold', 'pets too')
  await psql.query('UPDATE inventory SET quantity = 31 WHERE pet_id = 2')
  t.equal((await petsRepository(a!).get(2))?.status, 'available')

  await psql.query('ALTER FUNCTION petstore_channel_away(text) RENAME TO petstore_channel')
  t.ok(await eventually(() => a!.listening), 'listening again by itself')
  await psql.query('UPDATE inventory SET quantity = 32 WHERE pet_id = 3')
  t.same((await listOf(a!)).map((i) => i.quantity), [30, 31, 32], 'resynchronised: the list is read afresh')
  await psql.query('UPDATE inventory SET quantity = 33 WHERE pet_id = 3')
  t.equal((await listOf(a!))[2]!.quantity, 32, 'and cached again: an unannounced write is not seen')
  await b!.inventory.update(3, 34)
  await a!.syncChanges()
  t.equal((await listOf(a!))[2]!.quantity, 34, 'an announced one is')
})

t.test('a key revoked by another connection is refused once the notification has arrived', async (t) => {
  const { stores: [server, cli] } = await stores(t, 2)
  const record = await apiKeysRepository(cli!).create({ id: 'key_r', name: 'r', plan: 'free', keyHash: 'hash-r', perMinute: null, perDay: null, scopes: ALL_SCOPES })
  await server!.syncChanges()
  const first = apiKeysRepository(server!).findActive('hash-r')
  t.ok(first instanceof Promise, 'looked up: a promise')
  t.same(await first, record, 'looked up, then cached')
  const cached = apiKeysRepository(server!).findActive('hash-r')
  t.notOk(cached instanceof Promise, 'a cached key is answered in the same call, without a promise')
  t.same(cached, record)
  await apiKeysRepository(cli!).revoke('key_r')
  let refused = false
  const deadline = Date.now() + 5000
  while (!refused && Date.now() < deadline) {
    refused = await apiKeysRepository(server!).findActive('hash-r') === undefined
    if (!refused) await sleep(5)
  }
  t.ok(refused, 'refused by the other instance')
  await apiKeysRepository(server!).revoke('key_r')
  t.equal(await apiKeysRepository(server!).findActive('hash-r'), undefined, 'its own revocation: at once')
})
