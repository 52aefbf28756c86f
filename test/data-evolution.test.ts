import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { openapiPath } from '../src/contract/paths.js'
import { issueApiKey } from '../src/repositories/api-keys.js'
import { createPostgresStore } from '../src/store/postgres/index.js'
import { tempDir } from './helpers/app.js'
import { run } from './helpers/cli.js'
import { ALL_SCOPES } from './helpers/contract.js'
import { adminQuery, createTestSchema, POSTGRES_SHOWN } from './helpers/postgres.js'
import { copyProject, headers, json, npmScript, ref, timed as timedStep } from './helpers/project-copy.js'
import { type ServerProcess, startServer } from './helpers/server-process.js'

// Issue 20, "Proof": on a copy of the project, a write operation backed by a new table is added
// the way docs/adding-data.md says: the operations in openapi.yaml,
// generate, a migration per engine, the table in src/store/schema.ts, one repository written
// once, decorated, three handlers (one a paged list, with the API's one cursor and header components:
// issue 40). No cache, batching, invalidation or change-trigger code is
// touched. Then: the copy type-checks; the operations answer through HTTP on SQLite and on
// PostgreSQL; and the coherence run (test/repositories/coherence.ts), with the new write among
// its random operations, finds every cache of two instances sharing a database agreeing with a
// fresh read after every step. The write takes units out of the inventory, so it changes what
// the caches hold (the list, pets' statuses). About 40 s on an idle 2-core machine; the type
// check and the coherence run go on while the servers answer.

t.setTimeout(300_000)

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any -- free edits of a parsed document

const postgresDown = await adminQuery('SELECT 1').then(() => false, (error: unknown) =>
  `PostgreSQL at ${POSTGRES_SHOWN} (TEST_DATABASE_URL) is unreachable (${error instanceof Error ? error.message : String(error)})`)
if (postgresDown !== false) t.comment(`skipped: ${postgresDown}`)

const copy = copyProject(t, ['openapi.yaml', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'handlers', 'scripts', 'test'])

/** Every file of the copy and a digest of its content. */
function contents (dir = copy, found = new Map<string, string>()): Map<string, string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.name === 'node_modules') continue
    if (entry.isDirectory()) contents(path, found)
    else found.set(relative(copy, path), createHash('sha256').update(readFileSync(path)).digest('hex'))
  }
  return found
}
const before = contents()

const npm = (script: string, ...args: string[]) => npmScript(copy, script, ...args)
const read = (file: string) => readFileSync(join(copy, file), 'utf8')
const write = (file: string, content: string) => {
  mkdirSync(join(copy, file, '..'), { recursive: true })
  writeFileSync(join(copy, file), content)
}
/** Inserts `text` after the first match of `after` in `file`; fails when the anchor is gone. */
const insert = (file: string, after: RegExp, text: string) => {
  const source = read(file)
  const match = after.exec(source)
  if (match === null) throw new Error(`${file}: no ${String(after)} to insert after; update this test with the file`)
  const at = match.index + match[0].length
  write(file, source.slice(0, at) + text + source.slice(at))
}
const timed = <T> (step: string, work: () => Promise<T>) => timedStep(t, step, work)
const id = { type: 'integer', format: 'int64', minimum: 1, maximum: 9007199254740991 }
const everyOperation = {
  400: ref('BadRequest'), 401: ref('Unauthorized'), 403: ref('Forbidden'), 404: ref('NotFound'), 405: ref('MethodNotAllowed'), 429: ref('TooManyRequests'), 500: ref('InternalError'), 503: ref('ServiceUnavailable')
}

// The fixture: "holds", units of a pet set aside, under a path no real operation will take.
/** One past the highest number in the engine's migrations folder (numbers may have gaps). */
const migrationNumber = (engine: string) => String(Math.max(0, ...readdirSync(join(copy, 'src', 'store', engine, 'migrations'))
  .map((file) => /^(\d+)_.*\.sql$/.exec(file)?.[1]).filter((n) => n !== undefined).map(Number)) + 1).padStart(3, '0')
