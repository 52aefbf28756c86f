import { applyMigrations, migrationsDirectory, readMigrations } from '../migrations.js'
import { petColumns, toOrder, toPet, type OrderRow, type PetRow } from '../rows.js'
import type { ApiKeyRecord, Catalogue, ImportCounts, InventoryItem, NewApiKey, PetStatus, Store } from '../types.js'
import { ReadCaches } from './caches.js'
import { failureOf, migrationTransaction, openDatabase } from './database.js'
import { GroupCommit } from './group-commit.js'
import { prepareStatements, type Statements } from './statements.js'
import { noteCommit, TurnSnapshot } from './turn-snapshot.js'

/**
 * SQLite through better-sqlite3: synchronous, so every statement is atomic with respect to this
 * process; WAL lets the keys CLI and other readers work while the server runs.
 */
export function createSqliteStore (file: string): Store {
  const db = openDatabase(file)
  const failed = failureOf(db)

  // Reads share one transaction per event-loop turn (see TurnSnapshot); writes end it first.
  const snapshot = new TurnSnapshot(db)
  const caches = new ReadCaches(() => snapshot.changeCounter())

  // Prepared on first use, after migrate() has created the tables.
  let prepared: Statements | undefined
  const statements = () => (prepared ??= prepareStatements(db))

  const reading = <T>(work: () => T): Promise<T> => {
    try {
      return Promise.resolve(snapshot.read(work))
    } catch (error) {
      return Promise.reject(failed(error))
    }
  }

  /** Runs a write, then counts it for the caches (also when it fails). */
  const writing = <T>(what: 'inventory' | 'keys' | 'all', work: () => T): Promise<T> => {
    try {
      snapshot.end()
      return Promise.resolve(work())
    } catch (error) {
      return Promise.reject(failed(error))
    } finally {
      caches.wrote(what)
      noteCommit()
    }
  }

  // Concurrent PATCHes share one commit; each is answered after it (see GroupCommit).
  const inventoryUpdates = new GroupCommit({
    db,
    apply: ({ petId, quantity }: { petId: number, quantity: number }): InventoryItem | undefined => {
      const row = statements().updateInventory.get(quantity, petId) as [number, number, PetStatus] | undefined
      return row && { petId: row[0], quantity: row[1], status: row[2] }
    },
    failure: failed,
    beforeBatch: () => { snapshot.end() },
    afterBatch: () => { caches.wrote('inventory'); noteCommit() }
  })

  return {
    engine: 'sqlite',

    migrate: async () => {
      const migrations = await readMigrations(migrationsDirectory('sqlite'))
      try {
        snapshot.end()
        await migrationTransaction(db, (session) => applyMigrations(session, migrations))
      } catch (error) {
        throw failed(error)
      } finally {
        caches.wrote('all')
        noteCommit()
      }
    },

    ping: () => reading(() => { db.prepare('SELECT 1').get() }),

    close: async () => {
      inventoryUpdates.flush()
      snapshot.end()
      if (db.open) db.close()
    },

    countPets: () => reading(() => statements().countPets.get() as number),

    highestPetId: () => reading(() => statements().highestPetId.get() as number),

    listInventory: () => reading(() => statements().listInventory.all() as InventoryItem[]),

    listInventoryJson: () => reading(() => caches.inventoryJson(() => statements().listInventoryJson.get() as string)),

    updateInventory: (petId, quantity) => inventoryUpdates.run({ petId, quantity }),

    getPet: (petId) => reading(() => caches.pet(petId, () => {
      const row = statements().getPet.get(petId) as PetRow | undefined
      return row && toPet(row)
    })),

    listOrders: () => reading(() => (statements().listOrders.all() as OrderRow[]).map(toOrder)),

    importCatalogue: (catalogue: Catalogue) => writing('inventory', () => db.transaction((): ImportCounts => {
      const st = statements()
      // A pet without an inventory entry gets one at 0; the pets the catalogue gives stock for
      // get theirs from the upserts that follow.
      const stocked = new Set(catalogue.inventory?.map((item) => item.petId))
      for (const pet of catalogue.pets ?? []) {
        st.upsertPet.run(petColumns(pet))
        if (!stocked.has(pet.id)) st.ensureInventory.run(pet.id)
      }
      for (const item of catalogue.inventory ?? []) st.upsertInventory.run(item.petId, item.quantity)
      for (const order of catalogue.orders ?? []) st.upsertOrder.run({ ...order, complete: order.complete ? 1 : 0 })
      return { pets: catalogue.pets?.length ?? 0, inventory: catalogue.inventory?.length ?? 0, orders: catalogue.orders?.length ?? 0 }
    }).immediate()),

    createApiKey: (key: NewApiKey) => writing('keys', () => {
      statements().insertKey.run({ ...key, createdAt: new Date().toISOString() })
      return statements().keyById.get(key.id) as ApiKeyRecord
    }),

    listApiKeys: () => reading(() => statements().listKeys.all() as ApiKeyRecord[]),

    revokeApiKey: (id) => writing('keys', () => {
      statements().revokeKey.run(new Date().toISOString(), id)
      return statements().keyById.get(id) as ApiKeyRecord | undefined
    }),

    findActiveApiKey: (keyHash) => reading(() => caches.activeKey(keyHash, () => statements().activeKeyByHash.get(keyHash) as ApiKeyRecord | undefined)),

    countApiKeys: () => reading(() => statements().countKeys.get() as number)
  }
}
