import { join } from 'node:path'
import t, { type Test } from 'tap'
import { CatalogueError } from '../../src/store/catalogue.js'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import { addSyntheticPets, SYNTHETIC_BATCH_SIZE } from '../../src/store/synthetic.js'
import type { Store } from '../../src/store/types.js'
import { tempDir } from '../helpers/app.js'
import { petsRepository } from '../../src/repositories/pets.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { EVENT_SCOPES } from '../helpers/contract.js'

// What every engine does with synthetic pets is in store-suite.ts; these are the parts that do not
// depend on the engine: batching, partial failure, bad counts.

async function sqliteStore (t: Test): Promise<Store> {
  const store = createSqliteStore(join(tempDir(t), 'synthetic.db'))
  t.teardown(() => store.close())
  await store.migrate()
  return store
}

t.test('more pets than one batch: ids continue across batches without gaps or repeats', async (t) => {
  const store = await sqliteStore(t)
  const count = 2 * SYNTHETIC_BATCH_SIZE + 1
  await addSyntheticPets(store, count)
  t.equal(await petsRepository(store).count(), count)
  t.equal(await petsRepository(store).highestId(), count, 'ids 1 to N')
  const items = await inventoryRepository(store, EVENT_SCOPES).list()
  t.equal(items.length, count, 'one inventory entry each')
  t.ok(items.every((item, i) => item.petId === i + 1 && item.quantity === item.petId % 50), 'in order, quantity id % 50')
  t.strictSame(await petsRepository(store).get(SYNTHETIC_BATCH_SIZE + 1), { id: SYNTHETIC_BATCH_SIZE + 1, name: `Pet ${SYNTHETIC_BATCH_SIZE + 1}`, photoUrls: [], status: 'available' }, 'the first pet of the second batch')
})

t.test('a batch that fails after others committed: the error says how many were added', async (t) => {
  const store = await sqliteStore(t)
  let imports = 0
  const failing: Store = {
    ...store,
    importCatalogue: async (catalogue) => {
      if (++imports === 2) throw new Error('disk full')
      return store.importCatalogue(catalogue)
    }
  }
  await t.rejects(addSyntheticPets(failing, SYNTHETIC_BATCH_SIZE + 5),
    { message: `added ${SYNTHETIC_BATCH_SIZE} of ${SYNTHETIC_BATCH_SIZE + 5} synthetic pets (ids 1 to ${SYNTHETIC_BATCH_SIZE}), then: disk full` })
  t.equal(await petsRepository(store).count(), SYNTHETIC_BATCH_SIZE, 'the first batch stays')

  imports = 1
  await t.rejects(addSyntheticPets(failing, 3), { message: 'disk full' }, 'a failing first batch: the error as it is, nothing added')
  t.equal(await petsRepository(store).count(), SYNTHETIC_BATCH_SIZE)
})

t.test('counts: 0 adds nothing; a negative or fractional count is refused', async (t) => {
  const store = await sqliteStore(t)
  await addSyntheticPets(store, 0)
  t.equal(await petsRepository(store).count(), 0)
  for (const count of [-1, 1.5, Number.NaN]) {
    await t.rejects(addSyntheticPets(store, count), CatalogueError, `${count}`)
  }
  t.equal(await petsRepository(store).count(), 0)
})
