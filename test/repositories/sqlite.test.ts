import { join } from 'node:path'
import t from 'tap'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import { tempDir } from '../helpers/app.js'
import { repositorySuite } from './repository-suite.js'

repositorySuite(t, async (t) => {
  const store = createSqliteStore(join(tempDir(t), 'store.db'))
  t.teardown(() => store.close())
  await store.migrate()
  return store
})
