import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { applyMigrations, migrationsDirectory, readMigrations, type Migration } from '../../src/store/migrations.js'
import { createPostgresStore } from '../../src/store/postgres/index.js'
import { migrationTransaction, openDatabase } from '../../src/store/sqlite/database.js'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import { tempDir } from '../helpers/app.js'
import { adminQuery, createTestSchema } from '../helpers/postgres.js'
import { petsRepository } from '../../src/repositories/pets.js'
import { apiKeysRepository } from '../../src/repositories/api-keys.js'
import { document } from '../helpers/contract.js'

function directoryWith (parent: string, name: string, files: Record<string, string>): string {
  const dir = join(parent, name)
  mkdirSync(dir)
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text)
  return dir
}


/** The versions of an engine's migrations in the repository, whatever their number today. */
const shippedVersions = async (engine: 'sqlite' | 'postgres') => (await readMigrations(migrationsDirectory(engine))).map((m) => m.version)

t.test('each engine has its numbered migrations in the source tree, starting at 001_initial.sql', async (t) => {
  for (const engine of ['sqlite', 'postgres'] as const) {
    const migrations = await readMigrations(migrationsDirectory(engine))
    t.equal(migrations[0]?.file, '001_initial.sql', engine)
    t.match(migrations[0]?.sql, /CREATE TABLE pets/, `${engine}: the schema`)
  }
})

t.test('readMigrations: in numeric order, other files ignored, gaps allowed; misnamed or repeated numbers refused', async (t) => {
  const dir = tempDir(t)
  const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`${i + 1}_step.sql`, `-- ${i + 1}`]))
  const ordered = await readMigrations(directoryWith(dir, 'ten', { ...ten, 'README.md': 'not a migration' }))
  t.same(ordered.map((m) => m.version), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], '10 after 9, not after 1')
  t.same(ordered.map((m) => m.sql), ordered.map((m) => `-- ${m.version}`), 'each with its own text')

  // A number may be reserved for a change made on another branch.
  t.same((await readMigrations(directoryWith(dir, 'gap', { '001_a.sql': '', '003_c.sql': '' }))).map((m) => m.version), [1, 3], 'a gap is allowed')
  await t.rejects(readMigrations(directoryWith(dir, 'twice', { '001_a.sql': '', '001_b.sql': '' })), /001_b\.sql: each version is a number from 1 up, used once/)
  await t.rejects(readMigrations(directoryWith(dir, 'zero', { '000_a.sql': '' })), /000_a\.sql: each version is a number from 1 up, used once/)
  await t.rejects(readMigrations(directoryWith(dir, 'name', { '001-initial.sql': '' })), /001-initial\.sql must be named NNN_name\.sql/)
  await t.rejects(readMigrations(join(dir, 'missing')), { code: 'ENOENT' })
})

t.test('applyMigrations applies each pending version once, in order, and records it', async (t) => {
  const db = openDatabase(join(tempDir(t), 'runner.db'))
  t.teardown(() => db.close())
  const first: Migration[] = [{ version: 1, file: '001_a.sql', sql: 'CREATE TABLE a (x INTEGER);' }]
  const both: Migration[] = [...first, { version: 2, file: '002_b.sql', sql: "ALTER TABLE a ADD COLUMN y TEXT; INSERT INTO a (x, y) VALUES (1, 'one');" }]
  await migrationTransaction(db, (session) => applyMigrations(session, first))
  await migrationTransaction(db, (session) => applyMigrations(session, both))
  await migrationTransaction(db, (session) => applyMigrations(session, both))
  t.same(db.prepare('SELECT x, y FROM a').all(), [{ x: 1, y: 'one' }], 'version 2 ran once')
  const recorded = db.prepare('SELECT version, applied_at FROM schema_migrations ORDER BY version').all() as { version: number, applied_at: string }[]
  t.same(recorded.map((r) => r.version), [1, 2])
  t.ok(recorded.every((r) => !Number.isNaN(Date.parse(r.applied_at))), 'with the time each was applied')
})

