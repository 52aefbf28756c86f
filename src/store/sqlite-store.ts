import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { StoreUnavailableError } from '../errors.js'
import { statusExpression } from './sql.js'
import { syntheticIdRange } from './catalogue.js'
import { GroupCommit } from './group-commit.js'
import { StampedCache } from './stamped-cache.js'
import { noteCommit, TurnSnapshot } from './turn-snapshot.js'
import type { ApiKeyRecord, Catalogue, ImportCounts, InventoryItem, NewApiKey, Order, Pet, PetStatus, Store } from './types.js'

/** Schema versions, applied in order, each once. Never edit one that has shipped: add the next. */
const migrations: readonly string[] = [
  `CREATE TABLE pets (
     id INTEGER PRIMARY KEY,
     name TEXT NOT NULL,
     category_id INTEGER,
     category_name TEXT,
     photo_urls TEXT NOT NULL DEFAULT '[]',
     tags TEXT
   );
   CREATE TABLE inventory (
     pet_id INTEGER PRIMARY KEY REFERENCES pets(id) ON DELETE CASCADE,
     quantity INTEGER NOT NULL CHECK (quantity >= 0 AND quantity <= 2147483647)
   );
   CREATE TABLE orders (
     id INTEGER PRIMARY KEY,
     pet_id INTEGER NOT NULL REFERENCES pets(id) ON DELETE CASCADE,
     quantity INTEGER NOT NULL CHECK (quantity >= 1),
     ship_date TEXT NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('placed', 'approved', 'delivered')),
     complete INTEGER NOT NULL CHECK (complete IN (0, 1))
   );
   CREATE INDEX orders_open_by_pet ON orders (pet_id) WHERE status IN ('placed', 'approved');
   CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     plan TEXT NOT NULL,
     key_hash TEXT NOT NULL UNIQUE,
     per_minute INTEGER,
     per_day INTEGER,
     created_at TEXT NOT NULL,
     revoked_at TEXT
   );`
]

interface PetRow { id: number, name: string, category_id: number | null, category_name: string | null, photo_urls: string, tags: string | null, status: PetStatus }
interface OrderRow { id: number, petId: number, quantity: number, shipDate: string, status: Order['status'], complete: number }
interface KeyRow { id: string, name: string, plan: string, perMinute: number | null, perDay: number | null, createdAt: string, revokedAt: string | null }

const keyColumns = 'id, name, plan, per_minute AS perMinute, per_day AS perDay, created_at AS createdAt, revoked_at AS revokedAt'

function toPet (row: PetRow): Pet {
  const pet: Pet = { id: row.id, name: row.name, photoUrls: JSON.parse(row.photo_urls) as string[], status: row.status }
  if (row.category_id !== null && row.category_name !== null) pet.category = { id: row.category_id, name: row.category_name }
  if (row.tags !== null) pet.tags = JSON.parse(row.tags) as NonNullable<Pet['tags']>
  return pet
}

const toKey = (row: KeyRow): ApiKeyRecord => ({ ...row })

/** Cached values are shared by every request that reads them: none may change one. */
function deepFreeze<T> (value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}

/**
 * SQLite through better-sqlite3: synchronous, so every statement is atomic with respect to this
 * process; WAL lets the keys CLI and other readers work while the server runs.
 */
