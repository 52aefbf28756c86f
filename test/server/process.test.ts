import { spawnSync } from 'node:child_process'
import { type IncomingMessage, request as httpRequest } from 'node:http'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { projectRoot } from '../../src/contract/paths.js'
import { demoCatalogue } from '../../src/store/demo-catalogue.js'
import { tempDir } from '../helpers/app.js'
import { runCli } from '../helpers/cli.js'
import { type ServerProcess, startServer } from '../helpers/server-process.js'

t.test('a first start seeds the demo catalogue and prints one demo key; a restart keeps acknowledged writes', async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'p.db')}`
  const first = await startServer(t, { DATABASE_URL: databaseUrl })
  t.match(first.demoKey, /^psk_[A-Za-z0-9_-]{43}$/, 'the demo key is printed once at first start')
  const headers = { authorization: `Bearer ${first.demoKey}`, 'content-type': 'application/json' }
  const patched = await fetch(`${first.baseUrl}/v1/inventory/2`, { method: 'PATCH', headers, body: JSON.stringify({ quantity: 42 }) })
  t.equal(patched.status, 200)
  t.equal(await first.stop('SIGKILL'), 'SIGKILL', 'killed with -9 right after the acknowledgement')

  const second = await startServer(t, { DATABASE_URL: databaseUrl })
  t.equal(second.demoKey, undefined, 'no second demo key: one already exists')
  const list = await fetch(`${second.baseUrl}/v1/inventory`, { headers })
  const items = await list.json() as { petId: number, quantity: number }[]
  t.equal(items.find((i) => i.petId === 2)?.quantity, 42, 'the acknowledged write survived kill -9')
  t.equal(items.length, demoCatalogue.inventory!.length, 'the demo catalogue was not loaded twice')
  t.equal(await second.stop('SIGTERM'), 0, 'SIGTERM closes cleanly with exit code 0')
})

/** Whether taskset can confine a child to one core here. */
const canPin = spawnSync('taskset', ['-c', '0', 'true']).status === 0

t.test('the one-core command of docs/operations.md (node --single-threaded-gc dist/src/server.js) serves, writes and drains', async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'one-core.db')}`
  const entry = join(projectRoot, 'dist', 'src', 'server.js')
  const server = await startServer(t, { DATABASE_URL: databaseUrl }, 30_000, entry, { nodeFlags: ['--single-threaded-gc'], ...(canPin ? { core: 0 } : {}) })
  const headers = { authorization: `Bearer ${server.demoKey}`, 'content-type': 'application/json' }
  const patched = await fetch(`${server.baseUrl}/v1/inventory/3`, { method: 'PATCH', headers, body: JSON.stringify({ quantity: 7 }) })
  t.equal(patched.status, 200, 'a PATCH is answered')
  const list = await fetch(`${server.baseUrl}/v1/inventory`, { headers })
  t.equal(list.status, 200)
  const items = await list.json() as { petId: number, quantity: number }[]
  t.equal(items.find((i) => i.petId === 3)?.quantity, 7, 'the list shows the write')
  t.notOk(server.logs.some((l) => String(l.msg).startsWith('one CPU core available')), 'started as advised: no advice in the log')
  t.equal(await server.stop('SIGTERM'), 0, 'SIGTERM drains and exits 0')
})

