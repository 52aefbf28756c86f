import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { loadConfig } from '../../src/config.js'
import { ensureDemoKey } from '../../src/startup.js'
import { createStore } from '../../src/store/create-store.js'
import { adminQuery, createTestSchema } from '../helpers/postgres.js'
import { startServer } from '../helpers/server-process.js'
import { apiKeysRepository } from '../../src/repositories/api-keys.js'
import { ALL_SCOPES } from '../helpers/contract.js'

t.test('DATABASE_POOL_MAX and DATABASE_TIMEOUT_MS: defaults, and one-line errors for bad values', async (t) => {
  const config = loadConfig({})
  t.equal(config.databasePoolMax, 10)
  t.equal(config.databaseTimeoutMs, 5000)
  t.same({ ...loadConfig({ DATABASE_POOL_MAX: '25', DATABASE_TIMEOUT_MS: '750' }) }, { ...config, databasePoolMax: 25, databaseTimeoutMs: 750 })
  const bad: [string, string, RegExp][] = [
    ['DATABASE_POOL_MAX', '0', /^Invalid configuration: DATABASE_POOL_MAX must be >= 1 \(got "0"\)$/],
    ['DATABASE_POOL_MAX', 'ten', /^Invalid configuration: DATABASE_POOL_MAX must be a whole number in plain decimal digits \(got "ten"\)$/],
    ['DATABASE_POOL_MAX', '1001', /DATABASE_POOL_MAX must be <= 1000/],
    ['DATABASE_TIMEOUT_MS', '50', /DATABASE_TIMEOUT_MS must be >= 100/],
    ['DATABASE_TIMEOUT_MS', '1.5', /DATABASE_TIMEOUT_MS must be a whole number in plain decimal digits/]
  ]
  for (const [name, value, message] of bad) {
    t.throws(() => loadConfig({ [name]: value }), { name: 'ConfigError', message }, `${name}=${value}`)
  }
})

t.test('the demo key is created on the embedded SQLite database only, never on PostgreSQL', async (t) => {
  const schema = await createTestSchema(t)
  const config = loadConfig({ DATABASE_URL: schema.url() })
  t.equal(config.nodeEnv, 'development', 'outside production')
  const postgres = await createStore(config.databaseUrl)
  t.teardown(() => postgres.close())
  await postgres.migrate()
  t.equal(await apiKeysRepository(postgres).count(), 0, 'with no keys at all')
  t.equal(await ensureDemoKey(postgres, config, ALL_SCOPES), undefined, 'PostgreSQL: no demo key')
  t.equal(await apiKeysRepository(postgres).count(), 0, 'and none stored')

  // The same conditions on SQLite do create one, so the refusal above is the engine's doing.
  const sqlite = await createStore('sqlite::memory:')
  t.teardown(() => sqlite.close())
  await sqlite.migrate()
  t.match(await ensureDemoKey(sqlite, config, ALL_SCOPES), /^psk_/, 'SQLite: a demo key')
  const production = await createStore('sqlite::memory:')
  t.teardown(() => production.close())
  await production.migrate()
  t.equal(await ensureDemoKey(production, { ...config, nodeEnv: 'production' }, ALL_SCOPES), undefined, 'SQLite in production: none')

  // The server's own first start on a fresh PostgreSQL schema prints no key either.
  const fresh = await createTestSchema(t)
  const server = await startServer(t, { DATABASE_URL: fresh.url() })
  t.equal(server.demoKey, undefined, 'the start-up line carries no demo key')
  t.same(await adminQuery(`SELECT COUNT(*)::int AS n FROM ${fresh.schema}.api_keys`), [{ n: 0 }], 'the server created no key')
  t.equal(await server.stop(), 0, 'the server stops cleanly')
})

t.test('the DATABASE_URL examples of docs/operations.md start without a warning from the driver', async (t) => {
  const text = readFileSync(join(projectRoot, 'docs', 'operations.md'), 'utf8')
  const examples = [...text.matchAll(/DATABASE_URL=(postgres(?:ql)?:\/\/[\w.:@%/?=&-]+)/g)].map((match) => match[1]!).filter((url) => url.includes('/', 13))
  t.ok(examples.some((url) => url.includes('sslmode=')), 'the docs show TLS settings')
  // What the pool does with the address when it opens a connection, in a process of its own: pg
  // warns once per process, on stderr.
  const parse = (url: string) => spawnSync(process.execPath, ['--input-type=module', '-e',
    `import pg from 'pg'; new pg.Client({ connectionString: ${JSON.stringify(url)} })`], { cwd: projectRoot, encoding: 'utf8' })
  for (const url of examples) {
    const { status, stderr } = parse(url)
    t.equal(status, 0)
    t.equal(stderr, '', `${url.replace(/:[^:@/]+@/, ':***@')}: nothing on stderr`)
  }
  t.match(parse('postgres://db.example/petstore?sslmode=require').stderr, /SECURITY WARNING/, 'as sslmode=require would print')
})
