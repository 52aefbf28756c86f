import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { projectRoot } from '../paths.js'
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

/** The migrations of a directory in version order; numbered 1, 2, 3, … without gaps or repeats. */
export async function readMigrations (directory: string): Promise<Migration[]> {
  const files = (await readdir(directory)).filter((file) => file.endsWith('.sql'))
  const numbered = files.map((file) => {
    const match = FILE_NAME.exec(file)
    if (match === null) throw new Error(`migration ${join(directory, file)} must be named NNN_name.sql (lower case)`)
    return { version: Number(match[1]), file }
  }).sort((a, b) => a.version - b.version)
  numbered.forEach(({ version, file }, index) => {
    if (version !== index + 1) throw new Error(`migration ${join(directory, file)}: expected version ${index + 1} (versions run 1, 2, 3, … each once)`)
  })
  return Promise.all(numbered.map(async ({ version, file }) => ({ version, file, sql: await readFile(join(directory, file), 'utf8') })))
}

/** A connection inside the transaction an engine opened for migrating. Parameters are written $1, $2, … */
export interface MigrationSession {
  /** Runs a script of one or more statements, without parameters. */
  exec (script: string): Promise<void>
  query<R> (sql: string, params?: unknown[]): Promise<R[]>
}

/**
 * Applies, in version order, the migrations above the highest version recorded in
 * schema_migrations, recording each one. The session must be one transaction that other
 * processes cannot run at the same time (the engine's lock): then several processes starting
 * at once apply each version once, and a failing migration leaves nothing behind.
 */
export async function applyMigrations (session: MigrationSession, migrations: readonly Migration[]): Promise<void> {
  await session.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)')
  const [row] = await session.query<{ current: number }>('SELECT COALESCE(MAX(version), 0) AS current FROM schema_migrations')
  const current = row?.current ?? 0
  for (const migration of migrations) {
    if (migration.version <= current) continue
    await session.exec(migration.sql)
    await session.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [migration.version, new Date().toISOString()])
  }
}
