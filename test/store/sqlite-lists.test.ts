import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { listText, type JsonListVersion } from '../../src/contract/json-list.js'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import { addSyntheticPets } from '../../src/store/synthetic.js'
import type { ListJson, Order, Store } from '../../src/store/types.js'
import { tempDir } from '../helpers/app.js'
import { seededRandom } from '../helpers/random.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { EVENT_SCOPES } from '../helpers/contract.js'

// The SQLite store keeps the inventory and order lists in memory and, after a write, re-reads only
// the entries the change log (migration 002) names. Whatever the writes, and whoever makes them,
// the list must be byte for byte what a full rebuild gives.

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

const statuses: Order['status'][] = ['placed', 'approved', 'delivered']
const version = (json: ListJson) => json as JsonListVersion

/** What a store that has never built the lists gives: a full rebuild. */
async function rebuilt (file: string) {
  const fresh = createSqliteStore(file)
  try {
    return { inventory: listText(await fresh.inventory.listJson()) }
  } finally {
    await fresh.close()
  }
}

t.test('after thousands of random writes by this store, another store and plain SQL, the lists equal a full rebuild', async (t) => {
  const file = join(tempDir(t), 'lists.db')
  const store = createSqliteStore(file)
  const other = createSqliteStore(file)
  const raw = new Database(file)
  t.teardown(async () => { raw.close(); await other.close(); await store.close() })
  await store.migrate()
  await addSyntheticPets(store, 400)
  let highestPet = 400
  const next = seededRandom(42)
  const order = (id: number): Order => ({
    id, petId: 1 + next(highestPet), quantity: 1 + next(40), shipDate: '2026-12-01T10:00:00.000Z', status: statuses[next(3)]!, complete: next(2) === 0
  })
  await store.importCatalogue({ orders: Array.from({ length: 100 }, (_, i) => order(i + 1)) })

  const mismatches: string[] = []
  const check = async (step: number, what: string) => {
    const inventory = listText(await store.inventory.listJson())
    if (inventory !== JSON.stringify(await inventoryRepository(store, EVENT_SCOPES).list())) mismatches.push(`step ${step} (${what}): inventory`)
  }

  let incremental = 0
  let patchSteps = 0
  let writes = 0
  for (let step = 1; step <= 2500; step++) {
    const before = version(await store.inventory.listJson())
    const dice = next(100)
    let what: string
    if (dice < 60) {
      // PATCHes through this store, several in one turn (one group commit).
      what = 'patch'
      const count = 1 + next(4)
      await Promise.all(Array.from({ length: count }, () => store.inventory.update(1 + next(highestPet), next(45))))
      writes += count
      const after = version(await store.inventory.listJson())
      const changed = after.changedSince(before.version)
      patchSteps++
      if (changed !== undefined && changed.length <= count) incremental++
    } else if (dice < 72) {
      what = 'orders imported'
      await store.importCatalogue({ orders: Array.from({ length: 1 + next(3) }, () => order(1 + next(150))) })
      writes++
    } else if (dice < 76) {
      what = 'pets imported'
      const id = ++highestPet
      await store.importCatalogue({ pets: [{ id, name: `New ${id}`, photoUrls: [] }], ...(next(2) === 0 ? { inventory: [{ petId: id, quantity: next(9) }] } : {}) })
      writes++
    } else if (dice < 88) {
      what = 'patch by another store'
      await other.inventory.update(1 + next(highestPet), next(45))
      writes++
    } else if (dice < 96) {
      what = 'orders changed by plain SQL'
      const id = 1 + next(150)
      if (next(2) === 0) raw.prepare('DELETE FROM orders WHERE id = ?').run(id)
      else raw.prepare('UPDATE orders SET status = ?, pet_id = ? WHERE id = ?').run(statuses[next(3)], 1 + next(highestPet), id)
      writes++
      await nextTurn()
    } else {
      what = 'entry removed by plain SQL'
      raw.prepare('DELETE FROM inventory WHERE pet_id = ?').run(1 + next(highestPet))
      writes++
      await nextTurn()
    }
    await check(step, what)
    if (step % 500 === 0) {
      const full = await rebuilt(file)
      if (full.inventory !== listText(await store.inventory.listJson())) mismatches.push(`step ${step}: inventory differs from a full rebuild`)
    }
  }
  t.same(mismatches, [], `${writes} writes: every list byte for byte the full list`)
  t.equal(incremental, patchSteps, 'after every PATCH the list changed by the patched entries alone, not rebuilt')
  t.ok(JSON.parse(listText(await store.inventory.listJson())).some((i: { status: string }) => i.status === 'pending'), 'orders made some entries pending')
})

