/**
 * API keys at rest and in use (README.md (API keys)).
 *
 * At rest: keys made the way an operator makes them (the keys CLI) exist in the database only as
 * their SHA-256: neither the rows of any table nor any byte of the database files (SQLite's
 * main file and WAL) hold the secret; on PostgreSQL no row of any table of the schema does.
 *
 * In use: a presented key is never compared with stored secrets, so no comparison can stop early
 * at the first differing character of a secret. The server hashes the presented key and looks
 * the digest up with one equality query: what the storage compares is SHA-256(presented), whose
 * bytes an attacker cannot steer toward a stored digest one character at a time. This is proven
 * structurally rather than by timing (timing tests are noisy, and a benchmark's business): a
 * recording store sees, for each request, exactly one credential lookup, whose argument is the
 * SHA-256 of the presented token, and no call of any kind carries the token itself.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { createStore } from '../../src/store/create-store.js'
import type { Store } from '../../src/store/types.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { migrateDatabase, runCli } from '../helpers/cli.js'
import { adminQuery, createTestSchema, POSTGRES_SHOWN } from '../helpers/postgres.js'

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

interface Created { id: string, key: string }

async function createKeysWithCli (databaseUrl: string): Promise<Created[]> {
  const created: Created[] = []
  for (const args of [['--plan', 'pro', '--name', 'partner'], ['--plan', 'enterprise', '--per-minute', '5000', '--per-day', '900000']]) {
    const result = await runCli('keys', ['create', ...args, '--json'], { DATABASE_URL: databaseUrl })
    if (result.code !== 0) throw new Error(`keys create failed (${String(result.code)}): ${result.stderr}`)
    created.push(JSON.parse(result.stdout) as Created)
  }
  return created
}

t.test('SQLite: keys exist only as their SHA-256, in every table and every byte of the database files', async (t) => {
  const dir = tempDir(t)
  const databaseUrl = `sqlite:${join(dir, 'keys.db')}`
  await migrateDatabase(databaseUrl) // keys never creates a database (docs/administration.md)
  const keys = await createKeysWithCli(databaseUrl)

  // Every row of every table, read straight from the file (not through the Store interface).
  const db = new Database(join(dir, 'keys.db'), { readonly: true })
  t.teardown(() => db.close())
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name)
  const everything = JSON.stringify(Object.fromEntries(tables.map((name) => [name, db.prepare(`SELECT * FROM "${name}"`).all()])))
  for (const { id, key } of keys) {
    t.match(key, /^psk_[A-Za-z0-9_-]{43}$/, 'the CLI printed a psk_ secret once')
    t.notOk(everything.includes(key.slice(4)), `no table holds the secret of ${id}`)
    const row = db.prepare('SELECT key_hash FROM api_keys WHERE id = ?').get(id) as { key_hash: string }
    t.equal(row.key_hash, sha256(key), `${id} is stored as the SHA-256 of its secret`)
  }

  // Every byte the database wrote (main file, WAL, shared memory): the hex digests are there,
  // which shows the scan reads the data; the secrets are not.
  const bytes = Buffer.concat(readdirSync(dir).filter((f) => f.startsWith('keys.db')).map((f) => readFileSync(join(dir, f))))
  for (const { id, key } of keys) {
    t.ok(bytes.includes(sha256(key)), `the digest of ${id} is in the database files`)
    t.notOk(bytes.includes(key.slice(4)), `the secret of ${id} is in no byte of the database files`)
    t.notOk(bytes.includes(Buffer.from(key.slice(4), 'base64url')), `nor are its raw random bytes`)
  }
})

const postgresSkip = await adminQuery('SELECT 1').then(() => false, (error: Error) => `PostgreSQL is not reachable at ${POSTGRES_SHOWN} (TEST_DATABASE_URL) (${error.message})`)

t.test('PostgreSQL: keys exist only as their SHA-256 in every table of the schema', { skip: postgresSkip }, async (t) => {
  const schema = await createTestSchema(t)
  const keys = await createKeysWithCli(schema.url())
  const tables = await adminQuery<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [schema.schema])
  t.ok(tables.some((r) => r.table_name === 'api_keys'), 'the schema has the api_keys table')
  let everything = ''
  for (const { table_name: name } of tables) {
    const rows = await adminQuery(`SELECT row_to_json(r)::text AS row FROM "${schema.schema}"."${name}" r`)
    everything += rows.map((r) => String(r.row)).join('\n')
  }
  for (const { id, key } of keys) {
    t.notOk(everything.includes(key.slice(4)), `no table holds the secret of ${id}`)
    const [row] = await adminQuery<{ key_hash: string }>(`SELECT key_hash FROM "${schema.schema}".api_keys WHERE id = $1`, [id])
    t.equal(row?.key_hash, sha256(key), `${id} is stored as the SHA-256 of its secret`)
  }
})

/** A store that records every call made to it and to its caches, with its arguments. */
function recording (store: Store): { store: Store, calls: { method: string, args: unknown[] }[] } {
  const calls: { method: string, args: unknown[] }[] = []
  const record = <T extends object>(target: T, prefix: string): T => new Proxy(target, {
    get (on, property, receiver) {
      const value = Reflect.get(on, property, receiver) as unknown
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        calls.push({ method: `${prefix}${String(property)}`, args })
        return (value as (...a: unknown[]) => unknown).apply(on, args)
      }
    }
  })
  const caches = { activeKeys: record(store.caches.activeKeys, 'activeKeys.') }
  const proxy = new Proxy(store, {
    get (target, property, receiver) {
      if (property === 'caches') return caches
      const value = Reflect.get(target, property, receiver) as unknown
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        calls.push({ method: String(property), args })
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    }
  })
  return { store: proxy, calls }
}

t.test('a presented key is hashed, then looked up by its digest: never compared with a stored secret', async (t) => {
  const inner = await createStore(`sqlite:${join(tempDir(t), 'spy.db')}`)
  const spy = recording(inner)
  const api = await buildTestApp(t, { store: spy.store })
  const valid = await api.createKey('enterprise', { perMinute: 1_000_000, perDay: 10_000_000 })

  // Tokens that share ever longer prefixes with the real key: a short-circuiting comparison of
  // secrets would spend longer on each. Here each becomes one digest lookup, like any other.
  let verified = false
  const tokens = [valid, valid, `${valid.slice(0, -1)}${valid.endsWith('A') ? 'B' : 'A'}`, valid.slice(0, 30), valid.slice(0, 4), 'psk_' + 'A'.repeat(43), 'x']
  for (const token of tokens) {
    spy.calls.length = 0
    const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: { authorization: `Bearer ${token}` } })
    t.equal(res.statusCode, token === valid ? 200 : 401, `token of ${token.length} chars: ${res.statusCode}`)

    // A key this instance has not verified is looked up with others (getMany), a known one alone (get).
    const lookups = spy.calls.filter((c) => c.method.startsWith('activeKeys.'))
    t.same(lookups.map((c) => c.args[0]), [token === valid && verified ? sha256(token) : [sha256(token)]], 'exactly one lookup, by the SHA-256 of the presented token')
    if (token === valid) verified = true
    t.notOk(spy.calls.some((c) => c.method === 'read' && String(c.args[0]).includes('apiKeys.list')), 'keys are never listed to be compared')
    const carried = spy.calls.filter((c) => JSON.stringify(c.args.filter((arg) => typeof arg !== 'function')).includes(token))
    t.same(carried.map((c) => c.method), [], 'no store call receives the presented token itself')
  }
})
