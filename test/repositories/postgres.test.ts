import t from 'tap'
import { createPostgresStore } from '../../src/store/postgres/index.js'
import { createTestSchema } from '../helpers/postgres.js'
import { repositorySuite } from './repository-suite.js'

repositorySuite(t, async (t) => {
  const { url } = await createTestSchema(t)
  const store = createPostgresStore(url(), { poolMax: 4 })
  t.teardown(() => store.close())
  await store.migrate()
  return store
})