export function createSqliteStore (file: string): Store {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  const db = new Database(file)
  // WAL + synchronous=NORMAL: a committed transaction is in the WAL file before the call
  // returns, so it survives a crash (kill -9) of the process. (Power loss needs FULL.)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')

  // Reads share one transaction per event-loop turn (see TurnSnapshot); writes end it first.
  const snapshot = new TurnSnapshot(db)
  const failed = (error: unknown) => db.open ? error : new StoreUnavailableError('the database is closed')
  const reading = <T>(work: () => T): Promise<T> => {
    try {
      return Promise.resolve(snapshot.read(work))
    } catch (error) {
      return Promise.reject(failed(error))
    }
  }

  // Statements are prepared lazily, after migrate() has created the tables.
  let s: ReturnType<typeof prepareStatements> | undefined
  const statements = () => (s ??= prepareStatements(db))

  // Change detection for the caches below. PRAGMA data_version (snapshot.changeCounter())
  // changes whenever another connection commits (the keys CLI, db:seed, another server process on
  // the same file); it does not change for this connection's own commits, which are counted here
  // instead. A cached value is used only while both are as they were when it was read.
  let inventoryWrites = 0
  let keyWrites = 0
  /** Runs a write, then counts it (also when it fails: a needless re-read is harmless). */
  const writing = <T>(kind: 'inventory' | 'keys' | 'all', work: () => T): Promise<T> => {
    try {
      snapshot.end()
      return Promise.resolve(work())
    } catch (error) {
      return Promise.reject(failed(error))
    } finally {
      if (kind !== 'keys') inventoryWrites++
      if (kind !== 'inventory') keyWrites++
      noteCommit()
    }
  }

  // The inventory list as JSON text, active keys by hash and pets by id, as last read: one
  // in-memory lookup instead of a query per request. Any commit (a revocation by the CLI included)
  // empties them; only what exists is kept, and each map is bounded. The change counter is read
  // before the value, so a value is never older than its stamp (a newer one is only read again).
  const inventoryText = new StampedCache<'list', string>(1)
  const activeKeys = new StampedCache<string, ApiKeyRecord | undefined>(10_000)
  const pets = new StampedCache<number, Pet | undefined>(10_000)

  // Concurrent PATCHes share one commit; each is answered after it (see GroupCommit).
  const inventoryUpdates = new GroupCommit({
    db,
    apply: ({ petId, quantity }: { petId: number, quantity: number }): InventoryItem | undefined => {
      const row = statements().updateInventory.get(quantity, petId) as [number, number, PetStatus] | undefined
      return row && { petId: row[0], quantity: row[1], status: row[2] }
    },
    failure: failed,
    beforeBatch: () => { snapshot.end() },
    afterBatch: () => { inventoryWrites++; noteCommit() }
  })

  return {
    engine: 'sqlite',

    migrate: () => writing('all', () => {
      db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)')
      db.transaction(() => {
        const current = (db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as { v: number }).v
        migrations.forEach((sql, index) => {
          const version = index + 1
          if (version <= current) return
          db.exec(sql)
          db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(version, new Date().toISOString())
        })
      }).immediate()
    }),

    ping: () => reading(() => { db.prepare('SELECT 1').get() }),

    close: async () => {
      inventoryUpdates.flush()
      snapshot.end()
      if (db.open) db.close()
    },

    countPets: () => reading(() => (statements().countPets.get() as { n: number }).n),

    listInventory: () => reading(() => statements().listInventory.all() as InventoryItem[]),

    listInventoryJson: () => reading(() => inventoryText.get(snapshot.changeCounter(), inventoryWrites, 'list',
      () => statements().listInventoryJson.get() as string)),

    updateInventory: (petId, quantity) => inventoryUpdates.run({ petId, quantity }),

    getPet: (petId) => reading(() => pets.get(snapshot.changeCounter(), inventoryWrites, petId, () => {
      const row = statements().getPet.get(petId) as PetRow | undefined
      return row && deepFreeze(toPet(row))
    })),

    listOrders: () => reading(() => (statements().listOrders.all() as OrderRow[]).map((o) => ({ ...o, complete: o.complete === 1 }))),

    importCatalogue: (catalogue: Catalogue) => writing('inventory', () => {
      const st = statements()
      return db.transaction((): ImportCounts => {
        for (const pet of catalogue.pets ?? []) {
          st.upsertPet.run({
            id: pet.id,
            name: pet.name,
            categoryId: pet.category?.id ?? null,
            categoryName: pet.category?.name ?? null,
            photoUrls: JSON.stringify(pet.photoUrls),
            tags: pet.tags === undefined ? null : JSON.stringify(pet.tags)
          })
          st.ensureInventory.run(pet.id)
        }
        for (const item of catalogue.inventory ?? []) st.upsertInventory.run(item.petId, item.quantity)
        for (const o of catalogue.orders ?? []) {
          st.upsertOrder.run({ ...o, complete: o.complete ? 1 : 0 })
        }
        return { pets: catalogue.pets?.length ?? 0, inventory: catalogue.inventory?.length ?? 0, orders: catalogue.orders?.length ?? 0 }
      }).immediate()
    }),

    createSyntheticPets: (count) => writing('inventory', () => {
      const st = statements()
      db.transaction(() => {
        const { first, last } = syntheticIdRange((db.prepare('SELECT COALESCE(MAX(id), 0) AS m FROM pets').get() as { m: number }).m, count)
        for (let id = first; id <= last; id++) {
          st.upsertPet.run({ id, name: `Pet ${id}`, categoryId: null, categoryName: null, photoUrls: '[]', tags: null })
          st.upsertInventory.run(id, id % 50)
        }
      }).immediate()
    }),

    createApiKey: (key: NewApiKey) => writing('keys', () => {
      statements().insertKey.run({ ...key, createdAt: new Date().toISOString() })
      return toKey(statements().keyById.get(key.id) as KeyRow)
    }),

    listApiKeys: () => reading(() => (statements().listKeys.all() as KeyRow[]).map(toKey)),

    revokeApiKey: (id) => writing('keys', () => {
      statements().revokeKey.run(new Date().toISOString(), id)
      const row = statements().keyById.get(id) as KeyRow | undefined
      return row && toKey(row)
    }),

    findActiveApiKey: (keyHash) => reading(() => activeKeys.get(snapshot.changeCounter(), keyWrites, keyHash, () => {
      const row = statements().activeKeyByHash.get(keyHash) as KeyRow | undefined
      return row && Object.freeze(toKey(row))
    })),

    countApiKeys: () => reading(() => (statements().countKeys.get() as { n: number }).n)
  }
}

