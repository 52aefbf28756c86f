import pg from 'pg'
import { StoreUnavailableError } from '../errors.js'
import { statusExpression } from './sql.js'
import type { ApiKeyRecord, Catalogue, ImportCounts, InventoryItem, NewApiKey, Order, Pet, PetStatus, Store } from './types.js'
import { syntheticIdRange } from './catalogue.js'

export interface PostgresStoreOptions {
  /** Most connections this store opens (DATABASE_POOL_MAX). */
  poolMax?: number
  /** Bound on getting a connection and on each statement, in milliseconds (DATABASE_TIMEOUT_MS). */
  timeoutMs?: number
}

/**
 * Schema versions, applied in order, each once. Never edit one that has shipped: add the next.
 * Text columns keep exactly what was written (JSON as text, timestamps as ISO strings), as on
 * SQLite; COLLATE "C" makes ordering by them independent of the server's locale.
 */
const migrations: readonly string[] = [
  `CREATE TABLE pets (
     id BIGINT PRIMARY KEY,
     name TEXT NOT NULL,
     category_id BIGINT,
     category_name TEXT,
     photo_urls TEXT NOT NULL DEFAULT '[]',
     tags TEXT
   );
   CREATE TABLE inventory (
     pet_id BIGINT PRIMARY KEY REFERENCES pets(id) ON DELETE CASCADE,
     quantity INTEGER NOT NULL CHECK (quantity >= 0)
   );
   CREATE TABLE orders (
     id BIGINT PRIMARY KEY,
     pet_id BIGINT NOT NULL REFERENCES pets(id) ON DELETE CASCADE,
     quantity INTEGER NOT NULL CHECK (quantity >= 1),
     ship_date TEXT NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('placed', 'approved', 'delivered')),
     complete BOOLEAN NOT NULL
   );
   CREATE INDEX orders_open_by_pet ON orders (pet_id) WHERE status IN ('placed', 'approved');
   CREATE TABLE api_keys (
     id TEXT COLLATE "C" PRIMARY KEY,
     name TEXT NOT NULL,
     plan TEXT NOT NULL,
     key_hash TEXT NOT NULL UNIQUE,
     per_minute INTEGER,
     per_day INTEGER,
     created_at TEXT COLLATE "C" NOT NULL,
     revoked_at TEXT
   );`
]

/** First key of the advisory lock that serialises migrations; the second is the schema's name. */
const MIGRATION_LOCK = 0x7065_7473 // 'pets'

/** Bulk work (migrations, imports, synthetic pets) may legitimately take longer than a request. */
const BULK_TIMEOUT_MS = 10 * 60_000

// Ids are capped at 2^53-1 by openapi.yaml, so BIGINT values are exact as JavaScript numbers.
const INT8_OID = 20
const typeParsers: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) => oid === INT8_OID
    ? (value: string) => Number(value)
    : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser']
}

/**
 * SQLSTATE classes that mean "the database cannot serve us right now" rather than "this request
 * is wrong": connection exceptions (08), insufficient resources (53), operator intervention (57,
 * which includes 57014, a statement cancelled by statement_timeout), system errors (58), and a
 * lock wait that timed out (55P03).
 */
const unavailableClasses = new Set(['08', '53', '57', '58'])

function translate (error: unknown): unknown {
  if (error instanceof pg.DatabaseError) {
    const code = error.code ?? ''
    if (unavailableClasses.has(code.slice(0, 2)) || code === '55P03') {
      return new StoreUnavailableError(`database unavailable: ${error.message}`, { cause: error })
    }
    return error
  }
  // Programming errors stay what they are (500); everything else pg raises without a SQLSTATE is
  // about the connection: refused, reset, terminated, timed out, or the pool has been closed.
  if (error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError || error instanceof ReferenceError) return error
  const message = error instanceof Error ? error.message : String(error)
  return new StoreUnavailableError(`database unavailable: ${message}`, { cause: error })
}

interface PetRow { id: number, name: string, category_id: number | null, category_name: string | null, photo_urls: string, tags: string | null, status: PetStatus }
interface KeyRow { id: string, name: string, plan: string, perMinute: number | null, perDay: number | null, createdAt: string, revokedAt: string | null }

const keyColumns = 'id, name, plan, per_minute AS "perMinute", per_day AS "perDay", created_at AS "createdAt", revoked_at AS "revokedAt"'

