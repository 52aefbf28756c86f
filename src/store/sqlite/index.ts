import type { MaybePromise } from '../../maybe-promise.js'
import { constraintViolationOf } from '../constraints.js'
import { applyMigrations, migrationsDirectory, readMigrations } from '../migrations.js'
import { petColumns, toPetStatus } from '../rows.js'
import type { TableName } from '../schema.js'
import type { ApiKeyRecord, Catalogue, ImportCounts, InventoryEvents, InventoryItem, Store } from '../types.js'
import { readOnly, runSync, STOPPED, tablesTouched, writeRules, type DataAccess, type Step } from '../work.js'
import { ReadCaches } from './caches.js'
import { checkWrites, failureOf, isBusy, migrationTransaction, openDatabase, probeWrite, retryWhileBusy } from './database.js'
import { sqliteStepRunner } from './dialect.js'
import { GroupCommit } from './group-commit.js'
import { LoggedList } from './lists.js'
import { prepareStatements, type Statements } from './statements.js'
import { noteCommit, TurnSnapshot } from './turn-snapshot.js'

export interface SqliteStoreOptions {
  /** How long a write may wait for another process's write lock (DATABASE_TIMEOUT_MS). */
  timeoutMs?: number
}

type WriteKind = 'inventory' | 'keys'

/**
 * A write waiting in the group commit: a PATCH (which names its pet, so that a read of another
 * pet need not wait for it) or a repository's work (which may change anything).
 */
interface QueuedWrite {
  petId?: number
  apply (): unknown
}

/** Runs a write; a constraint it breaks is thrown as the 409 the client gets (src/store/constraints.ts). */
function constraintsAnswered<T> (write: () => T): T {
  try {
    return write()
  } catch (error) {
    throw constraintViolationOf(error) ?? error
  }
}

/** The row of a statement that always returns one (an aggregate, a row just inserted). */
function oneRow<R> (row: R | undefined): R {
  if (row === undefined) throw new Error('the statement returned no row')
  return row
}

/**
 * SQLite through better-sqlite3: synchronous, so every statement is atomic with respect to this
 * process; WAL lets the keys CLI and other readers work while the server runs. A statement never
 * waits for another process's lock inside SQLite (which would block the event loop): it is tried
 * again on timers (retryWhileBusy, GroupCommit) for up to `timeoutMs`, then fails with
 * StoreUnavailableError (503).
 *
 * Read your writes: a read of what a write still waiting to commit may change (the group commit's
 * queue, a write retrying on the lock) waits for that write first. So a request handled after a
 * PATCH, pipelined on the same connection or not, sees it.
 */
