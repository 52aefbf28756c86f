/**
 * Storage faults: a full disk and a file system gone read-only are answered 503
 * service_unavailable with Retry-After, /readyz says storage while writes fail (from the failed
 * write on, on both engines), and the service recovers without a restart. A database the process
 * cannot write, or one that belongs to another application, is refused at start with one line.
 * Real processes, except where the readiness clock is held still (an app in this process).
 */
import { spawnSync } from 'node:child_process'
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'
import { run, runCli } from '../helpers/cli.js'
import { adminQuery, createTestSchema } from '../helpers/postgres.js'
import { startServer } from '../helpers/server-process.js'

/** Mounts a small tmpfs of its own on a temporary directory (unmounted in teardown). */
function smallFileSystem (t: Test, size: string): string {
  const dir = tempDir(t)
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' })
  if (mounted.status !== 0) throw new Error(`mount failed: ${mounted.stderr}`)
  // Lazy: the server may still hold the files when the teardown runs.
  t.teardown(() => { spawnSync('umount', ['-l', dir]) })
  return dir
}

/** Whether a tmpfs can be mounted here (it needs root, and a kernel and container that allow it); else why not. */
function cannotMount (): string | false {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-mount-'))
  try {
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { encoding: 'utf8' })
    if (mounted.status !== 0) return `cannot mount a tmpfs (${(mounted.stderr || mounted.error?.message || 'mount failed').trim()}): the storage-fault cases did not run`
    spawnSync('umount', [dir])
    return false
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
const noMount = cannotMount()

/** Fills the file system that holds `dir` until the disk is full. */
function fillUp (dir: string): string {
  const filler = join(dir, 'filler')
  const fd = openSync(filler, 'w')
  const block = Buffer.alloc(64 * 1024)
  try {
    for (;;) writeSync(fd, block)
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOSPC') throw error
  } finally {
    closeSync(fd)
  }
  return filler
}

/** /readyz until it answers `status` (a result is reused for up to a second). */
async function readyzUntil (baseUrl: string, status: number): Promise<{ status: number, body: unknown }> {
  for (let tries = 0; ; tries++) {
    const res = await fetch(`${baseUrl}/readyz`)
    const body = await res.json() as unknown
    if (res.status === status || tries === 50) return { status: res.status, body }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const patchQuantity = (baseUrl: string, key: string, quantity: number) => fetch(`${baseUrl}/v1/inventory/1`, {
  method: 'PATCH',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ quantity })
})

const unavailable = { code: 'service_unavailable', message: 'storage is unavailable, retry later', status: 503 }
const notReady = { code: 'service_unavailable', message: 'not ready: storage unavailable', status: 503 }

t.test('SQLite on a full disk: writes are 503 with Retry-After, /readyz names storage, then it recovers', { skip: noMount }, async (t) => {
    const dir = smallFileSystem(t, '4m')
    mkdirSync(join(dir, 'db'))
    const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'db', 'p.db')}` })
    t.equal((await patchQuantity(server.baseUrl, server.demoKey!, 11)).status, 200, 'writes work at first')

    const filler = fillUp(dir)

    for (const quantity of [12, 13]) {
      const res = await patchQuantity(server.baseUrl, server.demoKey!, quantity)
      t.equal(res.status, 503, `PATCH ${quantity}: 503`)
      t.equal(res.headers.get('retry-after'), '1', 'with Retry-After')
      t.same(await res.json(), unavailable, 'the Error body, no internals')
    }
    const ready = await readyzUntil(server.baseUrl, 503)
    t.same(ready, { status: 503, body: notReady }, '/readyz: 503 naming storage while writes fail')
    const read = await fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${server.demoKey}` } })
    t.equal(read.status, 200, 'reads are still served')

    rmSync(filler)
    t.same(await readyzUntil(server.baseUrl, 200), { status: 200, body: { status: 'ok', checks: { storage: 'ok' } } }, '/readyz: ready again, without a restart')
    const after = await patchQuantity(server.baseUrl, server.demoKey!, 14)
    t.equal(after.status, 200, 'writes work again')
    t.same(await after.json(), { petId: 1, quantity: 14, status: 'available' })
    t.equal(server.child.exitCode, null, 'the process never stopped')
    t.equal(await server.stop(), 0)
})

