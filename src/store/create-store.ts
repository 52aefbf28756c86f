import { resolve } from 'node:path'
import { createPostgresStore } from './postgres/index.js'
import { createSqliteStore } from './sqlite/index.js'
import type { Store } from './types.js'

export interface StoreOptions {
  /** PostgreSQL only: most connections in the pool (DATABASE_POOL_MAX). */
  poolMax?: number
  /** PostgreSQL only: bound on connecting and on each statement, in ms (DATABASE_TIMEOUT_MS). */
  timeoutMs?: number
}

/** The one place that picks the storage engine from DATABASE_URL. */
export async function createStore (databaseUrl: string, options: StoreOptions = {}): Promise<Store> {
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length)
    return createSqliteStore(file === ':memory:' ? file : resolve(file))
  }
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    return createPostgresStore(databaseUrl, options)
  }
  throw new Error(`DATABASE_URL must start with sqlite: or postgres://, got ${databaseUrl}`)
}
