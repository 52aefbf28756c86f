import type pg from 'pg'
import { applyMigrations, migrationsDirectory, readMigrations } from '../migrations.js'
import { toOrder, toPet, type OrderRow, type PetRow } from '../rows.js'
import type { ApiKeyRecord, InventoryItem, NewApiKey, Store } from '../types.js'
import { importCatalogue } from './import.js'
import { InventoryJson } from './inventory-json.js'
import { bulkTransaction, openPool, query, type PostgresStoreOptions } from './pool.js'
import { sql, type StatementName } from './statements.js'

/** First key of the advisory lock that serialises migrations; the second is the schema's name. */
const MIGRATION_LOCK = 0x7065_7473 // 'pets'

/**
 * PostgreSQL through a pg Pool. Every request-path operation is one statement in autocommit, so
 * a 2xx means the write is committed. Getting a connection and running a statement are bounded
 * by `timeoutMs`; a lost or unreachable server becomes StoreUnavailableError (503), and the pool
 * opens fresh connections by itself once the server answers again.
 */
export function createPostgresStore (connectionString: string, options: PostgresStoreOptions = {}): Store {
  const pool = openPool(connectionString, options)
  let closed = false

  /** A statement of `sql`, in autocommit, prepared once per connection under its name. */
  const run = <R extends pg.QueryResultRow>(name: StatementName, values?: unknown[]) => query<R>(pool, sql[name], values, name)
  const first = async <R extends pg.QueryResultRow>(name: StatementName, values?: unknown[]) => (await run<R>(name, values))[0]

  const inventoryJson = new InventoryJson({
    snapshot: async () => (await first<{ snapshot: string }>('currentSnapshot'))!.snapshot,
    read: async () => (await first<{ snapshot: string, json: string }>('listInventoryJson'))!
  })

  return {
    engine: 'postgres',

    migrate: async () => {
      const migrations = await readMigrations(migrationsDirectory('postgres'))
      await bulkTransaction(pool, async (bulk) => {
        // Several instances may start at once: the first takes the lock and migrates, the others
        // wait for it and then find nothing left to do. The lock is per schema and ends with the
        // transaction.
        await bulk('SELECT pg_advisory_xact_lock($1, hashtext(COALESCE(current_schema(), \'\')))', [MIGRATION_LOCK])
        await applyMigrations({
          exec: async (script) => { await bulk(script) },
          query: async <R>(text: string, params?: unknown[]) => (await bulk(text, params)).rows as R[]
        }, migrations)
      })
    },

    ping: async () => { await query(pool, 'SELECT 1') },

    close: async () => {
      if (closed) return
      closed = true
      await pool.end()
    },

    countPets: async () => (await first<{ n: number }>('countPets'))!.n,

    highestPetId: async () => (await first<{ id: number }>('highestPetId'))!.id,

    listInventory: () => run<InventoryItem>('listInventory'),

    listInventoryJson: () => inventoryJson.get(),

    updateInventory: (petId, quantity) => first<InventoryItem>('updateInventory', [quantity, petId]),

    getPet: async (petId) => {
      const row = await first<PetRow>('getPet', [petId])
      return row && toPet(row)
    },

    listOrders: async () => (await run<OrderRow>('listOrders')).map(toOrder),

    listOrdersJson: async () => JSON.stringify((await run<OrderRow>('listOrders')).map(toOrder)),

    importCatalogue: (catalogue) => bulkTransaction(pool, (bulk) => importCatalogue(bulk, catalogue)),

    createApiKey: async (key: NewApiKey) =>
      (await first<ApiKeyRecord>('insertKey', [key.id, key.name, key.plan, key.keyHash, key.perMinute, key.perDay, new Date().toISOString()]))!,

    listApiKeys: () => run<ApiKeyRecord>('listKeys'),

    revokeApiKey: (id) => first<ApiKeyRecord>('revokeKey', [new Date().toISOString(), id]),

    findActiveApiKey: (keyHash) => first<ApiKeyRecord>('activeKeyByHash', [keyHash]),

    countApiKeys: async () => (await first<{ n: number }>('countKeys'))!.n
  }
}
