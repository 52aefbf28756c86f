import { migrationsDirectory, readMigrations } from '../../src/store/migrations.js'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../helpers/app.js'
import { runCli, runCliInProcess } from '../helpers/cli.js'
import { adminQuery, createTestSchema, POSTGRES } from '../helpers/postgres.js'

t.test('db migrate and db seed work on a PostgreSQL schema the server has never opened', async (t) => {
  const schema = await createTestSchema(t)
  const env = { DATABASE_URL: schema.url() }
  // In this process (runCliInProcess); the next test runs both bins as processes on PostgreSQL.

  const migrated = await runCliInProcess('db', ['migrate'], env)
  t.equal(migrated.code, 0, migrated.stderr)
  t.equal(migrated.stdout.trim(), 'postgres: schema up to date')
  const shipped = (await readMigrations(migrationsDirectory('postgres'))).map((m) => ({ version: m.version }))
  t.same(await adminQuery(`SELECT version FROM ${schema.schema}.schema_migrations ORDER BY version`), shipped, 'every migration in the repository recorded')

  const synthetic = await runCliInProcess('db', ['seed', '--synthetic', '25'], env)
  t.equal(synthetic.code, 0, synthetic.stderr)
  t.same(await adminQuery(`SELECT COUNT(*)::int AS pets, MAX(pet_id)::int AS last FROM ${schema.schema}.inventory`), [{ pets: 25, last: 25 }], 'exactly 25 entries on an empty database')

  const file = join(tempDir(t), 'catalogue.json')
  writeFileSync(file, JSON.stringify({
    pets: [{ id: 3, name: 'Renamed', photoUrls: [] }, { id: 100, name: 'New', photoUrls: ['https://x.example/n.jpg'], tags: [{ id: 1, name: 'x' }] }],
    inventory: [{ petId: 100, quantity: 7 }],
    orders: [{ id: 1, petId: 100, quantity: 7, shipDate: '2026-12-01T00:00:00.000Z', status: 'placed', complete: false }]
  }))
  const imported = await runCliInProcess('db', ['seed', file], env)
  t.equal(imported.code, 0, imported.stderr)
  t.equal(imported.stdout.trim(), 'imported 2 pets, 1 inventory entries, 1 orders')
  t.same(await adminQuery(`SELECT p.id::int, p.name, i.quantity FROM ${schema.schema}.pets p JOIN ${schema.schema}.inventory i ON i.pet_id = p.id WHERE p.id IN (3, 100) ORDER BY p.id`),
    [{ id: 3, name: 'Renamed', quantity: 3 }, { id: 100, name: 'New', quantity: 7 }], 'upserted: pet 3 keeps its stock, pet 100 is new')

  const bad = await runCliInProcess('db', ['seed', join(tempDir(t), 'missing.json')], env)
  t.equal(bad.code, 1, 'a missing file is an error')

  const listed = await runCliInProcess('keys', ['list', '--json'], env)
  t.equal(listed.code, 0, listed.stderr)
  t.same(JSON.parse(listed.stdout), [], 'the keys CLI reads the same schema')
})

t.test('on a PostgreSQL database that does not exist: one line, no stack, no password, exit 1', async (t) => {
  const name = `petstore_missing_${randomBytes(4).toString('hex')}`
  const url = `postgres://${POSTGRES.user}:s3cret-pw@${POSTGRES.host}:${POSTGRES.port}/${name}`
  const shown = `postgres://${POSTGRES.user}:***@${POSTGRES.host}:${POSTGRES.port}/${name}`
  const cases: [string, string[], string][] = [
    ['keys', ['list'], 'then run npm run db:migrate'],
    ['keys', ['create', '--plan', 'free'], 'then run npm run db:migrate'],
    ['db', ['seed', '--synthetic', '3'], 'then run npm run db:migrate'],
    ['db', ['migrate'], 'then run this again']
  ]
  for (const [cli, args, next] of cases) {
    const label = `${cli} ${args.join(' ')}`
    const res = await runCli(cli as 'keys' | 'db', args, { DATABASE_URL: url })
    t.equal(res.code, 1, `${label}: exit 1`)
    t.equal(res.stdout, '', `${label}: nothing on stdout`)
    t.equal(res.stderr, `error: PostgreSQL: database "${name}" does not exist (DATABASE_URL=${shown}): create it first (e.g. createdb ${name}), ${next}\n`, `${label}: the one line`)
  }
  t.same(await adminQuery('SELECT datname FROM pg_database WHERE datname = $1', [name]), [], 'no database was created')
})