const migrations = {
  sqlite: `src/store/sqlite/migrations/${migrationNumber('sqlite')}_zz_fixture_holds.sql`,
  postgres: `src/store/postgres/migrations/${migrationNumber('postgres')}_zz_fixture_holds.sql`
}
const migrationSql = (idColumn: string, petColumn: string) => `-- Never edit a migration that has shipped: add the next number.
-- Units of a pet set aside (fixturePlaceHold). Read by id only, never cached: no change triggers.
CREATE TABLE zz_fixture_holds (
  id ${idColumn},
  pet_id ${petColumn} NOT NULL REFERENCES pets(id) ON DELETE CASCADE,
  quantity INTEGER NOT NULL CHECK (quantity >= 0)
);
`

const fixtureFiles = async () => {
  const spec = parseYaml(read('openapi.yaml')) as Json
  spec.components.schemas.ZzFixtureHoldRequest = {
    type: 'object', additionalProperties: false, required: ['petId', 'quantity'],
    properties: { petId: id, quantity: { type: 'integer', format: 'int32', minimum: 1, maximum: 1000 } }
  }
  spec.components.schemas.ZzFixtureHold = {
    type: 'object', additionalProperties: false, required: ['id', 'petId', 'quantity'],
    properties: { id, petId: id, quantity: { type: 'integer', format: 'int32', minimum: 0, maximum: 1000, description: 'Units taken out of the stock' } }
  }
  spec.paths['/zz-fixture/holds'] = {
    // A paged list, declared as every list of the API is (openapi.yaml, "Paging"): the shared
    // PageLimit and PageCursor parameters, the NextLink header and PageBadRequest; nothing new.
    get: {
      operationId: 'fixtureListHolds',
      tags: ['Inventory'],
      security: [{ bearerAuth: ['inventory:read'] }],
      summary: 'List holds',
      description: 'Every hold, ordered by `id`, one page at a time (see *Paging* in the introduction).',
      parameters: [{ $ref: '#/components/parameters/RequestId' }, { $ref: '#/components/parameters/PageLimit' }, { $ref: '#/components/parameters/PageCursor' }],
      responses: {
        200: { description: 'A page of holds', headers: { ...headers, Link: { $ref: '#/components/headers/NextLink' } }, content: json({ type: 'array', maxItems: 100, items: { $ref: '#/components/schemas/ZzFixtureHold' } }) },
        ...everyOperation,
        400: ref('PageBadRequest')
      }
    },
    post: {
      operationId: 'fixturePlaceHold',
      tags: ['Inventory'],
      security: [{ bearerAuth: ['inventory:write'] }],
      summary: 'Set units of a pet aside',
      description: "Takes up to `quantity` units out of the pet's stock and records them as a hold.",
      parameters: [{ $ref: '#/components/parameters/RequestId' }],
      requestBody: { required: true, content: json({ $ref: '#/components/schemas/ZzFixtureHoldRequest' }) },
      responses: { 201: { description: 'The hold', headers, content: json({ $ref: '#/components/schemas/ZzFixtureHold' }) }, 413: ref('PayloadTooLarge'), 415: ref('UnsupportedMediaType'), ...everyOperation }
    }
  }
  spec.paths['/zz-fixture/holds/{holdId}'] = {
    get: {
      operationId: 'fixtureGetHold',
      tags: ['Inventory'],
      security: [{ bearerAuth: ['inventory:read'] }],
      summary: 'Find a hold by id',
      description: 'Returns one hold. `HEAD` answers as this does, without a body.',
      parameters: [{ name: 'holdId', in: 'path', required: true, schema: id }, { $ref: '#/components/parameters/RequestId' }],
      responses: { 200: { description: 'The hold', headers, content: json({ $ref: '#/components/schemas/ZzFixtureHold' }) }, ...everyOperation }
    }
  }
  write('openapi.yaml', toYaml(spec))
  const generate = await npm('generate')
  if (generate.code !== 0) throw new Error(`generate failed: ${generate.stderr}`)

  write(migrations.sqlite, migrationSql('INTEGER PRIMARY KEY AUTOINCREMENT', 'INTEGER'))
  write(migrations.postgres, migrationSql('BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY', 'BIGINT'))

  insert('src/store/schema.ts', /export interface Database \{\n/, '  zz_fixture_holds: ZzFixtureHoldsTable\n')
  insert('src/store/schema.ts', /export const primaryKeyOf[^{]*\{\n/, "  zz_fixture_holds: 'id',\n")
  write('src/store/schema.ts', read('src/store/schema.ts') + `
/** Units of a pet set aside (fixturePlaceHold). */
export interface ZzFixtureHoldsTable {
  id: Generated<number>
  pet_id: number
  quantity: number
}
`)

  write('src/repositories/zz-fixture-holds.ts', `import { statement, type Arg } from '../store/query.js'
import { all, first, lockRow, run, type DataAccess, type Work } from '../store/work.js'

export interface Hold {
  id: number
  petId: number
  /** Units taken out of the stock. */
  quantity: number
}

export interface HoldsRepository {
  /** Takes up to \`quantity\` units out of the pet's stock and records them; undefined without an inventory entry. */
  place (petId: number, quantity: number): Promise<Hold | undefined>
  get (id: number): Promise<Hold | undefined>
  /** Up to \`limit\` holds after \`afterId\`, in id order, and whether more follow. */
  page (afterId: number | undefined, limit: number): Promise<{ holds: Hold[], more: boolean }>
}

const holdColumns = ['id', 'pet_id as petId', 'quantity'] as const

const q = {
  stock: statement('holds.stock', (db, arg: Arg<{ petId: number }>) => db
    .selectFrom('inventory').select('quantity').where('pet_id', '=', arg('petId'))),
  takeFromStock: statement('holds.takeFromStock', (db, arg: Arg<{ petId: number, quantity: number }>) => db
    .updateTable('inventory').set((eb) => ({ quantity: eb('quantity', '-', arg('quantity')) })).where('pet_id', '=', arg('petId'))),
  insert: statement('holds.insert', (db, arg: Arg<{ petId: number, quantity: number }>) => db
    .insertInto('zz_fixture_holds').values({ pet_id: arg('petId'), quantity: arg('quantity') }).returning(holdColumns)),
  byId: statement('holds.byId', (db, arg: Arg<{ id: number }>) => db
    .selectFrom('zz_fixture_holds').select(holdColumns).where('id', '=', arg('id'))),
  page: statement('holds.page', (db, arg: Arg<{ afterId: number, limit: number }>) => db
    .selectFrom('zz_fixture_holds').select(holdColumns).where('id', '>', arg('afterId')).orderBy('id').limit(arg('limit')))
}

function * place (petId: number, quantity: number): Work<Hold | undefined> {
  yield * lockRow('inventory', petId)
  const entry = yield * first(q.stock, { petId })
  if (entry === undefined) return undefined
  const taken = Math.min(quantity, entry.quantity)
  yield * run(q.takeFromStock, { petId, quantity: taken })
  const hold = yield * first(q.insert, { petId, quantity: taken })
  if (hold === undefined) throw new Error('the hold insert returned no row')
  return hold
}

export function holdsRepository (data: DataAccess): HoldsRepository {
  return {
    place: (petId, quantity) => data.write(() => place(petId, quantity)),
    get: (id) => data.read(() => first(q.byId, { id })),
    page: (afterId, limit) => data.read(function * () {
      const rows = yield * all(q.page, { afterId: afterId ?? 0, limit: limit + 1 })
      return { holds: rows.slice(0, limit), more: rows.length > limit }
    })
  }
}
`)

  const plugin = 'src/plugins/app/repositories.ts'
  insert(plugin, /^import fp from 'fastify-plugin'\n/m, "import { holdsRepository, type HoldsRepository } from '../../repositories/zz-fixture-holds.js'\n")
  insert(plugin, /const \{ store \} = app\n/, "  app.decorate('holdsRepository', holdsRepository(store))\n")
  insert(plugin, /interface FastifyInstance \{\n/, '    holdsRepository: HoldsRepository\n')

  write('handlers/fixturePlaceHold.ts', `import { notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** POST /v1/zz-fixture/holds: sets units of a pet aside. */
export const fixturePlaceHold: OperationHandler<'fixturePlaceHold'> = async (request, reply) => {
  const { petId, quantity } = request.body
  const hold = await request.server.holdsRepository.place(petId, quantity)
  if (hold === undefined) throw notFound(\`no inventory entry for pet \${petId}\`)
  return reply.code(201).send(hold)
}
`)
  write('handlers/fixtureListHolds.ts', `import { nextPageLink } from '../src/contract/paging.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** GET /v1/zz-fixture/holds: one page of holds, with a \`Link\` to the next while more follow. */
export const fixtureListHolds: OperationHandler<'fixtureListHolds'> = async (request, reply) => {
  const { limit = 100, cursor } = request.query
  const { paging } = request.server
  const page = await request.server.holdsRepository.page(paging.after('holds', {}, cursor), limit)
  const last = page.holds.at(-1)
  if (page.more && last !== undefined) reply.header('link', nextPageLink('/v1/zz-fixture/holds', { limit }, paging.cursor('holds', {}, last.id)))
  return page.holds
}
`)
  write('handlers/fixtureGetHold.ts', `import { notFound } from '../src/contract/errors.js'
import type { OperationHandler } from '../src/contract/operation-types.js'

/** GET /v1/zz-fixture/holds/{holdId}: one hold. */
export const fixtureGetHold: OperationHandler<'fixtureGetHold'> = async (request) => {
  const { holdId } = request.params
  const hold = await request.server.holdsRepository.get(holdId)
  if (hold === undefined) throw notFound(\`no hold with id \${holdId}\`)
  return hold
}
`)

  // The new write joins the random operations of the coherence run; nothing of the run changes.
  write('test/repositories/zz-fixture-holds-coherence.test.ts', `import t from 'tap'
import { holdsRepository } from '../../src/repositories/zz-fixture-holds.js'
import { coherenceSuite, PETS } from './coherence.js'

let taken = 0
coherenceSuite(t, [async (i, random) => {
  const petId = PETS[random(PETS.length)]!
  const hold = await holdsRepository(i.store).place(petId, 1)
  taken += hold?.quantity ?? 0
  return \`hold \${petId}: \${hold?.quantity ?? 'no entry'}\`
}])
t.test('the holds took units out of the stock the caches hold', async (t) => { t.ok(taken > 0, \`\${taken} units taken\`) })
`)
}

t.test('a write backed by a new table, added with no change to caches or batching', { skip: postgresDown }, async (t) => {
  await timed('write the fixture and generate', fixtureFiles)

  const after = contents()
  const touched = [...after.keys()].filter((file) => before.get(file) !== after.get(file)).sort()
  t.comment(`files the fixture touched:\n${touched.map((file) => `  ${before.has(file) ? 'M' : 'A'} ${file}`).join('\n')}`)
  t.same(touched, [
    'handlers/fixtureGetHold.ts', 'handlers/fixtureListHolds.ts', 'handlers/fixturePlaceHold.ts', 'handlers/index.ts', 'openapi.yaml',
    'src/generated/openapi.ts', 'src/plugins/app/repositories.ts', 'src/repositories/zz-fixture-holds.ts',
    migrations.postgres, 'src/store/schema.ts', migrations.sqlite,
    'test/repositories/zz-fixture-holds-coherence.test.ts'
  ].sort(), 'the files of "Adding data", and no others')
  const components = (file: string) => { const { schemas, ...shared } = (parseYaml(file) as Json).components as Json; return { shared, schemas: Object.keys(schemas as Json) } }
  const [original, edited] = [components(readFileSync(openapiPath, 'utf8')), components(read('openapi.yaml'))]
  t.same(edited.shared, original.shared, 'the paged list needs no new parameter, header or response component')
  t.same(edited.schemas.filter((name) => !original.schemas.includes(name)), ['ZzFixtureHoldRequest', 'ZzFixtureHold'], 'only the fixture\'s own schemas are added')
  t.same(touched.filter((file) => file.startsWith('src/contract/')), [], 'no paging code is added or changed')
  t.same(touched.filter((file) => file.startsWith('src/store/') && file !== 'src/store/schema.ts' && !file.endsWith('.sql')), [],
    'no code of the store (caches, group commit, change feed, work runners) is touched')

  // The type check and the coherence run take the longest: they go on while the servers answer.
  const typecheck = timed('typecheck (src and handlers)', () => run('sh', ['-c', `cd "${copy}" && npx tsc -p tsconfig.build.json --noEmit`], {}, 240_000))
  const coherence = timed('coherence run with the new write', () =>
    // Run as a plain script, tap's own time limit applies (30 s): a busy machine needs more.
    run('sh', ['-c', `cd "${copy}" && node --import tsx test/repositories/zz-fixture-holds-coherence.test.ts`], { TAP_TIMEOUT: '240' }, 240_000))

  const { schema, url } = await createTestSchema(t)
  const servers = await timed('start a server on each engine', () => Promise.all([
    startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'holds.db')}` }, 60_000, join(copy, 'src', 'server.ts')),
    startServer(t, { DATABASE_URL: url() }, 60_000, join(copy, 'src', 'server.ts'))
  ]))
  // PostgreSQL gets no demo key: one is made in the schema the server migrated.
  const keyStore = createPostgresStore(url())
  const postgresKey = (await issueApiKey(keyStore, { name: 'data-evolution', plan: 'free', scopes: ALL_SCOPES })).secret
  const readOnlyKey = (await issueApiKey(keyStore, { name: 'read only', plan: 'free', scopes: ['inventory:read'] })).secret
  await keyStore.close()

  let postgresStock = 0
  for (const [engine, server, key] of [['SQLite', servers[0], servers[0].demoKey], ['PostgreSQL', servers[1], postgresKey]] as [string, ServerProcess, string | undefined][]) {
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.baseUrl}/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await res.text()
      return { status: res.status, body: text === '' ? undefined : JSON.parse(text) as Json }
    }
    const entry = async (petId: number) => ((await call('GET', '/inventory')).body as unknown as Json[]).find((item) => item.petId === petId)
    // Read first, so that the list and the pet are cached when the write comes.
    const stock = (await entry(1))?.quantity as number
    if (server === servers[1]) postgresStock = stock
    t.equal((await call('GET', '/pets/1')).body?.status, 'available', `${engine}: pet 1 is available before (the demo catalogue)`)

    const first = await call('POST', '/zz-fixture/holds', { petId: 1, quantity: stock - 1 })
    t.match(first, { status: 201, body: { petId: 1, quantity: stock - 1 } }, `${engine}: a hold of all units but one`)
    t.same(await call('GET', `/zz-fixture/holds/${String(first.body?.id)}`), { status: 200, body: first.body }, `${engine}: read back by id`)
    t.same(await entry(1), { petId: 1, quantity: 1, status: 'available' }, `${engine}: the inventory list shows it at once`)
    const second = await call('POST', '/zz-fixture/holds', { petId: 1, quantity: 5 })
    t.match(second, { status: 201, body: { petId: 1, quantity: 1 } }, `${engine}: a hold takes what is left`)
    t.same(await entry(1), { petId: 1, quantity: 0, status: 'sold' }, `${engine}: the list follows`)
    t.equal((await call('GET', '/pets/1')).body?.status, 'sold', `${engine}: and so does the cached pet`)

    // The paged list: the first page links to the next, whose cursor the list signed; the last has no link.
    const pageOne = await fetch(`${server.baseUrl}/v1/zz-fixture/holds?limit=1`, { headers: { authorization: `Bearer ${key}` } })
    t.same(await pageOne.json(), [first.body], `${engine}: the first page of holds`)
    const next = /^<(\/v1\/zz-fixture\/holds\?limit=1&cursor=[A-Za-z0-9_-]{34})>; rel="next"$/.exec(pageOne.headers.get('link') ?? '')
    t.ok(next, `${engine}: a Link to the next page, with the shared cursor (${pageOne.headers.get('link')})`)
    const pageTwo = await fetch(`${server.baseUrl}${next?.[1] ?? ''}`, { headers: { authorization: `Bearer ${key}` } })
    t.same(await pageTwo.json(), [second.body], `${engine}: the second page`)
    t.equal(pageTwo.headers.get('link'), null, `${engine}: the last page links nowhere`)
    const cursor = new URL(next?.[1] ?? '/', server.baseUrl).searchParams.get('cursor') ?? ''
    const forged = cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'AQ' : 'AA')
    t.match(await call('GET', `/zz-fixture/holds?cursor=${forged}`), { status: 400, body: { code: 'invalid_request', message: /cursor/ } }, `${engine}: an edited cursor is refused`)
    t.match(await call('GET', '/zz-fixture/holds?limit=101'), { status: 400, body: { code: 'invalid_request' } }, `${engine}: a limit past 100 is refused`)

    t.same(await call('POST', '/zz-fixture/holds', { petId: 999999, quantity: 1 }),
      { status: 404, body: { code: 'not_found', message: 'no inventory entry for pet 999999', status: 404 } }, `${engine}: a pet without inventory entry`)
    t.same(await call('GET', '/zz-fixture/holds/999999'), { status: 404, body: { code: 'not_found', message: 'no hold with id 999999', status: 404 } }, `${engine}: an unknown hold`)
    t.match(await call('POST', '/zz-fixture/holds', { petId: 1, quantity: 0 }), { status: 400, body: { code: 'invalid_request' } }, `${engine}: the body is validated from openapi.yaml`)
    if (server === servers[1]) {
      const refused = await fetch(`${server.baseUrl}/v1/zz-fixture/holds`, { method: 'POST', headers: { authorization: `Bearer ${readOnlyKey}`, 'content-type': 'application/json' }, body: '{"petId":1,"quantity":1}' })
      t.equal(refused.headers.get('www-authenticate'), 'Bearer realm="petstore", error="insufficient_scope", scope="inventory:write"', `${engine}: the scope its security requirement names is enforced (403)`)
      t.equal((await fetch(`${server.baseUrl}/v1/zz-fixture/holds`, { headers: { authorization: `Bearer ${readOnlyKey}` } })).status, 200, `${engine}: and the read's scope is enough to list`)
    }
    t.equal(await server.stop(), 0, `${engine}: the server stops cleanly`)
  }
  t.same(await adminQuery(`SELECT pet_id::int AS "petId", quantity FROM ${schema}.zz_fixture_holds ORDER BY id`), [{ petId: 1, quantity: postgresStock - 1 }, { petId: 1, quantity: 1 }], 'PostgreSQL: the rows are in the new table')

  const checked = await typecheck
  t.equal(checked.code, 0, `the copy type-checks ${checked.stdout}${checked.stderr}`)
  const coherent = await coherence
  t.equal(coherent.code, 0, 'the coherence run passes on both engines', { output: coherent.stdout.split('\n').filter((line) => /^\s*(not ok|# )/.test(line)).join('\n') })
  t.match(coherent.stdout, /^ok \d+ - SQLite: /m, 'on SQLite')
  t.match(coherent.stdout, /^ok \d+ - PostgreSQL: /m, 'on PostgreSQL')
  t.match(coherent.stdout, /^\s*ok \d+ - [1-9]\d* units taken/m, 'the new write changed what the caches hold')
  t.notMatch(coherent.stdout, /^\s*not ok/m, 'no failure')
})