/** Fills the file system that holds `dir` to its last page (4 KiB writes once 64 KiB ones fail). */
function fillToTheLastPage (dir: string): string[] {
  const fillers = [fillUp(dir)]
  const last = join(dir, 'filler-pages')
  const fd = openSync(last, 'w')
  try {
    for (;;) writeSync(fd, Buffer.alloc(4096))
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOSPC') throw error
  } finally {
    closeSync(fd)
  }
  return [...fillers, last]
}

t.test('SQLite: /readyz names storage from the first failed write on, and while writes keep failing', { skip: noMount }, async (t) => {
  const dir = smallFileSystem(t, '8m')
  mkdirSync(join(dir, 'db'))
  let clock = 0
  const api = await buildTestApp(t, { env: { DATABASE_URL: `sqlite:${join(dir, 'db', 'p.db')}` }, monotonicNow: () => clock })
  const headers = await api.authHeader('enterprise')
  const patch = (quantity: number) => api.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: { quantity } })
  const readyz = () => api.request({ method: 'GET', url: '/readyz' })
  t.equal((await patch(11)).statusCode, 200, 'writes work at first')
  // Two pages a test can give back later: room for a small write, not for a PATCH's.
  const spare = [join(dir, 'spare-1'), join(dir, 'spare-2')]
  for (const file of spare) writeFileSync(file, Buffer.alloc(4096))
  const fillers = fillToTheLastPage(dir)

  t.equal((await readyz()).statusCode, 200, 'a full disk alone: reads work, nothing has failed yet')
  expectError(t, await patch(12), 503, 'service_unavailable', 'a PATCH on the full disk')
  const notReady = expectError(t, await readyz(), 503, 'service_unavailable', '/readyz at once, within the second its last result is kept')
  t.equal(notReady.message, 'not ready: storage unavailable')

  for (const file of spare) rmSync(file)
  expectError(t, await patch(13), 503, 'service_unavailable', 'a PATCH with two pages free')
  clock += 1000
  expectError(t, await readyz(), 503, 'service_unavailable', 'a write failed since the last check: not ready, whatever a probe write would find')

  for (const file of fillers) rmSync(file)
  clock += 1000
  t.equal((await readyz()).statusCode, 200, 'space freed: the probe write succeeds, ready again')
  t.equal((await patch(14)).statusCode, 200, 'writes work again')
})

t.test('PostgreSQL refusing writes for storage reasons: 503, and /readyz names storage until writes pass', async (t) => {
  for (const [sqlState, what] of [['53100', 'disk full'], ['25006', 'read-only']] as const) {
    const { schema, url } = await createTestSchema(t)
    const api = await buildTestApp(t, { database: 'postgres', env: { DATABASE_URL: url() } })
    const headers = await api.authHeader('enterprise')
    const patch = (quantity: number) => api.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: { quantity } })
    t.equal((await api.request({ method: 'GET', url: '/readyz' })).statusCode, 200, `${what}: ready at first`)
    // PostgreSQL's own answer to a write it cannot store, raised by a trigger: the server is shared
    // by every test, so its disk cannot be filled nor the database set read-only for one of them.
    await adminQuery(`CREATE FUNCTION ${schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not write (test: ${what})' USING ERRCODE = '${sqlState}'; END $$`)
    await adminQuery(`CREATE TRIGGER refuse BEFORE INSERT OR UPDATE OR DELETE ON ${schema}.inventory FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.refuse()`)

    const refused = await patch(12)
    expectError(t, refused, 503, 'service_unavailable', `${what}: a PATCH`)
    t.equal(refused.headers['retry-after'], '1', `${what}: with Retry-After`)
    const notReady = expectError(t, await api.request({ method: 'GET', url: '/readyz' }), 503, 'service_unavailable', `${what}: /readyz`)
    t.equal(notReady.message, 'not ready: storage unavailable', `${what}: naming storage`)
    t.equal((await api.request({ method: 'GET', url: '/v1/inventory', headers })).statusCode, 200, `${what}: reads are still served`)

    await adminQuery(`DROP TRIGGER refuse ON ${schema}.inventory`)
    let ready = await api.request({ method: 'GET', url: '/readyz' })
    for (let waited = 0; waited < 3000 && ready.statusCode !== 200; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      ready = await api.request({ method: 'GET', url: '/readyz' })
    }
    t.equal(ready.statusCode, 200, `${what}: ready again once writes pass, without a restart`)
    t.same((await patch(14)).json(), { petId: 1, quantity: 14, status: 'available' }, `${what}: writes work again`)
  }
})