function prepareStatements (db: Database.Database) {
  return {
    countPets: db.prepare('SELECT COUNT(*) AS n FROM pets'),
    listInventory: db.prepare(`SELECT i.pet_id AS petId, i.quantity, ${statusExpression('i.pet_id', 'i.quantity')} AS status
      FROM inventory i ORDER BY i.pet_id`),
    // The same rows as one JSON array built by SQLite: no JavaScript object per row. The ORDER BY
    // inside the aggregate is what guarantees the order (an aggregate's input order is otherwise
    // unspecified); json_group_array of no rows is '[]'.
    listInventoryJson: db.prepare(`SELECT json_group_array(json_object('petId', i.pet_id, 'quantity', i.quantity,
        'status', ${statusExpression('i.pet_id', 'i.quantity')}) ORDER BY i.pet_id)
      FROM inventory i`).pluck(),
    // Raw rows (arrays) on the write path: the item is built in JavaScript with one fixed shape
    // instead of better-sqlite3 setting each named column on a new object.
    updateInventory: db.prepare(`UPDATE inventory SET quantity = ? WHERE pet_id = ?
      RETURNING pet_id, quantity, ${statusExpression('inventory.pet_id', 'inventory.quantity')}`).raw(),
    getPet: db.prepare(`SELECT p.*, ${statusExpression('p.id', 'COALESCE(i.quantity, 0)')} AS status
      FROM pets p LEFT JOIN inventory i ON i.pet_id = p.id WHERE p.id = ?`),
    listOrders: db.prepare(`SELECT id, pet_id AS petId, quantity, ship_date AS shipDate, status, complete
      FROM orders ORDER BY id`),
    upsertPet: db.prepare(`INSERT INTO pets (id, name, category_id, category_name, photo_urls, tags)
      VALUES (@id, @name, @categoryId, @categoryName, @photoUrls, @tags)
      ON CONFLICT (id) DO UPDATE SET name = excluded.name, category_id = excluded.category_id,
        category_name = excluded.category_name, photo_urls = excluded.photo_urls, tags = excluded.tags`),
    ensureInventory: db.prepare('INSERT INTO inventory (pet_id, quantity) VALUES (?, 0) ON CONFLICT (pet_id) DO NOTHING'),
    upsertInventory: db.prepare(`INSERT INTO inventory (pet_id, quantity) VALUES (?, ?)
      ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity`),
    upsertOrder: db.prepare(`INSERT INTO orders (id, pet_id, quantity, ship_date, status, complete)
      VALUES (@id, @petId, @quantity, @shipDate, @status, @complete)
      ON CONFLICT (id) DO UPDATE SET pet_id = excluded.pet_id, quantity = excluded.quantity,
        ship_date = excluded.ship_date, status = excluded.status, complete = excluded.complete`),
    insertKey: db.prepare(`INSERT INTO api_keys (id, name, plan, key_hash, per_minute, per_day, created_at)
      VALUES (@id, @name, @plan, @keyHash, @perMinute, @perDay, @createdAt)`),
    keyById: db.prepare(`SELECT ${keyColumns} FROM api_keys WHERE id = ?`),
    listKeys: db.prepare(`SELECT ${keyColumns} FROM api_keys ORDER BY created_at, id`),
    revokeKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    activeKeyByHash: db.prepare(`SELECT ${keyColumns} FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL`),
    countKeys: db.prepare('SELECT COUNT(*) AS n FROM api_keys')
  }
}
