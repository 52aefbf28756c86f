import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import type { Catalogue } from '../../src/store/types.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { migrateDatabase, runCli, runCliInProcess } from '../helpers/cli.js'
import { petsRepository } from '../../src/repositories/pets.js'

// Most commands run in this process (runCliInProcess); the bin itself, as a process, is run by
// the tests of a missing database, --help and an unknown command.

/** A database file in a directory that does not exist yet: no server has ever opened it. */
function freshDatabase (t: Parameters<typeof tempDir>[0]) {
  const dir = tempDir(t)
  const file = join(dir, 'never', 'opened', 'petstore.db')
  const url = `sqlite:${file}`
  const counts = () => {
    const db = new Database(file, { readonly: true })
    try {
      const count = (table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n
      return { pets: count('pets'), inventory: count('inventory'), orders: count('orders'), migrations: count('schema_migrations') }
    } finally { db.close() }
  }
  return {
    dir,
    file,
    url,
    counts,
    db: (...args: string[]) => runCliInProcess('db', args, { DATABASE_URL: url }),
    dbProcess: (...args: string[]) => runCli('db', args, { DATABASE_URL: url })
  }
}

const catalogue: Catalogue = {
  pets: [
    { id: 21, name: 'Pip', category: { id: 2, name: 'Cats' }, photoUrls: ['https://img.example/pip.jpg'], tags: [{ id: 9, name: 'shy' }] },
    { id: 22, name: 'Zed', photoUrls: [] }
  ],
  inventory: [{ petId: 21, quantity: 2 }, { petId: 22, quantity: 5 }],
  orders: [{ id: 1, petId: 21, quantity: 2, shipDate: '2026-12-24T09:00:00.000Z', status: 'placed', complete: false }]
}

t.test('db migrate creates the schema on a new database and is idempotent', async (t) => {
  const fresh = freshDatabase(t)
  const first = await fresh.db('migrate')
  t.equal(first.code, 0, 'first run: exit 0')
  t.match(first.stdout, /schema up to date/)
  t.ok(existsSync(fresh.file), 'the database file (and its directories) are created')
  const after = fresh.counts()
  t.ok(after.migrations >= 1, 'migrations are recorded')

  const second = await fresh.db('migrate')
  t.equal(second.code, 0, 'second run: exit 0')
  t.equal(second.stderr, '', 'no complaint on the second run')
  t.same(fresh.counts(), after, 'nothing applied twice')
})

t.test('db seed FILE.json upserts pets, inventory and orders', async (t) => {
  const fresh = freshDatabase(t)
  const file = join(fresh.dir, 'catalogue.json')
  writeFileSync(file, JSON.stringify(catalogue))

  await migrateDatabase(fresh.url)
  const first = await fresh.db('seed', file)
  t.equal(first.code, 0, 'seeds a database the server never opened')
  t.match(first.stdout, /imported 2 pets, 2 inventory entries, 1 orders/)
  t.match(fresh.counts(), { pets: 2, inventory: 2, orders: 1 })

  t.equal((await fresh.db('seed', file)).code, 0, 'the same file again')
  t.match(fresh.counts(), { pets: 2, inventory: 2, orders: 1 }, 'counts are stable: rows are updated, not added')

  const changed: Catalogue = {
    pets: [{ id: 21, name: 'Pip the Second', photoUrls: [] }],
    inventory: [{ petId: 22, quantity: 0 }],
    orders: [{ ...catalogue.orders![0]!, status: 'delivered', complete: true }]
  }
  writeFileSync(file, JSON.stringify(changed))
  t.equal((await fresh.db('seed', file)).code, 0, 'a file with changed values')
  t.match(fresh.counts(), { pets: 2, inventory: 2, orders: 1 })

  // The service sees the imported values (and loads no demo catalogue on top of them).
  const api = await buildTestApp(t, { env: { DATABASE_URL: fresh.url } })
  const headers = await api.authHeader()
  const inventory = (await api.request({ method: 'GET', url: '/v1/inventory', headers })).json()
  t.same(inventory, [{ petId: 21, quantity: 2, status: 'available' }, { petId: 22, quantity: 0, status: 'sold' }], 'quantities updated; the delivered order no longer reserves pet 21')
  t.match((await petsRepository(api.store).get(21)), { name: 'Pip the Second' }, 'the pet was updated')
  t.match((await api.request({ method: 'GET', url: '/v1/store/orders', headers })).json(), [{ id: 1, status: 'delivered', complete: true }])
})

t.test('db seed rejects an invalid file with a clear error and imports nothing', async (t) => {
  const fresh = freshDatabase(t)
  await migrateDatabase(fresh.url)
  const write = (name: string, content: string) => { const f = join(fresh.dir, name); writeFileSync(f, content); return f }
  const cases: [string, string, RegExp][] = [
    ['missing file', join(fresh.dir, 'nope.json'), /cannot read .*nope\.json/],
    ['not JSON', write('broken.json', '{"pets": ['), /cannot read .*broken\.json/],
    ['invalid quantity', write('negative.json', JSON.stringify({ ...catalogue, inventory: [{ petId: 21, quantity: -1 }] })), /catalogue\/inventory\/0\/quantity must be >= 0/],
    ['unknown property', write('extra.json', JSON.stringify({ ...catalogue, customers: [] })), /catalogue must NOT have additional properties/],
    ['an order for an unknown pet', write('orphan.json', JSON.stringify({ ...catalogue, orders: [{ ...catalogue.orders![0]!, petId: 99 }] })), /catalogue\/orders\/0\/petId: no pet 99/]
  ]
  for (const [name, file, message] of cases) {
    const res = await fresh.db('seed', file)
    t.not(res.code, 0, `${name}: non-zero exit`)
    const lines = res.stderr.trim().split('\n')
    t.equal(lines.length, 1, `${name}: one line`)
    t.match(lines[0], message, `${name}: ${lines[0]}`)
    t.notMatch(res.stderr, /\bat .+:\d+:\d+/, `${name}: no stack trace`)
  }
  t.match(fresh.counts(), { pets: 0, inventory: 0, orders: 0 }, 'nothing was imported')

  // Entries may refer to pets imported earlier.
  t.equal((await fresh.db('seed', write('pets.json', JSON.stringify({ pets: catalogue.pets })))).code, 0, 'pets first')
  const later = await fresh.db('seed', write('stock.json', JSON.stringify({ inventory: [{ petId: 22, quantity: 9 }], orders: catalogue.orders })))
  t.equal(later.code, 0, `then stock and orders for those pets ${later.stderr}`)
  t.match(fresh.counts(), { pets: 2, inventory: 2, orders: 1 })
})

t.test('db seed --synthetic N on an empty database gives exactly N inventory entries', async (t) => {
  const fresh = freshDatabase(t)
  await migrateDatabase(fresh.url)
  const res = await fresh.db('seed', '--synthetic', '37')
  t.equal(res.code, 0, 'works on a database the server never opened')
  t.match(fresh.counts(), { pets: 37, inventory: 37, orders: 0 })

  const api = await buildTestApp(t, { env: { DATABASE_URL: fresh.url } })
  const items = (await api.request({ method: 'GET', url: '/v1/inventory', headers: await api.authHeader() })).json() as { petId: number }[]
  t.equal(items.length, 37, 'the API lists exactly N entries (no demo catalogue added)')
  t.same(items.map((i) => i.petId), Array.from({ length: 37 }, (_, i) => i + 1))

  for (const bad of ['0', '1.5']) {
    const wrong = await fresh.db('seed', '--synthetic', bad)
    t.not(wrong.code, 0, `--synthetic ${bad}: non-zero exit`)
    t.match(wrong.stderr.split('\n')[0], /^error: --synthetic must be a whole number/, `--synthetic ${bad}: says why`)
  }
  t.match(fresh.counts(), { pets: 37 }, 'nothing added by the rejected runs')
})

t.test('db seed never creates a database: exit 1, one line naming the path and db:migrate', async (t) => {
  const fresh = freshDatabase(t)
  const file = join(fresh.dir, 'catalogue.json')
  writeFileSync(file, JSON.stringify(catalogue))
  const expected = `error: no database at ${fresh.file} (DATABASE_URL=${fresh.url}): run npm run db:migrate (or start the server) first, or check DATABASE_URL and the working directory\n`
  // The first as a process of its own (the bin's exit status, its real streams), the second in this one.
  for (const [args, run] of [[['seed', file], fresh.dbProcess], [['seed', '--synthetic', '5'], fresh.db]] as const) {
    const label = `db ${args.join(' ')}`
    const res = await run(...args)
    t.equal(res.code, 1, `${label}: exit 1`)
    t.equal(res.stdout, '', `${label}: nothing on stdout`)
    t.equal(res.stderr, expected, `${label}: the one line`)
  }
  t.notOk(existsSync(join(fresh.dir, 'never')), 'neither the file nor its directories were created')

  const migrated = await fresh.db('migrate')
  t.equal(migrated.code, 0, 'db migrate creates it')
  t.equal((await fresh.db('seed', file)).code, 0, 'and seeding works from then on')
  t.match(fresh.counts(), { pets: 2, inventory: 2, orders: 1 })
})

t.test('db --help and -h print the usage on stdout and exit 0', async (t) => {
  // Two of them run the bin as a process (its exit status, its real stdout), two in this process.
  const cases: [string[], typeof runCli][] = [[['--help'], runCli], [['-h'], runCliInProcess], [['seed', '--help'], runCliInProcess], [['migrate', '-h'], runCli]]
  for (const [args, run] of cases) {
    const res = await run('db', args, { DATABASE_URL: 'mysql://x' })
    const label = `db ${args.join(' ')}`
    t.equal(res.code, 0, `${label}: exit 0`)
    t.equal(res.stderr, '', `${label}: nothing on stderr`)
    t.match(res.stdout, /^Usage:\n {2}db migrate\n {2}db seed FILE\.json\n {2}db seed --synthetic N\n {2}db redeliver ENDPOINT_ID --since TIME\n\n/, `${label}: the usage`)
  }
  const bad = await runCli('db', ['frobnicate'], { DATABASE_URL: 'mysql://x' })
  t.equal(bad.code, 2, 'an unknown command is still a usage error')
  t.match(bad.stderr, /^error: unknown command frobnicate\nUsage:/, 'with the usage on stderr')
})
