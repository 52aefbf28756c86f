import type pg from 'pg'
import { applyMigrations, migrationsDirectory, readMigrations } from '../migrations.js'
import { toInventoryItem, type InventoryRow } from '../rows.js'
import type { ApiKeyRecord, InventoryEvents, InventoryFastPaths, Pet, Store } from '../types.js'
import { CachedList } from './cached-list.js'
import { ChangeFeed, parseChange, type Change, type Changed } from './changes.js'
import { EntryCache } from './entry-cache.js'
import { importCatalogue } from './import.js'
import { Invalidations } from './invalidations.js'
import { InventoryWrites } from './inventory-writes.js'
import { readOnly, runAsync, writeRules, type DataAccess } from '../work.js'
import { postgresStepRunner } from './dialect.js'
import { bulkTransaction, connectionFailed, openPool, ping, query, writeAndAnnounce, writeTransaction, type PostgresStoreOptions } from './pool.js'
import { sql, type StatementName } from './statements.js'

/** First key of the advisory lock that serialises migrations; the second is the schema's name. */
const MIGRATION_LOCK = 0x7065_7473 // 'pets'

/** Most pets and most active keys kept in memory each. */
const MAX_CACHED = 10_000

export interface PostgresStore extends Store {
  /** Whether this instance is listening for other connections' changes, and so keeps caches. */
  readonly listening: boolean
  /**
   * Resolves once listening, when every change committed anywhere before the call has reached
   * this instance's caches.
   */
  syncChanges (): Promise<void>
  /** PostgreSQL hands out the list as one string. */
  readonly inventory: InventoryFastPaths<string>
}

/** A row of the batched PATCH: the entry written, or (json null) a pet whose row was held elsewhere. */
interface UpdatedInventoryRow extends InventoryRow {
  target: number
  json: string | null
}

/** The server process behind a pool connection. */
function backendPid (client: pg.ClientBase): number | undefined {
  return 'processID' in client && typeof client.processID === 'number' ? client.processID : undefined
}

/** The caches of one kind of entry and what says when their values may be kept. */
function cacheKind<K> (changes: Invalidations<K>, caches: { changed (keys: Iterable<K>): void, changedAll (): void }[]) {
  return {
    changes,
    changed: (keys: Changed<K>) => {
      if (keys === 'all') {
        changes.changedAll()
        for (const cache of caches) cache.changedAll()
      } else {
        changes.changed(keys)
        for (const cache of caches) cache.changed(keys)
      }
    },
    setCaching: (on: boolean) => {
      changes.setCaching(on)
      for (const cache of caches) cache.changedAll()
    }
  }
}

/**
 * PostgreSQL through a pg Pool. Every request-path operation is one statement in autocommit (the
 * PATCHes of one event-loop turn share one, InventoryWrites), so a 2xx means the write is
 * committed. Getting a connection and running a statement are bounded
 * by `timeoutMs`; a lost or unreachable server becomes StoreUnavailableError (503), and the pool
 * opens fresh connections by itself once the server answers again.
 *
 * The inventory list, pets, active keys and the order list are cached in memory while the
 * instance listens for the changes other connections commit (ChangeFeed, migration 002): each
 * change marks only what it touched, and lists are brought up to date entry by entry. This
 * instance's own writes update the caches when they are acknowledged, so it reads its own writes
 * at once; another instance's within the time its notification takes. Without a listening
 * connection nothing is cached, and a connection failure of any statement drops the caches too.
 */
