/**
 * Hostile requests: bodies over the limit (also with a lying or missing Content-Length),
 * prototype poisoning, requests Node's HTTP parser refuses, path traversal, and failures deep
 * inside the service. Every answer is the Error body, and none carries a stack trace or a path.
 * Raw-socket cases run against a real server process, since app.inject bypasses the HTTP parser.
 */
import t, { type Test } from 'tap'
import { connect } from 'node:net'
import { join } from 'node:path'
import { StoreUnavailableError } from '../../src/contract/errors.js'
import { apiKeysRepository, generateApiKey, issueApiKey } from '../../src/repositories/api-keys.js'
import { createStore } from '../../src/store/create-store.js'
import type { Store } from '../../src/store/types.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { EVENT_SCOPES, ALL_SCOPES } from '../helpers/contract.js'

const BODY_LIMIT = 1024
const LEAK = /at .+:\d+:\d+|\.[jt]s:\d+|\/work\/|node_modules|Error:|SQLITE|ECONNREFUSED|\bstack\b/

interface RawResponse { status: number, headers: string, body: string, /** How many of the chunks were written. */ sent: number }

/**
 * Sends `chunks` on a new connection and reads one response (until its length has arrived, the
 * server closes, or `waitMs` passes). With `paceMs`, the chunks go one at
 * a time, `paceMs` apart, and no more once the response has begun, as a client streaming a body
 * would: a server that answers early and closes (a 413) must not be left with unread bytes, since
 * Linux then resets the connection and discards the answer it has not sent yet.
 */
function raw (port: number, chunks: (string | Buffer)[], waitMs = 3000, paceMs?: number): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let data = ''
    let sent = 0
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      const [head = '', ...rest] = data.split('\r\n\r\n')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)
      resolve({ status, headers: head, body: rest.join('\r\n\r\n'), sent })
    }
    const timer = setTimeout(done, waitMs)
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString()
      // One response is enough: stop once its declared length has arrived.
      const length = /content-length: (\d+)/i.exec(data)?.[1]
      const bodyStart = data.indexOf('\r\n\r\n')
      if (length !== undefined && bodyStart >= 0 && Buffer.byteLength(data.slice(bodyStart + 4)) >= Number(length)) done()
    })
    socket.on('close', done)
    socket.on('error', (error: NodeJS.ErrnoException) => { if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') reject(error); else done() })
    socket.on('connect', () => {
      if (paceMs === undefined) {
        for (const chunk of chunks) socket.write(chunk)
        sent = chunks.length
        return
      }
      const send = () => {
        if (data !== '' || socket.destroyed || sent >= chunks.length) return
        socket.write(chunks[sent++]!)
        setTimeout(send, paceMs).unref()
      }
      send()
    })
  })
}

function errorBody (t: Test, res: RawResponse, status: number, code: string, what: string): void {
  t.equal(res.status, status, `${what}: ${status}`)
  errorBodyOf(t, res, code, what)
}

/** The Error body with this code, its `status` equal to the HTTP status, and nothing leaked. */
function errorBodyOf (t: Test, res: RawResponse, code: string, what: string): void {
  const status = res.status
  let body: unknown
  try { body = JSON.parse(res.body) } catch { body = res.body }
  t.match(body, { code, status }, `${what}: the Error body with code ${code}`)
  t.same(Object.keys(body as object).sort(), ['code', 'message', 'status'], `${what}: exactly code, message and status`)
  t.notMatch(res.body, LEAK, `${what}: no stack trace or path`)
}

