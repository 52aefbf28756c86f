import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { projectRoot } from '../contract/paths.js'
import type { Store } from './types.js'

export interface Migration {
  version: number
  file: string
  sql: string
}

/**
 * An engine's numbered .sql files, read from the source tree under the package root whether the
 * code runs from src/ (tsx) or dist/ (node): tsc does not copy .sql files, and one copy cannot go
 * stale. openapi.yaml is found the same way.
 */
export function migrationsDirectory (engine: Store['engine']): string {
  return join(projectRoot, 'src', 'store', engine, 'migrations')
}

const FILE_NAME = /^(\d+)_[a-z0-9_]+\.sql$/

/**
 * The migrations of a directory in version order: each number once. Numbers may have gaps (a
 * number can be reserved for a change made on another branch): applyMigrations applies every
 * version not recorded yet, not only those above the highest.
 */
export async function readMigrations (directory: string): Promise<Migration[]> {
  const files = (await readdir(directory)).filter((file) => file.endsWith('.sql'))
  const numbered = files.map((file) => {
    const match = FILE_NAME.exec(file)
    if (match === null) throw new Error(`migration ${join(directory, file)} must be named NNN_name.sql (lower case)`)
    return { version: Number(match[1]), file }
  }).sort((a, b) => a.version - b.version)
  numbered.forEach(({ version, file }, index) => {
    if (version < 1 || (index > 0 && version === numbered[index - 1]!.version)) {
      throw new Error(`migration ${join(directory, file)}: each version is a number from 1 up, used once`)
    }
  })
  return Promise.all(numbered.map(async ({ version, file }) => ({ version, file, sql: await readFile(join(directory, file), 'utf8') })))
}

/** A connection inside the transaction an engine opened for migrating. Parameters are written $1, $2, … */
export interface MigrationSession {
  /** Runs a script of one or more statements, without parameters. */
  exec (script: string): Promise<void>
  query<R> (sql: string, params?: unknown[]): Promise<R[]>
  /** The names of the tables in the database (SQLite) or the schema (PostgreSQL). */
  tables (): Promise<string[]>
}

/** The database holds another application's tables: it is refused, never adopted, migrated or seeded. */
export class ForeignDatabaseError extends Error {
  override name = 'ForeignDatabaseError'
}

const MIGRATION_TABLE = 'schema_migrations'

/**
 * Applies, in version order, the migrations whose version schema_migrations does not record yet,
 * recording each one. The session must be one transaction that other processes cannot run at the
 * same time (the engine's lock): then several processes starting at once apply each version
 * once, and a failing migration leaves nothing behind. A database with tables but without this
 * service's record of migrations (or with a record table of another shape) belongs to something
 * else and is refused.
 */
export async function applyMigrations (session: MigrationSession, migrations: readonly Migration[]): Promise<void> {
  const tables = await session.tables()
  if (tables.length > 0 && !tables.includes(MIGRATION_TABLE)) {
    const shown = tables.slice(0, 5).join(', ') + (tables.length > 5 ? ', …' : '')
    throw new ForeignDatabaseError(`the database has tables (${shown}) but not this service's ${MIGRATION_TABLE}: it belongs to another application and is left as it is; point DATABASE_URL at an empty database or at this service's own`)
  }
  if (tables.includes(MIGRATION_TABLE)) {
    try {
      await session.query(`SELECT version, applied_at FROM ${MIGRATION_TABLE} WHERE 1 = 0`)
    } catch {
      throw new ForeignDatabaseError(`the database's ${MIGRATION_TABLE} table is not this service's (no version and applied_at columns): it belongs to another application and is left as it is; point DATABASE_URL at an empty database or at this service's own`)
    }
  }
  await session.exec(`CREATE TABLE IF NOT EXISTS ${MIGRATION_TABLE} (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`)
  const applied = new Set((await session.query<{ version: number }>(`SELECT version FROM ${MIGRATION_TABLE}`)).map((row) => Number(row.version)))
  for (const migration of migrations) {
    if (applied.has(migration.version)) continue
    await session.exec(migration.sql)
    await session.query(`INSERT INTO ${MIGRATION_TABLE} (version, applied_at) VALUES ($1, $2)`, [migration.version, new Date().toISOString()])
  }
}