export function createPostgresStore (connectionString: string, options: PostgresStoreOptions = {}): PostgresStore {
  const pool = openPool(connectionString, options)
  let closed = false

  // Notifications of this pool's connections announce our own writes, already applied.
  const ownBackends = new Set<number>()
  pool.on('connect', (client) => {
    const pid = backendPid(client)
    if (pid !== undefined) ownBackends.add(pid)
  })
  pool.on('remove', (client) => {
    const pid = backendPid(client)
    if (pid !== undefined) ownBackends.delete(pid)
  })

  /** A statement of `sql`, in autocommit, prepared once per connection under its name. */
  const run = async <R extends pg.QueryResultRow>(name: StatementName, values?: unknown[]): Promise<R[]> => {
    try {
      return await query<R>(pool, sql[name], values, name)
    } catch (error) {
      if (connectionFailed(error)) feed.restart()
      throw error
    }
  }
  const first = async <R extends pg.QueryResultRow>(name: StatementName, values?: unknown[]): Promise<R | undefined> => (await run<R>(name, values))[0]
  const one = async <R extends pg.QueryResultRow>(name: StatementName, values?: unknown[]): Promise<R> => {
    const row = await first<R>(name, values)
    if (row === undefined) throw new Error(`statement ${name} returned no row`)
    return row
  }

  const petChanges = new Invalidations<number>()
  const keyChanges = new Invalidations<string>()

  // The inventory as each entry's JSON text, built by the server from the field map
  // (inventory-fields.ts): the joined text is what a full read would give, byte for byte.
  const inventory = new CachedList<string, string, string>(petChanges, {
    all: async () => {
      const { lines } = await one<{ lines: string }>('inventoryEntries')
      const ids: number[] = []
      const values: string[] = []
      if (lines !== '') {
        for (const line of lines.split('\n')) {
          const space = line.indexOf(' ')
          ids.push(Number(line.slice(0, space)))
          values.push(line.slice(space + 1))
        }
      }
      return { ids, values }
    },
    some: async (ids) => new Map((await run<{ petId: number, json: string }>('inventoryEntriesOf', [ids])).map((row) => [row.petId, row.json])),
    uncached: async () => (await one<{ json: string }>('listInventoryJson')).json
  }, {
    chunk: (texts) => texts.join(','),
    whole: (chunks) => `[${chunks.join(',')}]`
  })

  const inventoryWrites = new InventoryWrites<UpdatedInventoryRow>(async (petIds, quantities, alone, events) => {
    const statement = alone ? 'updateInventoryOne' : 'updateInventory'
    // The events' own clock (the app's), as the other engine's events are stamped.
    const at = events?.now() ?? Date.now()
    const values = [petIds, quantities, events === undefined ? null : `% ${events.scope} %`, at, new Date(at).toISOString()]
    try {
      return await writeAndAnnounce<UpdatedInventoryRow>(pool,
        { name: statement, text: sql[statement], values },
        { name: 'announce', text: sql.announce, values: [`pet ${petIds.join(',')}`] })
    } catch (error) {
      if (connectionFailed(error)) feed.restart()
      throw error
    }
  }, (row) => ({ petId: row.target, skipped: row.json === null }))

  const pets = new EntryCache<number, Pet>(petChanges, MAX_CACHED)
  const keys = new EntryCache<string, ApiKeyRecord>(keyChanges, MAX_CACHED)

  const kinds = {
    pets: cacheKind(petChanges, [inventory, pets]),
    keys: cacheKind(keyChanges, [keys])
  }
  const setCaching = (on: boolean) => { for (const kind of Object.values(kinds)) kind.setCaching(on) }
  const everythingChanged = () => {
    kinds.pets.changed('all')
    kinds.keys.changed('all')
  }

  /** A change committed by anyone: announced by another connection, or recorded by our own transaction. */
  const applyChange = (change: Change) => {
    if (change.pets !== undefined) kinds.pets.changed(change.pets)
    // Orders are not cached (pages are read afresh); their pets' statuses come as pet changes.
    if (change.keys !== undefined) kinds.keys.changed(change.keys)
  }

  const feed = new ChangeFeed({ connectionString }, {
    changed: applyChange,
    listening: () => setCaching(true),
    lost: () => setCaching(false)
  }, { timeoutMs: options.timeoutMs ?? 5000, isOwnBackend: (pid) => ownBackends.has(pid) })

  /** Bulk work of this instance (migrations, imports) may change anything: every cache starts over. */
  const changingEverything = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work()
    } finally {
      everythingChanged()
    }
  }

  const access: DataAccess = {
    engine: 'postgres',

    read: async (work) => {
      try {
        return await runAsync(work(), 'postgres', postgresStepRunner(pool), readOnly)
      } catch (error) {
        if (connectionFailed(error)) feed.restart()
        throw error
      }
    },

    // Our own connections' notifications are ignored (see ownBackends): what the transaction
    // changed comes back from the triggers with its commit and reaches the caches here, before
    // the caller is answered.
    write: async (work) => {
      try {
        const { value, changes } = await writeTransaction(pool, (client) => runAsync(work(), 'postgres', postgresStepRunner(client), writeRules()))
        for (const payload of changes) applyChange(parseChange(payload))
        return value
      } catch (error) {
        if (connectionFailed(error)) feed.restart()
        throw error
      }
    }
  }

  /** A PATCH: batched with the others of its turn (InventoryWrites); the caches follow its answer. */
  const updateInventory = async (petId: number, quantity: number, events: InventoryEvents | undefined) => {
    petChanges.beginWrite(petId)
    let row: UpdatedInventoryRow | undefined
    try {
      row = await inventoryWrites.write(petId, quantity, events)
    } catch (error) {
      petChanges.endWrite(petId)
      kinds.pets.changed([petId])
      throw error
    }
    const item = row && toInventoryItem(row)
    if (petChanges.endWrite(petId)) {
      inventory.wrote(petId, row?.json ?? undefined)
      if (item !== undefined) pets.update(petId, (pet) => ({ ...pet, status: item.status }))
    } else {
      inventory.changed([petId])
      pets.changed([petId])
    }
    return item
  }

  return {
    ...access,

    get listening () {
      return feed.listening
    },

    syncChanges: () => feed.sync(),

    migrate: () => changingEverything(async () => {
      const migrations = await readMigrations(migrationsDirectory('postgres'))
      await bulkTransaction(pool, async (bulk) => {
        // Several instances may start at once: the first takes the lock and migrates, the others
        // wait for it and then find nothing left to do. The lock is per schema and ends with the
        // transaction.
        await bulk('SELECT pg_advisory_xact_lock($1, hashtext(COALESCE(current_schema(), \'\')))', [MIGRATION_LOCK])
        await applyMigrations({
          exec: async (script) => { await bulk(script) },
          query: async <R>(text: string, params?: unknown[]) => (await bulk<R & pg.QueryResultRow>(text, params)).rows,
          tables: async () => (await bulk<{ name: string }>('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()')).rows.map((row) => row.name)
        }, migrations)
      })
    }),

    ping: () => ping(pool),

    close: async () => {
      if (closed) return
      closed = true
      await feed.close()
      await pool.end()
    },

    inventory: {
      listJson: () => {
        feed.start()
        return inventory.get()
      },
      update: (petId, quantity, events) => updateInventory(petId, quantity, events)
    },

    importCatalogue: (catalogue) => changingEverything(() => bulkTransaction(pool, (bulk) => importCatalogue(bulk, catalogue))),

    caches: {
      pets: {
        get: (petId, read) => {
          feed.start()
          return pets.get(petId, () => access.read(read))
        }
      },
      activeKeys: {
        get: (keyHash, read) => {
          feed.start()
          // Every /v1 request asks: a cached key is answered in this same call, without a promise.
          return keys.peek(keyHash) ?? keys.get(keyHash, () => access.read(read))
        },
        getMany: (keyHashes, read) => {
          feed.start()
          return keys.getMany(keyHashes, (missing) => access.read(() => read(missing)))
        }
      }
    }
  }
}