/** Runs the built server (dist/) with `env` and returns its exit code and output; it is expected to exit by itself. */
const runServer = (env: Record<string, string>, uid?: number) => uid === undefined
  ? run(process.execPath, [join(projectRoot, 'dist', 'src', 'server.js')], { PORT: '0', ...env }, 30_000)
  // Without NODE_OPTIONS: tap adds its process tracking there, which could not write its files as nobody.
  : run('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'env', '-u', 'NODE_OPTIONS', process.execPath, join(projectRoot, 'dist', 'src', 'server.js')], { PORT: '0', ...env }, 30_000)

function expectOneLine (t: Test, result: { code: number | null, stderr: string }, pattern: RegExp, what: string): void {
  t.equal(result.code, 1, `${what}: exit 1`)
  const lines = result.stderr.trim().split('\n')
  t.equal(lines.length, 1, `${what}: one line on stderr`)
  t.match(lines[0], pattern, `${what}: ${lines[0]}`)
  t.notMatch(result.stderr, /\bat .+:\d+:\d+/, `${what}: no stack trace`)
}

const asNobody = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'true']).status === 0
  ? false
  : 'setpriv cannot run a process as nobody here: a read-only file cannot be shown to root, so the case did not run'

t.test('a database file the process cannot write is refused at start with one line', { skip: asNobody }, async (t) => {
  const dir = tempDir(t)
  chmodSync(dir, 0o777)
  const file = join(dir, 'p.db')
  t.equal((await runCli('db', ['migrate'], { DATABASE_URL: `sqlite:${file}` })).code, 0, 'the database exists, made by root')
  chmodSync(file, 0o444)
  const refused = await runServer({ DATABASE_URL: `sqlite:${file}` }, 65534)
  expectOneLine(t, refused, /^Pet Store API could not start: cannot open the database \(DATABASE_URL=sqlite:.*\): the database cannot be written \(SQLITE_READONLY/, 'a read-only file')
})

t.test('a SQLite file of another application is refused at start, and left as it was', async (t) => {
  const file = join(tempDir(t), 'other.db')
  const other = new Database(file)
  other.exec('CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES (\'Ada\')')
  other.close()
  const refused = await runServer({ DATABASE_URL: `sqlite:${file}` })
  expectOneLine(t, refused, /^Pet Store API could not start: cannot open the database \(DATABASE_URL=sqlite:.*\): the database has tables \(customers\) but not this service's schema_migrations: it belongs to another application/, 'another application\'s file')
  const after = new Database(file, { readonly: true })
  t.teardown(() => after.close())
  t.same(after.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all(), ['customers'], 'no table added: not migrated, not seeded')

  const rails = new Database(join(tempDir(t), 'rails.db'))
  rails.exec('CREATE TABLE schema_migrations (version TEXT PRIMARY KEY); CREATE TABLE users (id INTEGER PRIMARY KEY)')
  const railsFile = rails.name
  rails.close()
  const foreignRecord = await runServer({ DATABASE_URL: `sqlite:${railsFile}` })
  expectOneLine(t, foreignRecord, /schema_migrations table is not this service's/, 'another application\'s schema_migrations')
})

t.test('a PostgreSQL schema of another application is refused at start, and left as it was', async (t) => {
  const { schema, url } = await createTestSchema(t)
  await adminQuery(`CREATE TABLE ${schema}.customers (id INTEGER PRIMARY KEY)`)
  const refused = await runServer({ DATABASE_URL: url() })
  expectOneLine(t, refused, /^Pet Store API could not start: cannot open the database \(DATABASE_URL=postgres:.*\): the database has tables \(customers\) but not this service's schema_migrations/, 'another application\'s schema')
  const tables = await adminQuery<{ name: string }>('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1', [schema])
  t.same(tables.map((row) => row.name), ['customers'], 'nothing created in it')
})
