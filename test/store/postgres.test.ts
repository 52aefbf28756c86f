import t from 'tap'
import { createPostgresStore } from '../../src/store/postgres/index.js'
import { adminQuery, createTestSchema } from '../helpers/postgres.js'
import { storeSuite } from './store-suite.js'

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
  t.same(versions.map((v) => v.version), [1, 2, 4], 'one row per version')
  await stores[0]!.importCatalogue({ pets: [{ id: 1, name: 'a', photoUrls: [] }] })
  t.equal(await stores[3]!.countPets(), 1, 'all four see the same tables')
})

t.test('PostgreSQL: BIGINT ids come back as exact JavaScript numbers', async (t) => {
  const { url } = await createTestSchema(t)
  const store = createPostgresStore(url(), { poolMax: 1 })
  t.teardown(() => store.close())
  await store.migrate()
  await store.importCatalogue({ pets: [{ id: 9007199254740991, name: 'max', photoUrls: [] }] })
  const [item] = await store.listInventory()
  t.equal(item!.petId, 9007199254740991)
  t.equal(typeof await store.countPets(), 'number', 'counts too')
})