function toPet (row: PetRow): Pet {
  const pet: Pet = { id: row.id, name: row.name, photoUrls: JSON.parse(row.photo_urls) as string[], status: row.status }
  if (row.category_id !== null && row.category_name !== null) pet.category = { id: row.category_id, name: row.category_name }
  if (row.tags !== null) pet.tags = JSON.parse(row.tags) as NonNullable<Pet['tags']>
  return pet
}

/** The last entry per key wins, as when the rows are upserted one after the other. */
function lastPerKey<T> (items: readonly T[], key: (item: T) => number): T[] {
  return [...new Map(items.map((item) => [key(item), item])).values()]
}

/** A query on the connection of the transaction at hand. */
type Run = <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>

const sql = {
  countPets: 'SELECT COUNT(*) AS n FROM pets',
  listInventory: `SELECT i.pet_id AS "petId", i.quantity, ${statusExpression('i.pet_id', 'i.quantity')} AS status
    FROM inventory i ORDER BY i.pet_id`,
  // The same list as JSON text built by the server, with no row objects in JavaScript and the
  // same bytes as SQLite's json_group_array. Every value is an integer or one of the three status
  // words, so concatenation yields valid JSON (the response serializer validates it regardless).
  // With the snapshot the statement read it under (one statement, one snapshot): see listInventoryJson.
  listInventoryJson: `SELECT pg_current_snapshot()::text AS snapshot, (SELECT COALESCE('[' || string_agg(
      '{"petId":' || i.pet_id || ',"quantity":' || i.quantity || ',"status":"' || (${statusExpression('i.pet_id', 'i.quantity')}) || '"}',
      ',' ORDER BY i.pet_id) || ']', '[]')
    FROM inventory i) AS json`,
  currentSnapshot: 'SELECT pg_current_snapshot()::text AS snapshot',
  // One statement: the row lock serialises concurrent writers, and the status is computed from
  // the quantity this very statement wrote.
  updateInventory: `UPDATE inventory SET quantity = $1 WHERE pet_id = $2
    RETURNING pet_id AS "petId", quantity, ${statusExpression('inventory.pet_id', 'inventory.quantity')} AS status`,
  getPet: `SELECT p.id, p.name, p.category_id, p.category_name, p.photo_urls, p.tags,
      ${statusExpression('p.id', 'COALESCE(i.quantity, 0)')} AS status
    FROM pets p LEFT JOIN inventory i ON i.pet_id = p.id WHERE p.id = $1`,
  listOrders: `SELECT id, pet_id AS "petId", quantity, ship_date AS "shipDate", status, complete
    FROM orders ORDER BY id`,
  upsertPets: `INSERT INTO pets (id, name, category_id, category_name, photo_urls, tags)
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[])
    ON CONFLICT (id) DO UPDATE SET name = excluded.name, category_id = excluded.category_id,
      category_name = excluded.category_name, photo_urls = excluded.photo_urls, tags = excluded.tags`,
  ensureInventory: `INSERT INTO inventory (pet_id, quantity) SELECT unnest($1::bigint[]), 0
    ON CONFLICT (pet_id) DO NOTHING`,
  upsertInventory: `INSERT INTO inventory (pet_id, quantity) SELECT * FROM unnest($1::bigint[], $2::integer[])
    ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity`,
  upsertOrders: `INSERT INTO orders (id, pet_id, quantity, ship_date, status, complete)
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::integer[], $4::text[], $5::text[], $6::boolean[])
    ON CONFLICT (id) DO UPDATE SET pet_id = excluded.pet_id, quantity = excluded.quantity,
      ship_date = excluded.ship_date, status = excluded.status, complete = excluded.complete`,
  insertKey: `INSERT INTO api_keys (id, name, plan, key_hash, per_minute, per_day, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${keyColumns}`,
  listKeys: `SELECT ${keyColumns} FROM api_keys ORDER BY created_at, id`,
  // Revokes once; a key revoked before keeps its first revocation time. The outer SELECT sees the
  // row as it was before this statement, which is what we want when the UPDATE matched nothing.
  revokeKey: `WITH revoked AS (
      UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING ${keyColumns}
    )
    SELECT * FROM revoked
    UNION ALL
    SELECT ${keyColumns} FROM api_keys WHERE id = $2 AND NOT EXISTS (SELECT 1 FROM revoked)`,
  activeKeyByHash: `SELECT ${keyColumns} FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
  countKeys: 'SELECT COUNT(*) AS n FROM api_keys'
}

const statementNames = new Map(Object.entries(sql).map(([name, text]) => [text, name]))

/**
 * PostgreSQL through a pg Pool. Every request-path operation is one statement in autocommit, so
 * a 2xx means the write is committed. Getting a connection and running a statement are bounded
 * by `timeoutMs`; a lost or unreachable server becomes StoreUnavailableError (503), and the pool
 * opens fresh connections by itself once the server answers again.
 */
export function createPostgresStore (connectionString: string, options: PostgresStoreOptions = {}): Store {
  const timeoutMs = options.timeoutMs ?? 5000
  const pool = new pg.Pool({
    connectionString,
    max: options.poolMax ?? 10,
    connectionTimeoutMillis: timeoutMs,
    // Server side: the statement is cancelled. Client side, a little later: for a server that
    // stopped answering altogether (the connection is then discarded).
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs + 1000,
    idle_in_transaction_session_timeout: BULK_TIMEOUT_MS,
    keepAlive: true,
    idleTimeoutMillis: 30_000,
    application_name: 'petstore',
    types: typeParsers
  })
  // An idle connection that breaks (server restart, network cut) is removed from the pool and
  // reported here; without a listener the process would crash. Requests report their own errors.
  pool.on('error', () => {})

  let closed = false

  // The inventory list as JSON text, with the snapshot it was read under. A snapshot (xmin, xmax
  // and the transactions in progress) fixes exactly which transactions are visible, so a new
  // statement whose snapshot is equal sees the same rows: the text is reused. Any transaction
  // that wrote anywhere (another instance, the CLI, psql) changes the next snapshot, so nothing
  // committed is ever missed; unrelated writes only cost a needless re-read.
  let inventoryJson: { snapshot: string, text: string } | undefined
  // Concurrent requests that find the text out of date share one read instead of each running the
  // whole query at once, but only a read that started after they arrived: it sees every write
  // acknowledged before them. Reads are numbered as they start.
  let readsStarted = 0
  let reading: { id: number, text: Promise<string> } | undefined
  let queued: Promise<string> | undefined
  const readInventoryJson = (): Promise<string> => {
    const id = ++readsStarted
    const text = query<{ snapshot: string, json: string }>(sql.listInventoryJson).then((rows) => {
      inventoryJson = { snapshot: rows[0]!.snapshot, text: rows[0]!.json }
      return rows[0]!.json
    })
    reading = { id, text }
    const clear = () => { if (reading?.id === id) reading = undefined }
    text.then(clear, clear)
    return text
  }

  /** One statement in autocommit; the statements of `sql` are prepared once per connection, by name. */
  const query = async <R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> => {
    try {
      const name = statementNames.get(text)
      return (await pool.query<R>(name === undefined ? { text, values: values ?? [] } : { name, text, values: values ?? [] })).rows
    } catch (error) {
      throw translate(error)
    }
  }

  /** Runs `work` in one transaction on one connection, with the longer bound of bulk work. */
  const bulkTransaction = async <T>(work: (run: Run) => Promise<T>): Promise<T> => {
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (error) {
      throw translate(error)
    }
    const run: Run = (text, values) => client.query({ text, values, query_timeout: BULK_TIMEOUT_MS + 1000 } as pg.QueryConfig)
    let discard = false
    try {
      await run('BEGIN')
      await run(`SET LOCAL statement_timeout = ${BULK_TIMEOUT_MS}`)
      const result = await work(run)
      await run('COMMIT')
      return result
    } catch (error) {
      if (!(error instanceof pg.DatabaseError)) discard = true
      await client.query('ROLLBACK').catch(() => { discard = true })
      throw translate(error)
    } finally {
      client.release(discard)
    }
  }

  return {
    engine: 'postgres',

    migrate: () => bulkTransaction(async (run) => {
      // Several instances may start at once: the first takes the lock and migrates, the others
      // wait for it and then find nothing left to do. The lock is per schema and ends with the
      // transaction.
      await run('SELECT pg_advisory_xact_lock($1, hashtext(COALESCE(current_schema(), \'\')))', [MIGRATION_LOCK])
      await run('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)')
      const current = (await run<{ v: number }>('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations')).rows[0]!.v
      for (const [index, text] of migrations.entries()) {
        const version = index + 1
        if (version <= current) continue
        await run(text)
        await run('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [version, new Date().toISOString()])
      }
    }),

    ping: async () => { await query('SELECT 1') },

    close: async () => {
      if (closed) return
      closed = true
      await pool.end()
    },

    countPets: async () => (await query<{ n: number }>(sql.countPets))[0]!.n,

    listInventory: () => query<InventoryItem>(sql.listInventory),

    listInventoryJson: async () => {
      const arrived = readsStarted
      const cached = inventoryJson
      if (cached !== undefined && (await query<{ snapshot: string }>(sql.currentSnapshot))[0]!.snapshot === cached.snapshot) return cached.text
      if (reading === undefined) return readInventoryJson()
      if (reading.id > arrived) return reading.text
      const after = reading.text.then(() => {}, () => {})
      queued ??= after.then(() => { queued = undefined; return readInventoryJson() })
      return queued
    },

    updateInventory: async (petId, quantity) => (await query<InventoryItem>(sql.updateInventory, [quantity, petId]))[0],

    getPet: async (petId) => {
      const row = (await query<PetRow>(sql.getPet, [petId]))[0]
      return row && toPet(row)
    },

    listOrders: () => query<Order>(sql.listOrders),

    importCatalogue: (catalogue: Catalogue) => bulkTransaction(async (run): Promise<ImportCounts> => {
      const pets = lastPerKey(catalogue.pets ?? [], (p) => p.id)
      if (pets.length > 0) {
        await run(sql.upsertPets, [
          pets.map((p) => p.id),
          pets.map((p) => p.name),
          pets.map((p) => p.category?.id ?? null),
          pets.map((p) => p.category?.name ?? null),
          pets.map((p) => JSON.stringify(p.photoUrls)),
          pets.map((p) => p.tags === undefined ? null : JSON.stringify(p.tags))
        ])
        await run(sql.ensureInventory, [pets.map((p) => p.id)])
      }
      const inventory = lastPerKey(catalogue.inventory ?? [], (i) => i.petId)
      if (inventory.length > 0) {
        await run(sql.upsertInventory, [inventory.map((i) => i.petId), inventory.map((i) => i.quantity)])
      }
      const orders = lastPerKey(catalogue.orders ?? [], (o) => o.id)
      if (orders.length > 0) {
        await run(sql.upsertOrders, [
          orders.map((o) => o.id),
          orders.map((o) => o.petId),
          orders.map((o) => o.quantity),
          orders.map((o) => o.shipDate),
          orders.map((o) => o.status),
          orders.map((o) => o.complete)
        ])
      }
      return { pets: catalogue.pets?.length ?? 0, inventory: catalogue.inventory?.length ?? 0, orders: catalogue.orders?.length ?? 0 }
    }),

    createSyntheticPets: (count) => bulkTransaction(async (run) => {
      // Like SQLite's write transaction: nobody else adds pets between reading the highest id and inserting.
      await run('LOCK TABLE pets IN SHARE ROW EXCLUSIVE MODE')
      const { first, last } = syntheticIdRange((await run<{ m: number }>('SELECT COALESCE(MAX(id), 0) AS m FROM pets')).rows[0]!.m, count)
      const range = [first, last]
      await run(`INSERT INTO pets (id, name, photo_urls) SELECT g, 'Pet ' || g, '[]' FROM generate_series($1::bigint, $2::bigint) g`, range)
      await run('INSERT INTO inventory (pet_id, quantity) SELECT g, (g % 50)::integer FROM generate_series($1::bigint, $2::bigint) g', range)
    }),

    createApiKey: async (key: NewApiKey) => {
      const rows = await query<KeyRow>(sql.insertKey, [key.id, key.name, key.plan, key.keyHash, key.perMinute, key.perDay, new Date().toISOString()])
      return { ...rows[0]! } satisfies ApiKeyRecord
    },

    listApiKeys: () => query<KeyRow>(sql.listKeys),

    revokeApiKey: async (id) => (await query<KeyRow>(sql.revokeKey, [new Date().toISOString(), id]))[0],

    findActiveApiKey: async (keyHash) => (await query<KeyRow>(sql.activeKeyByHash, [keyHash]))[0],

    countApiKeys: async () => (await query<{ n: number }>(sql.countKeys))[0]!.n
  }
}
