import { resolve } from 'node:path'
import { createPostgresStore } from './postgres/index.js'
import { createSqliteStore } from './sqlite/index.js'
import type { Store } from './types.js'

export interface StoreOptions {
  /** PostgreSQL only: most connections in the pool (DATABASE_POOL_MAX). */
  poolMax?: number
  /**
   * DATABASE_TIMEOUT_MS. PostgreSQL: bound on connecting and on each statement, in ms. SQLite: how
   * long a write (or the migrations) may wait for another process's write lock before failing as
   * unavailable (503).
   */
  timeoutMs?: number
}

/** The one place that picks the storage engine from DATABASE_URL. */
export async function createStore (databaseUrl: string, options: StoreOptions = {}): Promise<Store> {
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length)
    return createSqliteStore(file === ':memory:' ? file : resolve(file), options)
  }
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    return createPostgresStore(databaseUrl, options)
  }
  throw new Error(`DATABASE_URL must start with sqlite: or postgres://, got ${databaseUrl}`)
}