t.test('on a real server: body limit, parser-level refusals and path traversal', async (t) => {
  const databaseUrl = `sqlite:${join(tempDir(t), 'security.db')}`
  const store = await createStore(databaseUrl)
  await store.migrate()
  const key = generateApiKey()
  await apiKeysRepository(store).create({ id: key.id, name: 'security', plan: 'enterprise', keyHash: key.hash, perMinute: 1_000_000, perDay: 10_000_000, scopes: ALL_SCOPES })
  await store.close()
  const server = await startServer(t, { DATABASE_URL: databaseUrl, BODY_LIMIT: String(BODY_LIMIT) })
  const auth = `Authorization: Bearer ${key.secret}\r\n`
  const patch = (headers: string) => `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\n`

  // BODY_LIMIT: a declared length over it is refused at once, before any body byte is read.
  let res = await raw(server.port, [patch(`${auth}Content-Type: application/json\r\nContent-Length: 104857600\r\n`)])
  errorBody(t, res, 413, 'payload_too_large', 'Content-Length of 100 MB, no body sent')

  // Without a valid key the body is never read either: authentication comes first.
  res = await raw(server.port, [patch('Content-Type: application/json\r\nContent-Length: 104857600\r\n')])
  errorBody(t, res, 401, 'unauthorized', 'Content-Length of 100 MB without a key')

  // Chunked, with no length declared: counted as it arrives, and refused before the body ends
  // (the chunks go 200 ms apart and stop at the answer).
  const chunk = `400\r\n${' '.repeat(0x400)}\r\n`
  res = await raw(server.port, [patch(`${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n`), ...Array.from({ length: 8 }, () => chunk), '0\r\n\r\n'], 5000, 200)
  errorBody(t, res, 413, 'payload_too_large', 'an 8 KiB chunked body')
  t.ok(res.sent < 10, `the 413 came before the chunked body's end (${res.sent} of its 10 parts sent)`)

  // A body of exactly BODY_LIMIT bytes is accepted.
  const atLimit = '{"quantity":7}'.padEnd(BODY_LIMIT, ' ')
  res = await raw(server.port, [patch(`${auth}Content-Type: application/json\r\nContent-Length: ${BODY_LIMIT}\r\nConnection: close\r\n`), atLimit])
  t.equal(res.status, 200, `a body of exactly BODY_LIMIT (${BODY_LIMIT}) bytes is accepted`)

  // Requests Node's HTTP parser refuses never reach Fastify; they still get the Error body
  // (and so does one without Host, which Node would answer with an empty body).
  const refused: [string, string][] = [
    ['an unknown method', 'FOO /v1/inventory HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['an HTTP version that does not exist', 'GET /v1/inventory HTTP/9.9\r\nHost: x\r\n\r\n'],
    ['no request line at all', 'hello\r\n\r\n'],
    ['Content-Length together with Transfer-Encoding (request smuggling)', `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`],
    ['two different Content-Lengths', `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 4\r\nContent-Length: 5\r\n\r\n{}  `],
    ['a NUL byte in a header', 'GET /v1/inventory HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n'],
    ['an HTTP/1.1 request without Host', 'GET /healthz HTTP/1.1\r\n\r\n'],
    ['headers over the size limit', `GET /v1/inventory HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`]
  ]
  for (const [what, request] of refused) {
    errorBody(t, await raw(server.port, [request]), 400, 'invalid_request', what)
  }

  // Path traversal out of the docs' static assets, in every spelling; never a file from elsewhere.
  for (const path of ['/docs/static/../../package.json', '/docs/static/%2e%2e/%2e%2e/package.json', '/docs/static/..%2f..%2fpackage.json',
    '/docs/static/..%5c..%5cpackage.json', '/docs/static/....//....//package.json', '/docs/static/%2e%2e%2f%2e%2e%2fpackage.json',
    '/v1/../docs/static/../../../package.json', '/docs/static/%00']) {
    res = await raw(server.port, [`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`])
    t.notMatch(res.body, /"name"\s*:\s*"petstore|devDependencies/, `${path}: no file outside the assets`)
    const code = ({ 400: 'invalid_request', 401: 'unauthorized', 404: 'not_found' } as Record<number, string>)[res.status]
    t.ok(code !== undefined, `${path}: refused with 400, 401 or 404, not served (${res.status})`)
    errorBodyOf(t, res, code ?? '?', path)
  }
  // A missing asset is 404: the static route exists for GET, but that is no reason for a 405.
  errorBody(t, await raw(server.port, ['GET /docs/static/nope.js HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']), 404, 'not_found', 'a missing docs asset')

  const health = await fetch(`${server.baseUrl}/healthz`)
  t.equal(health.status, 200, 'the server is healthy after all of it')
})

t.test('prototype poisoning in bodies and query strings is refused and pollutes nothing', async (t) => {
  const api = await buildTestApp(t)
  const headers = { authorization: `Bearer ${await api.createKey('enterprise', { perMinute: 1_000_000, perDay: 10_000_000 })}`, 'content-type': 'application/json' }
  const before = await inventoryRepository(api.store, EVENT_SCOPES).list()
  const payloads = [
    '{"__proto__":{"quantity":1}}',
    '{"quantity":1,"__proto__":{"isAdmin":true}}',
    '{"quantity":1,"\\u005f\\u005fproto\\u005f\\u005f":{"isAdmin":true}}',
    '{"quantity":1,"constructor":{"prototype":{"isAdmin":true}}}',
    '{"quantity":{"__proto__":{"isAdmin":true}}}',
    '{"a":[{"b":{"__proto__":{"isAdmin":true}}}],"quantity":1}'
  ]
  for (const payload of payloads) {
    const res = await api.request({ method: 'PATCH', url: '/v1/inventory/2', headers, payload })
    t.equal(res.statusCode, 400, `${payload}: 400`)
    t.match(res.json(), { code: 'invalid_request', message: /__proto__|constructor|prototype/ }, `${payload}: says why`)
  }
  for (const query of ['?__proto__[isAdmin]=true', '?constructor[prototype][isAdmin]=true', '?__proto__.isAdmin=true']) {
    const res = await api.request({ method: 'GET', url: `/v1/inventory${query}`, headers })
    // openapi.yaml: a query parameter the operation does not declare is 400, naming it.
    t.equal(res.statusCode, 400, `${query}: refused (the operation takes no query parameters)`)
    t.match(res.json(), { code: 'invalid_request', message: /^querystring must NOT have additional properties/ }, `${query}: says why`)
  }
  t.same(await inventoryRepository(api.store, EVENT_SCOPES).list(), before, 'the store is untouched')
})

/**
 * A store whose data paths fail, once `broken()` says so, the way a broken disk or driver would,
 * with paths and stacks: reads, writes, the inventory's paths and the cache of pets. Start-up (before
 * it breaks) and the key lookups (the cache of active keys) still work, so requests get through
 * authentication to meet the failure.
 */
function failingStore (inner: Store, fail: () => Error, broken: () => boolean): Store {
  const failing = <T extends object>(target: T): T => new Proxy(target, {
    get (on, property, receiver) {
      const value = Reflect.get(on, property, receiver) as unknown
      if (typeof value !== 'function' || property === 'close') return value
      return (...args: unknown[]) => broken() ? Promise.reject(fail()) : (value as (...a: unknown[]) => unknown).apply(on, args)
    }
  })
  const caches = { ...inner.caches, pets: failing(inner.caches.pets) }
  const inventory = failing(inner.inventory)
  return new Proxy(failing(inner), {
    get (target, property, receiver) {
      if (property === 'caches') return caches
      if (property === 'inventory') return inventory
      return Reflect.get(target, property, receiver) as unknown
    }
  })
}

t.test('failures inside the service answer with a generic Error body: no stack trace, path or driver text', async (t) => {
  const failures: [string, () => Error, number, string][] = [
    ['a driver error with a path and a stack', () => Object.assign(new Error('SQLITE_IOERR: disk I/O error at /work/main/data/petstore.db'), { code: 'SQLITE_IOERR' }), 500, 'internal_error'],
    ['a TypeError from a bug', () => new TypeError("Cannot read properties of undefined (reading 'quantity')"), 500, 'internal_error'],
    ['the storage unreachable', () => new StoreUnavailableError('connect ECONNREFUSED 127.0.0.1:5432 (/work/main/src/store/postgres-store.ts:42)'), 503, 'service_unavailable']
  ]
  for (const [what, fail, status, code] of failures) {
    const inner = await createStore(`sqlite:${join(tempDir(t), 'failing.db')}`)
    let broken = false
    const api = await buildTestApp(t, { store: failingStore(inner, fail, () => broken) })
    broken = true
    const { secret } = await issueApiKey(inner, { name: 'failing', plan: 'enterprise', perMinute: 1_000_000, perDay: 10_000_000, scopes: ALL_SCOPES })
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }
    for (const [method, url, payload] of [['GET', '/v1/inventory'], ['PATCH', '/v1/inventory/1', '{"quantity":3}'], ['GET', '/v1/pets/1'], ['GET', '/v1/store/orders']] as const) {
      const res = await api.request({ method, url, headers, ...(payload === undefined ? {} : { payload }) })
      t.equal(res.statusCode, status, `${what}, ${method} ${url}: ${status}`)
      t.equal(res.json().code, code, `${what}, ${method} ${url}: ${code}`)
      t.notMatch(res.body, LEAK, `${what}, ${method} ${url}: nothing of the error leaks`)
    }
  }
})
