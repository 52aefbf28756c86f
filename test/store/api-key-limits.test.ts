/**
 * The database refuses an API key row without valid limits (migration 004 on SQLite, 005 on PostgreSQL), on both engines:
 * an unknown plan, or an enterprise key without both of its own limits above 0. The store turns
 * the refusal into InvalidApiKeyError; keys stored before the migration that break the rule are
 * revoked by it, so no request can meet one.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { apiKeysRepository, InvalidApiKeyError, issueApiKey } from '../../src/repositories/api-keys.js'
import { migrationsDirectory } from '../../src/store/migrations.js'
import { createPostgresStore } from '../../src/store/postgres/index.js'
import { createSqliteStore } from '../../src/store/sqlite/index.js'
import type { Store } from '../../src/store/types.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { adminQuery, createTestSchema } from '../helpers/postgres.js'
import { ALL_SCOPES } from '../helpers/contract.js'

const refused: [string, { plan: string, perMinute?: number, perDay?: number }][] = [
  ['an unknown plan', { plan: 'gold' }],
  ['a plan in another case', { plan: 'Free' }],
  ['enterprise without limits', { plan: 'enterprise' }],
  ['enterprise with a per-minute limit only', { plan: 'enterprise', perMinute: 10 }],
  ['enterprise with a per-day limit only', { plan: 'enterprise', perDay: 10 }],
  ['enterprise with a limit of 0', { plan: 'enterprise', perMinute: 0, perDay: 10 }]
]
const accepted = [{ plan: 'free' }, { plan: 'pro' }, { plan: 'business' }, { plan: 'enterprise', perMinute: 1, perDay: 1 }]

for (const engine of ['sqlite', 'postgres'] as const) {
  t.test(`${engine}: a key row without valid limits is refused, with a clear error`, async (t) => {
    let store: Store
    let insertRaw: (plan: string, perMinute: number | null) => Promise<unknown>
    if (engine === 'sqlite') {
      const file = join(tempDir(t), 'keys.db')
      store = createSqliteStore(file)
      insertRaw = async (plan, perMinute) => {
        const db = new Database(file)
        try {
          db.prepare("INSERT INTO api_keys (id, name, plan, key_hash, per_minute, per_day, created_at) VALUES (?, 'raw', ?, ?, ?, NULL, '2026-01-01')")
            .run(`key_raw_${plan}`, plan, `hash_raw_${plan}`, perMinute)
        } finally {
          db.close()
        }
      }
    } else {
      const { url, schema } = await createTestSchema(t)
      store = createPostgresStore(url(), { poolMax: 2 })
      insertRaw = (plan, perMinute) => adminQuery(`INSERT INTO ${schema}.api_keys (id, name, plan, key_hash, per_minute, per_day, created_at) VALUES ($1, 'raw', $2, $3, $4, NULL, '2026-01-01')`,
        [`key_raw_${plan}`, plan, `hash_raw_${plan}`, perMinute])
    }
    t.teardown(() => store.close())
    await store.migrate()

    for (const [what, request] of refused) {
      await t.rejects(issueApiKey(store, { name: what, ...request, scopes: ALL_SCOPES }), InvalidApiKeyError, `${what}: InvalidApiKeyError`)
    }
    const error = await issueApiKey(store, { name: 'x', plan: 'enterprise', scopes: ALL_SCOPES }).then(() => undefined, (e: unknown) => e as Error)
    t.equal(error?.message, 'the database refuses a key on plan "enterprise" with per-minute none and per-day none: the plan must be free, pro, business or enterprise, and an enterprise key needs both limits above 0', 'the message says what is wrong')
    for (const request of accepted) {
      await t.resolves(issueApiKey(store, { name: 'ok', ...request, scopes: ALL_SCOPES }), `${JSON.stringify(request)} is accepted`)
    }
    await t.rejects(insertRaw('gold', null), `${engine}: plain SQL cannot insert one either`)
    await t.rejects(insertRaw('enterprise', 5), `${engine}: nor an enterprise key with one limit`)
    t.equal(await apiKeysRepository(store).count(), accepted.length, 'only the valid keys are stored')
  })
}

t.test('SQLite: keys stored before migration 004 that break the rule are revoked by it', async (t) => {
  const file = join(tempDir(t), 'old.db')
  const old = new Database(file)
  for (const version of [1, 2]) {
    const name = version === 1 ? '001_initial.sql' : '002_list_changes.sql'
    old.exec(readFileSync(join(migrationsDirectory('sqlite'), name), 'utf8'))
  }
  old.exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
    INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00.000Z'), (2, '2026-01-01T00:00:00.000Z');
    INSERT INTO api_keys (id, name, plan, key_hash, per_minute, per_day, created_at) VALUES
      ('key_bad', 'no limits', 'enterprise', 'hash_bad', NULL, NULL, '2026-01-01'),
      ('key_gold', 'unknown plan', 'gold', 'hash_gold', NULL, NULL, '2026-01-01'),
      ('key_good', 'fine', 'enterprise', 'hash_good', 5, 50, '2026-01-01')`)
  old.close()
  const store = createSqliteStore(file)
  t.teardown(() => store.close())
  await store.migrate()
  t.equal(await apiKeysRepository(store).findActive('hash_bad'), undefined, 'the enterprise key without limits is revoked')
  t.equal(await apiKeysRepository(store).findActive('hash_gold'), undefined, 'the key on an unknown plan too')
  t.match(await apiKeysRepository(store).findActive('hash_good'), { id: 'key_good', perMinute: 5, perDay: 50 }, 'a valid key is untouched')
  t.equal((await apiKeysRepository(store).list()).length, 3, 'nothing deleted: the refused keys are kept, revoked')
})

t.test('through the API: the test helper\'s enterprise key has its limits, and is served', async (t) => {
  const api = await buildTestApp(t)
  const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: await api.authHeader('enterprise') })
  t.equal(res.statusCode, 200, 'an enterprise key is served (it answered 500 without limits)')
  t.equal(res.headers['x-ratelimit-limit'], '100000', 'counted against its own per-minute limit')
})
