import t from 'tap'
import { migrationsDirectory, readMigrations } from '../../src/store/migrations.js'
import { createPostgresStore } from '../../src/store/postgres/index.js'
import { adminQuery, createTestSchema } from '../helpers/postgres.js'
import { storeSuite } from './store-suite.js'
import { petsRepository } from '../../src/repositories/pets.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { EVENT_SCOPES } from '../helpers/contract.js'

// Each test gets its own schema with a random name in the shared `test` database, dropped after.
storeSuite(t, 'postgres', async (t) => {
  const { url } = await createTestSchema(t)
  const store = createPostgresStore(url(), { poolMax: 4 })
  t.teardown(() => store.close())
  await store.migrate()
  return store
})

t.test('PostgreSQL: concurrent first migrations of one schema apply each version once', async (t) => {
  const { url, schema } = await createTestSchema(t)
  const stores = Array.from({ length: 4 }, () => createPostgresStore(url(), { poolMax: 1 }))
  t.teardown(() => Promise.all(stores.map((s) => s.close())))
  await Promise.all(stores.map((s) => s.migrate()))
  const versions = await adminQuery<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`)
  const shipped = (await readMigrations(migrationsDirectory('postgres'))).map((m) => m.version)
  t.same(versions.map((v) => v.version), shipped, 'one row per version')
  await stores[0]!.importCatalogue({ pets: [{ id: 1, name: 'a', photoUrls: [] }] })
  t.equal(await petsRepository(stores[3]!).count(), 1, 'all four see the same tables')
})

t.test('PostgreSQL: BIGINT ids come back as exact JavaScript numbers', async (t) => {
  const { url } = await createTestSchema(t)
  const store = createPostgresStore(url(), { poolMax: 1 })
  t.teardown(() => store.close())
  await store.migrate()
  await store.importCatalogue({ pets: [{ id: 9007199254740991, name: 'max', photoUrls: [] }] })
  const [item] = await inventoryRepository(store, EVENT_SCOPES).list()
  t.equal(item!.petId, 9007199254740991)
  t.equal(typeof await petsRepository(store).count(), 'number', 'counts too')
})