export function createSqliteStore (file: string, options: SqliteStoreOptions = {}): Store {
  const timeoutMs = options.timeoutMs ?? 5000
  const db = openDatabase(file, timeoutMs)
  const failed = failureOf(db)

  // Reads share one transaction per event-loop turn (see TurnSnapshot); writes end it first.
  const snapshot = new TurnSnapshot(db)
  const caches = new ReadCaches(() => snapshot.changeCounter())

  // Prepared on first use, after migrate() has created the tables.
  let prepared: Statements | undefined
  const statements = () => (prepared ??= prepareStatements(db))

  // In WAL mode a read finds the file locked only for moments (another process recovering the
  // WAL after a crash, say): it is tried again on timers, each time in a transaction of its own.
  const readFailed = <T>(work: () => T, error: unknown): Promise<T> => isBusy(error)
    ? retryWhileBusy(() => snapshot.readAlone(work), timeoutMs).catch((e: unknown) => { throw failed(e) })
    : Promise.reject(failed(error))

  /** A read, answered in this same call unless the file was locked (then retried on timers). */
  const readingNow = <T>(work: () => T): MaybePromise<T> => {
    try {
      return snapshot.read(work)
    } catch (error) {
      return readFailed(work, error)
    }
  }
  const reading = <T>(work: () => T): Promise<T> => Promise.resolve(readingNow(work))

  /** A read that runs after waiting (for a write): in a transaction of its own (see readAlone). */
  const readingAlone = <T>(work: () => T): Promise<T> => {
    try {
      return Promise.resolve(snapshot.readAlone(work))
    } catch (error) {
      return readFailed(work, error)
    }
  }

  // Writes that found the file locked and are retrying on timers, by what they change.
  const retrying: Record<WriteKind, Set<Promise<unknown>>> = { inventory: new Set(), keys: new Set() }

  /**
   * Reads after the writes of `kind` this process has accepted but not yet committed (or failed);
   * of the queued writes, only those `sees` picks out when given (the read cannot see the others).
   */
  const readingAfterWritesNow = <T>(kind: WriteKind, work: () => T, sees?: (write: QueuedWrite) => boolean): MaybePromise<T> => {
    const queued = kind === 'inventory' ? writes.idle(sees) : undefined
    if (queued === undefined && retrying[kind].size === 0) return readingNow(work)
    return Promise.allSettled([...retrying[kind], queued]).then(() => readingAlone(work))
  }
  const readingAfterWrites = <T>(kind: WriteKind, work: () => T, sees?: (write: QueuedWrite) => boolean): Promise<T> =>
    Promise.resolve(readingAfterWritesNow(kind, work, sees))

  /** Runs a write in one IMMEDIATE transaction, then counts it for the caches (also when it fails). */
  const writing = <T>(kind: WriteKind, work: () => T): Promise<T> => {
    const attempt = () => {
      snapshot.end()
      try {
        return db.transaction(work).immediate()
      } finally {
        caches.wrote(kind)
        noteCommit()
      }
    }
    try {
      return Promise.resolve(attempt())
    } catch (error) {
      if (!isBusy(error) || !db.open) return Promise.reject(failed(error))
      const retry = retryWhileBusy(attempt, timeoutMs).catch((e: unknown) => { throw failed(e) })
      retrying[kind].add(retry)
      const done = () => { retrying[kind].delete(retry) }
      retry.then(done, done)
      return retry
    }
  }

  // Every write of the request path (PATCHes and the repositories' work) waits in one queue and
  // shares one commit per event-loop turn, in arrival order; each is answered after it (see
  // GroupCommit). The tables the batch wrote say which caches it makes stale.
  const runner = sqliteStepRunner(db)
  const tablesWritten = new Set<TableName>()
  const noteTables = (tables: readonly TableName[]) => {
    for (const table of tables) {
      tablesWritten.add(table)
      // Who wants events may have changed within the batch: read it again for the next PATCH.
      if (table === 'webhook_endpoints' || table === 'api_keys') wantedInBatch = undefined
    }
  }
  const writes = new GroupCommit<QueuedWrite, unknown>({
    db,
    apply: (call) => call.apply(),
    finish: () => { statements().pruneChangeLog.run() },
    timeoutMs,
    failure: failed,
    beforeBatch: () => {
      snapshot.end()
      wantedInBatch = undefined
    },
    afterBatch: () => {
      caches.wrote(tablesWritten.has('api_keys') ? 'all' : 'inventory')
      tablesWritten.clear()
      noteCommit()
    }
  })
  // The promise settles with what the call's own apply returned.
  const queueWrite = <T>(call: { petId?: number, apply: () => T }): Promise<T> => writes.run(call) as Promise<T>

  // The lists, kept in memory and updated from the change log (see LoggedList).
  const inventoryList = new LoggedList({
    all: () => statements().inventoryTexts.all(),
    changedAfter: (seq) => statements().inventoryChanges.all(seq)
  })
  const syncList = (list: LoggedList) => () => {
    const [oldest, newest] = oneRow(statements().changeLogBounds.get())
    return list.sync(oldest, newest)
  }

  /** One PATCH: the stock written, then the entry's status by the rule of sql.ts for that stock. */
  const patch = (petId: number, quantity: number): InventoryItem | undefined => {
    const st = statements()
    if (st.updateInventory.run(quantity, petId).changes === 0) return undefined
    // Every field, or this fails to compile: the answer is built here, not from inventory-fields.ts.
    const item: Required<InventoryItem> = { petId, quantity, status: toPetStatus(oneRow(st.inventoryStatus.get({ petId, quantity }))) }
    return item
  }

  // Whether an endpoint wants inventory.updated, read once per batch of the group commit: the
  // batch's transaction holds the write lock, so no other process changes the endpoints
  // meanwhile, and a write of the batch's own to them or to the keys drops it (noteTables).
  let wantedInBatch: boolean | undefined
  const eventsWanted = (events: InventoryEvents) => (wantedInBatch ??= runSync(events.wanted(), 'sqlite', runner))

  const access: DataAccess = {
    engine: 'sqlite',
    // A read waits for queued repository work (which may change anything), and for queued PATCHes
    // only when one of its statements touches the inventory they change: a read of orders is
    // answered while a PATCH waits for another process's lock. Such a read is stopped at that
    // step and run again once the queue has been committed.
    read: async (work) => {
      const patchQueued = (step: Step) => tablesTouched(step).includes('inventory') && writes.waiting((write) => write.petId !== undefined)
      const result = await readingAfterWrites('inventory', () => runSync(work(), 'sqlite', runner, readOnly, patchQueued),
        (write) => write.petId === undefined)
      return result !== STOPPED ? result : readingAfterWrites('inventory', () => runSync(work(), 'sqlite', runner, readOnly))
    },
    // A savepoint inside the batch's transaction: work that fails undoes only its own statements.
    write: (work) => queueWrite({ apply: () => constraintsAnswered(db.transaction(() => runSync(work(), 'sqlite', runner, writeRules(noteTables)))) }),
  }

  return {
    ...access,

    migrate: async () => {
      const migrations = await readMigrations(migrationsDirectory('sqlite'))
      try {
        snapshot.end()
        await migrationTransaction(db, (session) => applyMigrations(session, migrations), timeoutMs)
      } catch (error) {
        throw failed(error)
      } finally {
        caches.wrote('all')
        noteCommit()
      }
    },

    // While writes meet a storage fault (full disk, read-only file), checkWrites says when it is over.
    ping: () => reading(() => { db.prepare('SELECT 1').get() }).then(() => checkWrites(db, () => writing('keys', () => { probeWrite(db) }))),

    close: async () => {
      writes.flush()
      snapshot.end()
      if (db.open) db.close()
    },

    inventory: {
      listJson: () => readingAfterWrites('inventory', () => caches.list('inventory', syncList(inventoryList))),

      update: (petId, quantity, events) => queueWrite({
        petId,
        apply: () => constraintsAnswered((): InventoryItem | undefined => {
          if (events === undefined || !eventsWanted(events)) return patch(petId, quantity)
          // Recorded with the PATCH, in a savepoint of its own: all of it stands, or none.
          return db.transaction(() => {
            const before = statements().inventoryEntry.get(petId)
            const item = patch(petId, quantity)
            if (item !== undefined && before !== undefined && (before.quantity !== item.quantity || before.status !== item.status)) {
              runSync(events.record(item, { quantity: before.quantity, status: toPetStatus(before.status) }), 'sqlite', runner, writeRules(noteTables))
            }
            return item
          })()
        })
      })
    },

    importCatalogue: (catalogue: Catalogue) => writing('inventory', (): ImportCounts => {
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
      st.pruneChangeLog.run()
      return { pets: catalogue.pets?.length ?? 0, inventory: catalogue.inventory?.length ?? 0, orders: catalogue.orders?.length ?? 0 }
    }),

    caches: {
      pets: {
        get: (petId, read) => readingAfterWrites('inventory', () => caches.pet(petId, () => runSync(read(), 'sqlite', runner)),
          (write) => write.petId === undefined || write.petId === petId)
      },
      // Every /v1 request asks for its key: answered in this same call, without a promise, unless a key write waits.
      activeKeys: {
        get: (keyHash, read) => readingAfterWritesNow('keys', () => caches.activeKey(keyHash, () => runSync(read(), 'sqlite', runner))),
        // One read of every key asked for (the stamped cache has no look without a load), each answer kept.
        getMany: (keyHashes, read) => readingAfterWritesNow('keys', () => {
          const fresh = runSync(read(keyHashes), 'sqlite', runner)
          const found = new Map<string, ApiKeyRecord>()
          for (const keyHash of keyHashes) {
            const record = caches.activeKey(keyHash, () => fresh.get(keyHash))
            if (record !== undefined) found.set(keyHash, record)
          }
          return found
        })
      }
    }
  }
}
