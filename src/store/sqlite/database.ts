import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { StoreUnavailableError } from '../../contract/errors.js'
import { WriteFaults } from '../write-faults.js'
import type { MigrationSession } from '../migrations.js'

/**
 * Opens (and creates) the database file with the settings every connection of the service uses.
 * Opening may wait up to `openTimeoutMs` for another process (switching a new file to WAL needs
 * its lock); this is at start, before anything is served. After that the connection never waits
 * for a lock inside SQLite (busy_timeout 0): a statement that finds the file locked fails at once
 * with SQLITE_BUSY, and the store retries it later (retryWhileBusy) without blocking the event loop.
 */
export function openDatabase (file: string, openTimeoutMs = 5000): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  const db = new Database(file, { timeout: openTimeoutMs })
  // WAL + synchronous=NORMAL: a committed transaction is in the WAL file before the call
  // returns, so it survives a crash (kill -9) of the process. (Power loss needs FULL.)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 0')
  return db
}

/**
 * SQLite result codes of a storage fault rather than a wrong statement: the disk is full, the
 * file or its directory cannot be written (read-only, permissions, a read-only mount), an I/O
 * error. Each passes when the operator frees space or restores the permissions.
 */
export function isStorageFault (error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code === 'SQLITE_FULL' || code === 'SQLITE_PERM' ||
    /^SQLITE_(READONLY|IOERR|CANTOPEN)(_|$)/.test(code))
}

/** The storage fault writes met, per connection, for readiness (see WriteFaults). */
const faults = new WeakMap<Database.Database, WriteFaults>()
const faultsOf = (db: Database.Database): WriteFaults => {
  let kept = faults.get(db)
  if (kept === undefined) faults.set(db, kept = new WriteFaults())
  return kept
}

/**
 * What a failed call rejects with: StoreUnavailableError (503 with Retry-After) once the database
 * is closed or for a storage fault, which is also remembered for readiness; other errors as they are.
 */
export function failureOf (db: Database.Database): (error: unknown) => unknown {
  return (error) => {
    if (!db.open) return new StoreUnavailableError('the database is closed')
    if (!isStorageFault(error)) return error
    const code = String((error as { code: string }).code)
    faultsOf(db).met(code)
    return new StoreUnavailableError(`the database cannot be written (${code}): ${(error as Error).message}`, { cause: error })
  }
}

/**
 * A write that changes nothing but still commits a page (the header's user_version, which this
 * service does not use): run by readiness while a storage fault is remembered, to find out whether
 * writes work again, and at start, so that a database the process cannot write is refused then.
 */
export function probeWrite (db: Database.Database): void {
  const version = Number(db.pragma('user_version', { simple: true }))
  db.pragma(`user_version = ${version}`)
}

/** Readiness of writes: resolves unless a storage fault is kept and `probe` (probeWrite, on the write path) does not pass. */
export const checkWrites = (db: Database.Database, probe: () => Promise<unknown>): Promise<void> => faultsOf(db).check(probe)

/** SQLITE_BUSY and its extended codes: another connection holds the lock this statement needs. */
export function isBusy (error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'))
}

/** Milliseconds before retry number `attempt` (0, 1, …) of a statement that found the file locked. */
export const busyBackoff = (attempt: number): number => Math.min(2 ** attempt, 20)

export const lockedTooLong = (timeoutMs: number) =>
  new StoreUnavailableError(`the database stayed locked by another process for ${timeoutMs} ms`)

/**
 * Runs `attempt` (synchronous: one whole transaction, or one read) until it does not fail with
 * SQLITE_BUSY, waiting between tries on timers, so the event loop serves other requests meanwhile.
 * Gives up with StoreUnavailableError (503) once `timeoutMs` has passed since `startedAt`.
 */
export async function retryWhileBusy<T> (attempt: () => T, timeoutMs: number, startedAt = Date.now()): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return attempt()
    } catch (error) {
      if (!isBusy(error)) throw error
      const left = startedAt + timeoutMs - Date.now()
      if (left <= 0) throw lockedTooLong(timeoutMs)
      await sleep(Math.min(busyBackoff(n), left))
    }
  }
}

/**
 * Runs `work` in one BEGIN IMMEDIATE transaction: it takes the write lock at once, so a second
 * process migrating the same file waits (retrying BEGIN on timers for up to `timeoutMs`) and then
 * finds nothing left to do. Only for migrations: the session's statements are synchronous, so
 * between them only promise callbacks already queued can run, but whatever they do on this
 * connection would run inside this transaction. The store is not used before migrate() has
 * resolved.
 */
export async function migrationTransaction (db: Database.Database, work: (session: MigrationSession) => Promise<void>, timeoutMs = 5000): Promise<void> {
  const session: MigrationSession = {
    exec: async (script) => { db.exec(script) },
    tables: async () => (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").pluck().all() as string[]),
    // $1, $2, … are named parameters to SQLite ("$1" is bound by the key 1).
    query: async <R>(sql: string, params: unknown[] = []) => {
      const statement = db.prepare(sql)
      const named = Object.fromEntries(params.map((value, index) => [index + 1, value]))
      if (!statement.reader) {
        statement.run(named)
        return []
      }
      return statement.all(named) as R[]
    }
  }
  await retryWhileBusy(() => db.exec('BEGIN IMMEDIATE'), timeoutMs)
  try {
    await work(session)
    // Also when no migration was due: a database this process cannot write fails here, at start.
    probeWrite(db)
    db.exec('COMMIT')
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK')
    throw error
  }
}