t.test('a list behind rows another instance pruned from the log, or far behind, is rebuilt and correct', async (t) => {
  const file = join(tempDir(t), 'pruned.db')
  const store = createSqliteStore(file)
  const other = createSqliteStore(file)
  const raw = new Database(file)
  t.teardown(async () => { raw.close(); await other.close(); await store.close() })
  await store.migrate()
  await addSyntheticPets(store, 50)
  const first = version(await store.inventory.listJson())

  await other.inventory.update(7, 1234)
  await other.inventory.update(8, 4321)
  // Pet 7's row goes; pet 8's, the newest, stays.
  raw.exec('DELETE FROM list_changes WHERE seq < (SELECT MAX(seq) FROM list_changes)')
  const afterPrune = version(await store.inventory.listJson())
  t.equal(listText(afterPrune), JSON.stringify(await inventoryRepository(store, EVENT_SCOPES).list()), 'pet 7 is there although its log row is gone')
  t.equal(afterPrune.changedSince(first.version), undefined, 'rebuilt, so every element is checked again')
  t.match(JSON.parse(listText(afterPrune))[6], { petId: 7, quantity: 1234 })

  await addSyntheticPets(other, 3000)
  const far = listText(await store.inventory.listJson())
  t.equal(far, JSON.stringify(await inventoryRepository(store, EVENT_SCOPES).list()), '3,000 pets added elsewhere (a rebuild, not 3,000 reads)')
  t.equal(far, (await rebuilt(file)).inventory)
})

t.test('the log keeps its newest rows and is pruned as the store writes', async (t) => {
  const file = join(tempDir(t), 'log.db')
  const store = createSqliteStore(file)
  t.teardown(() => store.close())
  await store.migrate()
  await addSyntheticPets(store, 60_000)
  const raw = new Database(file, { readonly: true })
  t.teardown(() => raw.close())
  const rows = () => raw.prepare('SELECT COUNT(*) FROM list_changes').pluck().get() as number
  const start = rows()
  t.ok(start > 50_000 && start < 60_000, `the import logged every entry, and its batches deleted the oldest rows beyond 50,000 (${start} rows)`)
  for (let i = 0; i < 5; i++) await store.inventory.update(1, i)
  const after = rows()
  t.ok(after < start && after >= 50_000, `each write deletes some of the oldest rows (${after} left)`)
  t.equal(raw.prepare('SELECT pet_id FROM list_changes ORDER BY seq DESC LIMIT 1').pluck().get(), 1, 'the newest is kept')
})

t.test('orders: an order moved to another pet changes both statuses', async (t) => {
  const file = join(tempDir(t), 'orders.db')
  const store: Store = createSqliteStore(file)
  t.teardown(() => store.close())
  await store.migrate()
  await store.importCatalogue({
    pets: [1, 2].map((id) => ({ id, name: `Pet ${id}`, photoUrls: [] })),
    inventory: [{ petId: 1, quantity: 2 }, { petId: 2, quantity: 2 }],
    orders: [{ id: Number.MAX_SAFE_INTEGER, petId: 1, quantity: 2, shipDate: '2026-12-01T10:00:00.000Z', status: 'approved', complete: true }]
  })
  t.same(JSON.parse(listText(await store.inventory.listJson())).map((i: { status: string }) => i.status), ['pending', 'available'])
  await store.importCatalogue({ orders: [{ id: Number.MAX_SAFE_INTEGER, petId: 2, quantity: 2, shipDate: '2026-12-01T10:00:00.000Z', status: 'placed', complete: false }] })
  t.same(JSON.parse(listText(await store.inventory.listJson())).map((i: { status: string }) => i.status), ['available', 'pending'], 'the order moved from pet 1 to pet 2')
})
