import { join } from 'node:path'
import t, { type Test } from 'tap'
import { createPostgresStore } from '../../src/store/postgres/index.js'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import { listText } from '../../src/contract/json-list.js'
import type { Catalogue, Store } from '../../src/store/types.js'
import { addSyntheticPets } from '../../src/store/synthetic.js'
import { tempDir } from '../helpers/app.js'
import { createTestSchema } from '../helpers/postgres.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { allOrders } from '../../src/repositories/orders.js'
import { EVENT_SCOPES } from '../helpers/contract.js'

const MAX_ID = Number.MAX_SAFE_INTEGER
const catalogue: Catalogue = {
  pets: [MAX_ID, 30, 2, 17, 5, 1].map((id) => ({ id, name: `Pet ${id}`, photoUrls: [] })),
  inventory: [
    { petId: MAX_ID, quantity: 1 },
    { petId: 30, quantity: 3 },
    { petId: 2, quantity: 0 },
    { petId: 17, quantity: 3 },
    { petId: 5, quantity: 0 },
    { petId: 1, quantity: 2147483647 }
  ],
  orders: [
    { id: 9, petId: 30, quantity: 3, shipDate: '2026-12-01T12:00:00.000Z', status: 'placed', complete: false },
    { id: 8, petId: 5, quantity: 2, shipDate: '2026-12-01T12:00:00.000Z', status: 'approved', complete: false },
    { id: 7, petId: 17, quantity: 9, shipDate: '2026-12-01T12:00:00.000Z', status: 'delivered', complete: true }
  ]
}

const engines: [string, (t: Test) => Promise<Store>][] = [
  ['sqlite', async (t) => createSqliteStore(join(tempDir(t), 'store.db'))],
  ['postgres', async (t) => createPostgresStore((await createTestSchema(t)).url(), { poolMax: 2 })]
]

for (const [engine, open] of engines) {
  t.test(`${engine}: listInventoryJson is the text of listInventory, byte for byte, and follows every write`, async (t) => {
    const store = await open(t)
    t.teardown(() => store.close())
    await store.migrate()
    t.equal(listText(await store.inventory.listJson()), '[]', 'an empty inventory is an empty array')

    const same = async (what: string) => t.equal(listText(await store.inventory.listJson()), JSON.stringify(await inventoryRepository(store, EVENT_SCOPES).list()), what)
    // Synthetic pets first: they are numbered after the highest id, and MAX_ID has no successor.
    await addSyntheticPets(store, 3)
    await same('after synthetic pets')
    await store.importCatalogue(catalogue)
    await same('every status, the largest id and quantity, ordered by petId')
    t.same(JSON.parse(listText(await store.inventory.listJson())).map((i: { petId: number }) => i.petId), [1, 2, 3, 5, 17, 30, MAX_ID])

    await store.inventory.update(30, 4)
    await same('after a PATCH (pet 30 is available again)')
    await store.importCatalogue({ orders: [{ id: 10, petId: 30, quantity: 1, shipDate: '2026-12-02T12:00:00.000Z', status: 'approved', complete: false }] })
    await same('after a new order (pet 30 pending again)')
    t.equal(JSON.parse(listText(await store.inventory.listJson())).length, 7, 'synthetic pets 1-3 and the catalogue, which overlaps them')
  })

  t.test(`${engine}: listOrders gives every order ordered by id, as imported, and follows every import`, async (t) => {
    const store = await open(t)
    t.teardown(() => store.close())
    await store.migrate()
    t.same(await allOrders(store), [], 'no orders: an empty array')
    await store.importCatalogue(catalogue)
    const imported = [...(catalogue.orders ?? [])].sort((a, b) => a.id - b.id)
    t.same(await allOrders(store), imported, 'ordered by id, every status, complete true and false')
    const changed = { id: 8, petId: 30, quantity: 1, shipDate: '2026-12-03T08:30:00.000Z', status: 'delivered' as const, complete: true }
    const largest = { id: MAX_ID, petId: 1, quantity: 2147483647, shipDate: '2026-12-04T00:00:00.000Z', status: 'placed' as const, complete: false }
    await store.importCatalogue({ orders: [changed, largest] })
    t.same(await allOrders(store), [...imported.filter((o) => o.id !== 8), changed].sort((a, b) => a.id - b.id).concat(largest), 'an order changed and the largest id added')
  })
}
