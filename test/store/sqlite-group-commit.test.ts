import { join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { statement, type Arg } from '../../src/store/query.js'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import { first } from '../../src/store/work.js'
import { tempDir } from '../helpers/app.js'

// Concurrent PATCHes on SQLite share one transaction (src/store/sqlite/group-commit.ts). What a client can
// observe must be what one-by-one commits would give: each answer is its own write, an answer comes
// only once the write is committed (another connection already sees it), and one failing write
// fails alone unless the transaction itself is lost.

async function storeWithWatcher (t: Test, pets = 3) {
  const file = join(tempDir(t), 'group.db')
  const store = createSqliteStore(file)
  await store.migrate()
  await store.importCatalogue({ pets: Array.from({ length: pets }, (_, i) => ({ id: i + 1, name: `Pet ${i + 1}`, photoUrls: [] })) })
  // Another connection to the same file: what any other process would see.
  const watcher = new Database(file)
  t.teardown(async () => { watcher.close(); await store.close() })
  const quantityOf = (petId: number) => (watcher.prepare('SELECT quantity FROM inventory WHERE pet_id = ?').pluck().get(petId) as number)
  return { store, watcher, quantityOf }
}

t.test('writes made in one turn are answered each with its own result, only after they are committed', async (t) => {
  const { store, quantityOf } = await storeWithWatcher(t, 50)
  const seenAtAnswer: number[] = []
  const writes = Array.from({ length: 50 }, (_, i) => store.inventory.update(i + 1, 100 + i).then((item) => {
    // Read through the other connection the moment this write is acknowledged.
    seenAtAnswer.push(quantityOf(i + 1))
    return item
  }))
  t.equal(quantityOf(1), 0, 'nothing is committed while the turn that made the calls is still running')
  const items = await Promise.all(writes)
  t.same(items, Array.from({ length: 50 }, (_, i) => ({ petId: i + 1, quantity: 100 + i, status: 'available' })), 'each caller gets its own entry')
  t.same(seenAtAnswer.sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => 100 + i), 'every acknowledged value was already visible to another connection')
})

t.test('writes to one entry in one turn apply in call order, as one-by-one commits would', async (t) => {
  const { store, quantityOf } = await storeWithWatcher(t)
  const items = await Promise.all([5, 0, 9].map((q) => store.inventory.update(1, q)))
  t.same(items.map((i) => [i?.quantity, i?.status]), [[5, 'available'], [0, 'sold'], [9, 'available']], 'each answer reflects its own write')
  t.equal(quantityOf(1), 9, 'the last call wins')
})

t.test('a write that breaks a constraint fails alone; the others in its turn commit', async (t) => {
  const { store, quantityOf } = await storeWithWatcher(t)
  const [a, bad, b, missing] = await Promise.allSettled([
    store.inventory.update(1, 4), store.inventory.update(2, -1), store.inventory.update(3, 6), store.inventory.update(99, 1)
  ])
  t.same(a, { status: 'fulfilled', value: { petId: 1, quantity: 4, status: 'available' } })
  t.equal(bad.status, 'rejected', 'the negative quantity is refused by the CHECK constraint')
  t.match((bad as PromiseRejectedResult).reason, { name: 'ConstraintViolation', code: 'out_of_range', cause: { code: /^SQLITE_CONSTRAINT/ } })
  t.same(b, { status: 'fulfilled', value: { petId: 3, quantity: 6, status: 'available' } })
  t.same(missing, { status: 'fulfilled', value: undefined }, 'an unknown pet is undefined, not an error')
  t.same([quantityOf(1), quantityOf(2), quantityOf(3)], [4, 0, 6])
})

t.test('a write whose failure ends the transaction fails alone: the others run again and commit', async (t) => {
  const { store, watcher, quantityOf } = await storeWithWatcher(t)
  // RAISE(ROLLBACK) undoes the whole transaction, the writes before it in the turn included:
  // none of them was answered yet, so they run again, in a transaction without the failing one.
  watcher.exec(`CREATE TRIGGER refuse_13 BEFORE UPDATE ON inventory WHEN NEW.quantity = 13
    BEGIN SELECT RAISE(ROLLBACK, 'thirteen is refused'); END`)
  const results = await Promise.allSettled([store.inventory.update(1, 4), store.inventory.update(2, 13), store.inventory.update(3, 6)])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled'])
  t.match((results[1] as PromiseRejectedResult).reason, { code: 'out_of_range', cause: { message: /thirteen is refused/ } })
  t.same([quantityOf(1), quantityOf(2), quantityOf(3)], [4, 0, 6], 'the two others are committed, each once')
  t.same(await store.inventory.update(1, 5), { petId: 1, quantity: 5, status: 'available' }, 'the next turn commits as usual')
})

t.test('close() commits the writes already accepted before it closes the file', async (t) => {
  const file = join(tempDir(t), 'close.db')
  const store = createSqliteStore(file)
  await store.migrate()
  await store.importCatalogue({ pets: [{ id: 1, name: 'Pet 1', photoUrls: [] }] })
  const pending = store.inventory.update(1, 42)
  await store.close()
  t.same(await pending, { petId: 1, quantity: 42, status: 'available' }, 'answered')
  const reopened = new Database(file, { readonly: true })
  t.teardown(() => reopened.close())
  t.equal(reopened.prepare('SELECT quantity FROM inventory WHERE pet_id = 1').pluck().get(), 42, 'and on disk')
  await t.rejects(store.inventory.update(1, 1), { name: 'StoreUnavailableError' }, 'a write after close is refused as unavailable')
})

t.test('a read stopped by a PATCH queued for what it reads runs again, whole, once the PATCH is committed', async (t) => {
  const { store } = await storeWithWatcher(t)
  const stock = statement('test.stock', (db, arg: Arg<{ petId: number }>) => db
    .selectFrom('inventory').select('quantity').where('pet_id', '=', arg('petId')))
  let runs = 0
  const patched = store.inventory.update(2, 8)
  // Queued in the same turn as the PATCH: its first step reads the inventory the PATCH changes.
  const read = store.read(function * () {
    runs++
    return (yield * first(stock, { petId: 2 }))?.quantity
  })
  t.same(await patched, { petId: 2, quantity: 8, status: 'available' })
  t.equal(await read, 8, 'the read sees the PATCH queued before it')
  t.equal(runs, 2, 'its work was started, stopped before its step, and run again from the start (safe: a read has no effects)')
})