t.test('applyMigrations applies a version that fills a gap later, though a higher one is recorded', async (t) => {
  const db = openDatabase(join(tempDir(t), 'gap.db'))
  t.teardown(() => db.close())
  const one: Migration = { version: 1, file: '001_a.sql', sql: 'CREATE TABLE a (x INTEGER);' }
  const three: Migration = { version: 3, file: '003_c.sql', sql: 'CREATE TABLE c (x INTEGER);' }
  const two: Migration = { version: 2, file: '002_b.sql', sql: 'CREATE TABLE b (x INTEGER);' }
  await migrationTransaction(db, (session) => applyMigrations(session, [one, three]))
  await migrationTransaction(db, (session) => applyMigrations(session, [one, two, three]))
  t.same(db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all(), [1, 2, 3], 'version 2 applied after 3')
  t.same(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('a', 'b', 'c') ORDER BY name").pluck().all(), ['a', 'b', 'c'])
})

t.test('a failing migration leaves nothing of itself behind and is not recorded', async (t) => {
  const db = openDatabase(join(tempDir(t), 'failing.db'))
  t.teardown(() => db.close())
  const migrations: Migration[] = [
    { version: 1, file: '001_a.sql', sql: 'CREATE TABLE a (x INTEGER);' },
    { version: 2, file: '002_b.sql', sql: 'CREATE TABLE b (x INTEGER); INSERT INTO nowhere VALUES (1);' }
  ]
  await t.rejects(migrationTransaction(db, (session) => applyMigrations(session, migrations)), /no such table: nowhere/)
  t.notOk(db.inTransaction, 'the transaction is over')
  t.same(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all(), [], 'not even version 1 or the version table: one transaction')
})

t.test('SQLite: a database migrated before (version 1 recorded) is not migrated again', async (t) => {
  const file = join(tempDir(t), 'earlier.db')
  const earlier = new Database(file)
  earlier.exec(readFileSync(join(migrationsDirectory('sqlite'), '001_initial.sql'), 'utf8'))
  earlier.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL); INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00.000Z')")
  // A key issued before keys held scopes.
  earlier.exec("INSERT INTO api_keys (id, name, plan, key_hash, created_at) VALUES ('key_old', 'old', 'free', 'hash-old', '2026-01-01T00:00:00.000Z')")
  earlier.close()
  const store = createSqliteStore(file)
  t.teardown(() => store.close())
  await store.migrate()
  await store.importCatalogue({ pets: [{ id: 1, name: 'a', photoUrls: [] }] })
  t.equal(await petsRepository(store).count(), 1, 'the store works on it')
  t.same((await apiKeysRepository(store).findActive('hash-old'))?.scopes, document.scopes, 'a key issued before scopes holds every scope')
  const check = new Database(file, { readonly: true })
  t.teardown(() => check.close())
  const recorded = check.prepare('SELECT * FROM schema_migrations ORDER BY version').all() as { version: number, applied_at: string }[]
  t.same(recorded[0], { version: 1, applied_at: '2026-01-01T00:00:00.000Z' }, 'version 1 neither re-applied nor re-recorded')
  t.same(recorded.slice(1).map((r) => r.version), (await shippedVersions('sqlite')).slice(1), 'only the later versions applied')
})

t.test('SQLite: two stores migrating one new file at once apply each version once', async (t) => {
  const file = join(tempDir(t), 'together.db')
  const stores = [createSqliteStore(file), createSqliteStore(file)]
  t.teardown(() => Promise.all(stores.map((s) => s.close())))
  await Promise.all(stores.map((s) => s.migrate()))
  const check = new Database(file, { readonly: true })
  t.teardown(() => check.close())
  t.same(check.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all(), await shippedVersions('sqlite'))
})

t.test('PostgreSQL: a schema migrated before (version 1 recorded) is not migrated again', async (t) => {
  const { url, schema } = await createTestSchema(t)
  await adminQuery(`SET search_path = ${schema}; ${readFileSync(join(migrationsDirectory('postgres'), '001_initial.sql'), 'utf8')}
    CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
    INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00.000Z');
    INSERT INTO api_keys (id, name, plan, key_hash, created_at) VALUES ('key_old', 'old', 'free', 'hash-old', '2026-01-01T00:00:00.000Z');`)
  const store = createPostgresStore(url(), { poolMax: 1 })
  t.teardown(() => store.close())
  await store.migrate()
  await store.importCatalogue({ pets: [{ id: 1, name: 'a', photoUrls: [] }] })
  t.equal(await petsRepository(store).count(), 1, 'the store works on it')
  t.same((await apiKeysRepository(store).findActive('hash-old'))?.scopes, document.scopes, 'a key issued before scopes holds every scope')
  const recorded = await adminQuery<{ version: number, applied_at: string }>(`SELECT version, applied_at FROM ${schema}.schema_migrations ORDER BY version`)
  t.same(recorded[0], { version: 1, applied_at: '2026-01-01T00:00:00.000Z' }, 'version 1 neither re-applied nor re-recorded')
  t.same(recorded.map((r) => r.version), await shippedVersions('postgres'), 'only the later versions applied')
})
