import { join } from 'node:path'
import t from 'tap'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import { tempDir } from '../helpers/app.js'
import { storeSuite } from './store-suite.js'

storeSuite(t, 'sqlite', async (t) => {
  const store = createSqliteStore(join(tempDir(t), 'store.db'))
  t.teardown(() => store.close())
  await store.migrate()
  return store
})