t.test('a server confined to one core without --single-threaded-gc says once, at start, what to add', { skip: canPin ? false : 'taskset is not installed: cannot confine the server to one core' }, async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'one-core-advice.db')}`
  const server = await startServer(t, { DATABASE_URL: databaseUrl }, 30_000, undefined, { core: 0 })
  const advice = server.logs.filter((l) => String(l.msg).startsWith('one CPU core available'))
  t.equal(advice.length, 1, 'one line of advice')
  t.match(advice[0], { level: 30, cores: 1, msg: /--single-threaded-gc .*docs\/operations\.md, "One core"/ }, 'at info level, naming the flag and the docs')
  t.equal(await server.stop('SIGTERM'), 0)

  const unpinned = await startServer(t, { DATABASE_URL: databaseUrl })
  t.equal(unpinned.logs.filter((l) => String(l.msg).startsWith('one CPU core available')).length, availableParallelism() === 1 ? 1 : 0,
    'not confined: advice only if the machine has one core')
  t.equal(await unpinned.stop('SIGTERM'), 0)
})

/** Resolves once a log line matches, polling the lines the server has printed so far. */
async function logLine (server: ServerProcess, test: (entry: Record<string, unknown>) => boolean, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const entry = server.logs.find(test)
    if (entry) return entry
    if (Date.now() > deadline) throw new Error('log line not seen; last lines:\n' + server.logs.slice(-5).map((l) => JSON.stringify(l)).join('\n'))
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** A raw HTTP request whose body the test sends in parts, and whose answer it reads when it wants. */
function rawRequest (port: number, method: string, path: string, headers: Record<string, string | number>) {
  const req = httpRequest({ host: '127.0.0.1', port, method, path, headers })
  const response = new Promise<IncomingMessage>((resolve, reject) => { req.on('response', resolve); req.on('error', reject) })
  const body = async () => {
    const res = await response
    res.resume()
    const chunks: Buffer[] = []
    for await (const chunk of res) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString()
  }
  return { req, response, body }
}

t.test('SIGTERM drains in-flight requests, refuses new connections, then exits 0', async (t) => {
  const dir = tempDir(t)
  const databaseUrl = `sqlite:${join(dir, 'drain.db')}`
  t.equal((await runCli('db', ['migrate'], { DATABASE_URL: databaseUrl })).code, 0, 'db seed needs a database: migrate creates it')
  const seeded = await runCli('db', ['seed', '--synthetic', '50000'], { DATABASE_URL: databaseUrl })
  t.equal(seeded.code, 0, 'a large inventory, so the list is a slow response')

  const server = await startServer(t, { DATABASE_URL: databaseUrl })
  const auth = { authorization: `Bearer ${server.demoKey}` }

  // 1. A large list whose response the client does not read yet.
  const list = rawRequest(server.port, 'GET', '/v1/inventory', { ...auth, 'x-request-id': 'drain-list' })
  list.req.end()
  const listResponse = await list.response
  t.equal(listResponse.statusCode, 200, 'the list has started answering')
  listResponse.pause()

  // 2. An update whose body is only half sent.
  const payload = JSON.stringify({ quantity: 1234 })
  const update = rawRequest(server.port, 'PATCH', '/v1/inventory/7', { ...auth, 'content-type': 'application/json', 'content-length': payload.length, 'x-request-id': 'drain-update' })
  update.req.write(payload.slice(0, 5))
  await logLine(server, (l) => l.reqId === 'drain-update' && l.msg === 'incoming request')

  server.child.kill('SIGTERM')
  await logLine(server, (l) => String(l.msg).startsWith('draining in-flight requests'))
  // The listening socket closes just after that line is logged; the half-sent update keeps the process alive.
  const attempt = () => fetch(`${server.baseUrl}/healthz`).then(() => 'answered', (error: Error & { cause?: { code?: string } }) => error.cause?.code ?? error.message)
  let refused = await attempt()
  for (let tries = 0; refused !== 'ECONNREFUSED' && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    refused = await attempt()
  }
  t.equal(refused, 'ECONNREFUSED', 'new connections are refused while the in-flight requests drain')

  update.req.end(payload.slice(5))
  const updated = await update.response
  t.equal(updated.statusCode, 200, 'the half-sent update completes after SIGTERM')
  t.same(JSON.parse(await update.body()), { petId: 7, quantity: 1234, status: 'available' })

  const items = JSON.parse(await list.body()) as unknown[]
  t.equal(items.length, 50000, 'the list is delivered in full')

  // The list's connection (its answer began before the signal, without Connection: close) is
  // closed once the grace for idle connections is over: the exit comes then, without a second signal.
  t.equal(await server.exited(), 0, 'the process exits 0 once drained')
  t.ok(server.logs.some((l) => l.reqId === 'drain-update' && l.msg === 'request completed'), 'JSON logs carry the request id')

  const db = new Database(join(dir, 'drain.db'), { readonly: true })
  t.teardown(() => db.close())
  t.same(db.prepare('SELECT quantity FROM inventory WHERE pet_id = 7').get(), { quantity: 1234 }, 'the drained write is stored')
})

t.test('SEED=false starts with an empty inventory; the start-up line shows the docs address and the demo key', async (t) => {
  const publicBaseUrl = 'http://petstore.test:8080'
  const databaseUrl = `sqlite:${join(tempDir(t), 'empty.db')}`
  const server = await startServer(t, { DATABASE_URL: databaseUrl, SEED: 'false', PUBLIC_BASE_URL: publicBaseUrl })
  const ready = server.logs.find((l) => String(l.msg).startsWith('Pet Store API ready'))!
  t.match(ready.msg, `${publicBaseUrl}/docs`, 'the start-up line names the docs address')
  t.match(ready.msg, server.demoKey!, 'and the demo key, next to it')
  t.equal(server.logs.filter((l) => JSON.stringify(l).includes(server.demoKey!)).length, 1, 'the key is printed once')

  const headers = { authorization: `Bearer ${server.demoKey}` }
  const inventory = await fetch(`${server.baseUrl}/v1/inventory`, { headers })
  t.equal(inventory.status, 200)
  t.same(await inventory.json(), [], 'no demo catalogue')
  t.same(await (await fetch(`${server.baseUrl}/v1/store/orders`, { headers })).json(), [], 'no demo orders')

  // The keys command line works on the database of the running server, and revocation is immediate.
  const created = await runCli('keys', ['create', '--plan', 'business', '--json'], { DATABASE_URL: databaseUrl })
  const { id, key } = JSON.parse(created.stdout) as { id: string, key: string }
  const withKey = () => fetch(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } })
  t.equal((await withKey()).status, 200, 'a key created while the server runs works at once')
  t.equal((await runCli('keys', ['revoke', id], { DATABASE_URL: databaseUrl })).code, 0)
  t.equal((await withKey()).status, 401, 'and once revoked, it fails on the next request')

  t.equal(await server.stop('SIGINT'), 0, 'SIGINT closes cleanly too')
})

t.test('NODE_ENV=production creates no demo key', async (t) => {
  const file = join(tempDir(t), 'prod.db')
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, NODE_ENV: 'production' })
  t.equal(server.demoKey, undefined, 'no key in the start-up log')
  t.notOk(server.logs.some((l) => /psk_/.test(JSON.stringify(l))), 'no key anywhere in the log')
  const ready = server.logs.find((l) => String(l.msg).startsWith('Pet Store API ready'))!
  t.match(ready.msg, `${server.baseUrl}/docs`, 'the docs address (PUBLIC_BASE_URL defaults to http://HOST:PORT) is still printed')
  t.equal(await server.stop(), 0)

  const db = new Database(file, { readonly: true })
  t.teardown(() => db.close())
  t.same(db.prepare('SELECT COUNT(*) AS n FROM api_keys').get(), { n: 0 }, 'no key in the database')
  t.ok((db.prepare('SELECT COUNT(*) AS n FROM pets').get() as { n: number }).n > 0, 'the demo catalogue is still loaded (SEED defaults to true)')
})

t.test('under continuous load, a key revoked by the CLI fails on every request sent after the revocation', async (t) => {
  // The SQLite store reads the database's change counter once per event-loop turn (see
  // src/store/sqlite/turn-snapshot.ts): a busy server must still see another process's commit from its next turn.
  const databaseUrl = `sqlite:${join(tempDir(t), 'busy.db')}`
  const server = await startServer(t, { DATABASE_URL: databaseUrl, NODE_ENV: 'production' })
  const created = await runCli('keys', ['create', '--plan', 'enterprise', '--per-minute', '1000000', '--per-day', '1000000', '--json'], { DATABASE_URL: databaseUrl })
  const { id, key } = JSON.parse(created.stdout) as { id: string, key: string }
  const headers = { authorization: `Bearer ${key}` }

  // 16 clients send back to back until told to stop; each records the status and when it sent.
  let revokedAt = Infinity
  let stop = false
  const sentAfterRevocation: number[] = []
  let answered = 0
  const statuses = new Set<number>()
  const client = async () => {
    while (!stop) {
      const sentAt = performance.now()
      const res = await fetch(`${server.baseUrl}/v1/store/orders`, { headers })
      await res.arrayBuffer()
      answered++
      statuses.add(res.status)
      if (sentAt > revokedAt) sentAfterRevocation.push(res.status)
    }
  }
  const clients = Array.from({ length: 16 }, client)
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal((await runCli('keys', ['revoke', id], { DATABASE_URL: databaseUrl })).code, 0, 'revoked while the server is busy')
  revokedAt = performance.now()
  await new Promise((resolve) => setTimeout(resolve, 300))
  stop = true
  await Promise.all(clients)
  t.ok(answered > 50, `the server was under load (${answered} requests answered)`)
  t.ok(sentAfterRevocation.length > 0, `requests were sent after the revocation (${sentAfterRevocation.length})`)
  // Refused as unauthenticated: 401, or 429 once the client address has used up the Free plan's
  // allowance, which requests without a valid key are counted against.
  t.same([...new Set(sentAfterRevocation)].filter((status) => status !== 401 && status !== 429), [], 'none of them was served')
  t.ok(statuses.has(401), 'the revoked key was answered 401 (before the address reached its limit)')
})
