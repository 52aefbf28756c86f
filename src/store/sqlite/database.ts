import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { StoreUnavailableError } from '../../errors.js'
import type { MigrationSession } from '../migrations.js'

/** Opens (and creates) the database file with the settings every connection of the service uses. */
export function openDatabase (file: string): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  const db = new Database(file)
  // WAL + synchronous=NORMAL: a committed transaction is in the WAL file before the call
  // returns, so it survives a crash (kill -9) of the process. (Power loss needs FULL.)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  return db
}

/** What a failed call rejects with: once the database is closed, StoreUnavailableError (503). */
export function failureOf (db: Database.Database): (error: unknown) => unknown {
  return (error) => db.open ? error : new StoreUnavailableError('the database is closed')
}

/**
 * Runs `work` in one BEGIN IMMEDIATE transaction: it takes the write lock at once, so a second
 * process migrating the same file waits (busy_timeout) and then finds nothing left to do.
 * Only for migrations: the session's statements are synchronous, so between them only promise
 * callbacks already queued can run, but whatever they do on this connection would run inside
 * this transaction. The store is not used before migrate() has resolved.
 */
export async function migrationTransaction (db: Database.Database, work: (session: MigrationSession) => Promise<void>): Promise<void> {
  const session: MigrationSession = {
    exec: async (script) => { db.exec(script) },
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
  db.exec('BEGIN IMMEDIATE')
  try {
    await work(session)
    db.exec('COMMIT')
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK')
    throw error
  }
}
