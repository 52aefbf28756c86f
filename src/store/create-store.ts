import { resolve } from 'node:path'
import { createSqliteStore } from './sqlite-store.js'
import type { Store } from './types.js'

/** The one place that picks the storage engine from DATABASE_URL. */
export async function createStore (databaseUrl: string): Promise<Store> {
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length)
    return createSqliteStore(file === ':memory:' ? file : resolve(file))
  }
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new Error('PostgreSQL storage is not available yet (DATABASE_URL=postgres://…)')
  }
  throw new Error(`DATABASE_URL must start with sqlite: or postgres://, got ${databaseUrl}`)
}
