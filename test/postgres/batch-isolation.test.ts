import pg from 'pg'
import t from 'tap'
import { createPostgresStore } from '../../src/store/postgres/index.js'
import { createTestSchema, POSTGRES } from '../helpers/postgres.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { EVENT_SCOPES } from '../helpers/contract.js'

// The PATCHes of one turn share one statement on PostgreSQL (src/store/postgres/inventory-writes.ts).
// One of them meeting a row another transaction holds must not hold up, or fail, the others: each
// waits only for its own row, and within its own time limit.

t.test('a PATCH whose row is locked elsewhere waits alone; the others of its batch are answered at once', async (t) => {
  const { schema, url } = await createTestSchema(t)
  const store = createPostgresStore(url(), { poolMax: 4, timeoutMs: 800 })
  t.teardown(() => store.close())
  await store.migrate()
  await store.importCatalogue({ pets: [1, 2, 3, 4, 5].map((id) => ({ id, name: `Pet ${id}`, photoUrls: [] })) })

  // Another writer (an order being placed on another instance, say) holds pet 1's row.
  const holder = new pg.Client({ ...POSTGRES, options: `-c search_path=${schema}` })
  await holder.connect()
  t.teardown(() => holder.end())
  await holder.query('BEGIN')
  await holder.query('SELECT 1 FROM inventory WHERE pet_id = 1 FOR UPDATE')

  const started = performance.now()
  const answeredAt = new Map<number, number>()
  const writes = [1, 2, 3, 4, 5].map((petId) => store.inventory.update(petId, 10 + petId).then(
    (item) => { answeredAt.set(petId, performance.now() - started); return item },
    (error: unknown) => { answeredAt.set(petId, performance.now() - started); throw error }))
  const results = await Promise.allSettled(writes)
  await holder.query('ROLLBACK')

  for (const petId of [2, 3, 4, 5]) {
    const result = results[petId - 1]!
    t.same(result.status === 'fulfilled' ? result.value : String((result as PromiseRejectedResult).reason),
      { petId, quantity: 10 + petId, status: 'available' }, `pet ${petId} is written`)
    t.ok(answeredAt.get(petId)! < answeredAt.get(1)!, `pet ${petId} is answered before pet 1's wait ends (${Math.round(answeredAt.get(petId)!)} ms, pet 1 at ${Math.round(answeredAt.get(1)!)} ms)`)
  }
  t.equal(results[0]!.status, 'rejected', 'pet 1 waited for its row past the time limit')
  t.match((results[0] as PromiseRejectedResult).reason, { name: 'StoreUnavailableError' }, '…and is answered 503')
  const stock = new Map((await inventoryRepository(store, EVENT_SCOPES).list()).map((item) => [item.petId, item.quantity]))
  t.same([1, 2, 3, 4, 5].map((petId) => stock.get(petId)), [0, 12, 13, 14, 15], 'exactly the acknowledged writes are stored')
})

t.test('a PATCH of a pet without an inventory entry is undefined, batched or not', async (t) => {
  const { url } = await createTestSchema(t)
  const store = createPostgresStore(url(), { poolMax: 2 })
  t.teardown(() => store.close())
  await store.migrate()
  await store.importCatalogue({ pets: [1, 2].map((id) => ({ id, name: `Pet ${id}`, photoUrls: [] })) })
  t.same(await Promise.all([store.inventory.update(1, 3), store.inventory.update(99, 3), store.inventory.update(2, 4)]),
    [{ petId: 1, quantity: 3, status: 'available' }, undefined, { petId: 2, quantity: 4, status: 'available' }])
  t.equal(await store.inventory.update(98, 1), undefined)
})
