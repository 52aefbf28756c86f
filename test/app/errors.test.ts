import t from 'tap'
import { API_PREFIX, methodsByPath, operations, sampleUrl } from '../helpers/surface.js'
import { buildTestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'
import { logCapture } from '../helpers/log-capture.js'

const json = { 'content-type': 'application/json' }

t.test('bodies that are not JSON objects are 400 invalid_request, and change nothing', async (t) => {
  const api = await buildTestApp(t)
  const headers = { ...await api.authHeader(), ...json }
  const patch = (payload: string) => api.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload })

  let body = expectError(t, await patch('{"quantity": 5'), 400, 'invalid_request', 'truncated JSON')
  t.match(body.message, /^body is not valid JSON/, 'says the JSON is malformed')
  body = expectError(t, await patch("{'quantity': 5}"), 400, 'invalid_request', 'single quotes')
  t.match(body.message, /^body is not valid JSON/)
  body = expectError(t, await patch(''), 400, 'invalid_request', 'empty body')
  t.match(body.message, /empty/, 'says the body is empty')
  body = expectError(t, await patch('   '), 400, 'invalid_request', 'whitespace only')

  body = expectError(t, await patch('{"quantity": 5, "__proto__": {"quantity": 0}}'), 400, 'invalid_request', '__proto__ key')
  t.match(body.message, /__proto__/, 'names the forbidden key')
  body = expectError(t, await patch('{"quantity": 5, "constructor": {"prototype": {"quantity": 0}}}'), 400, 'invalid_request', 'constructor.prototype')
  t.match(body.message, /constructor\.prototype/)

  const list = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  t.same(list.json()[0], { petId: 1, quantity: 4, status: 'available' }, 'pet 1 keeps its stock')
})

t.test('a body over BODY_LIMIT is 413 payload_too_large; one at the limit is accepted', async (t) => {
  // Whitespace keeps the JSON valid while setting its exact size in bytes.
  const sized = (bytes: number) => '{"quantity":7}'.padEnd(bytes, ' ')

  const standard = await buildTestApp(t)
  let headers = { ...await standard.authHeader(), ...json }
  expectError(t, await standard.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: sized(16 * 1024 + 1) }), 413, 'payload_too_large', 'the default BODY_LIMIT: 16 KiB + 1 byte')
  t.equal((await standard.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: sized(16 * 1024) })).statusCode, 200, 'the default BODY_LIMIT: exactly 16 KiB is accepted')
  const big = await standard.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: sized(1024 * 1024) })
  expectError(t, big, 413, 'payload_too_large', '1 MiB')

  const small = await buildTestApp(t, { env: { BODY_LIMIT: '100' } })
  headers = { ...await small.authHeader(), ...json }
  const over = await small.request({ method: 'PATCH', url: '/v1/inventory/2', headers, payload: sized(101) })
  const body = expectError(t, over, 413, 'payload_too_large', 'BODY_LIMIT=100, 101 bytes')
  t.notMatch(body.message, /FST_|Error/, 'no framework internals in the message')
  t.equal((await small.request({ method: 'PATCH', url: '/v1/inventory/2', headers, payload: sized(100) })).statusCode, 200, 'BODY_LIMIT=100, 100 bytes accepted')
})

t.test('a body that is not application/json is 415 unsupported_media_type', async (t) => {
  const api = await buildTestApp(t)
  const auth = await api.authHeader()
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data; boundary=x', 'application/jsonx']) {
    const res = await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { ...auth, 'content-type': type }, payload: '{"quantity":1}' })
    expectError(t, res, 415, 'unsupported_media_type', type)
  }
  const ok = await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { ...auth, 'content-type': 'application/json; charset=utf-8' }, payload: '{"quantity":1}' })
  t.equal(ok.statusCode, 200, 'application/json with a charset is accepted')
})

t.test('unknown routes are 404 not_found; a known path with another method is 405 with Allow', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader()

  // A path under an operation's path that is no path of its own (e.g. /v1/pets of /pets/{petId}) is unknown too.
  const paths = [...methodsByPath().keys()]
  const parents = paths.map((path) => path.slice(0, path.lastIndexOf('/'))).filter((parent) => parent !== '' && !paths.includes(parent))
  for (const url of ['/v1/zz-nothing', '/v1/inventory/1/zz-extra', '/v2/inventory', '/nothing', '/', ...parents.map((parent) => API_PREFIX + parent)]) {
    const body = expectError(t, await api.request({ method: 'GET', url, headers }), 404, 'not_found', `GET ${url}`)
    t.notMatch(body.message, /Route GET:/, 'not Fastify\'s own wording')
  }

  // Every path of openapi.yaml, with every method it does not have.
  const cases: [string, string, string[]][] = [['POST', '/healthz', ['GET', 'HEAD']]]
  for (const [path, methods] of methodsByPath()) {
    const url = sampleUrl(operations.find((op) => op.path === path)!)
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) if (!methods.includes(method)) cases.push([method, url, methods])
  }
  t.ok(cases.length > paths.length, 'every path has methods it lacks')
  for (const [method, url, allow] of cases) {
    const res = await api.request({ method, url, headers })
    const body = expectError(t, res, 405, 'method_not_allowed', `${method} ${url}`)
    t.same(String(res.headers.allow).split(', ').sort(), [...allow].sort(), `${method} ${url}: Allow lists the methods the path has`)
    t.match(body.message, method, 'the message names the method')
  }
})

t.test('a handler answering outside its schema is 500 internal_error, logged, with no internals', async (t) => {
  const log = logCapture()
  const api = await buildTestApp(t, {
    handlers: { listInventory: async () => [{ petId: 1 }] as never },
    logger: { level: 'error', stream: log.stream }
  })
  const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: await api.authHeader() })
  const body = expectError(t, res, 500, 'internal_error', 'reshaped body')
  t.same(body, { code: 'internal_error', message: 'internal server error', status: 500 }, 'a generic message only: no data, no schema detail')
  const logged = log.lines.find((l) => l.level === 50)
  t.ok(logged, 'the error is logged')
  t.match(JSON.stringify(logged), /quantity/, 'the log line says what was wrong')
})

t.test('a handler throwing a plain Error is 500 with a generic message', async (t) => {
  const log = logCapture()
  const api = await buildTestApp(t, {
    handlers: {
      listOrders: async () => { throw new Error('SQLITE_CORRUPT at /var/lib/secret/db.sqlite line 42') },
      getPetById: async () => { throw Object.assign(new TypeError('cannot read x of undefined'), { statusCode: undefined }) }
    },
    logger: { level: 'error', stream: log.stream }
  })
  const headers = await api.authHeader()
  let res = await api.request({ method: 'GET', url: '/v1/store/orders', headers })
  t.same(expectError(t, res, 500, 'internal_error', 'plain Error'), { code: 'internal_error', message: 'internal server error', status: 500 }, 'nothing of the error leaks')
  res = await api.request({ method: 'GET', url: '/v1/pets/1', headers })
  t.same(expectError(t, res, 500, 'internal_error', 'TypeError'), { code: 'internal_error', message: 'internal server error', status: 500 })
  t.ok(log.lines.some((l) => JSON.stringify(l).includes('SQLITE_CORRUPT')), 'the detail goes to the log instead')
})

t.test('every response carries a request id; a sane caller id is kept', async (t) => {
  const api = await buildTestApp(t)
  const given = await api.request({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-abc.123' } })
  t.equal(given.headers['x-request-id'], 'trace-abc.123', 'the caller\'s id is echoed')
  const generated = await api.request({ method: 'GET', url: '/v1/inventory' })
  t.match(generated.headers['x-request-id'], /^[0-9a-f-]{36}$/, 'an id is generated, also on errors')
  const unsafe = await api.request({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'evil\u0007id with spaces' } })
  t.not(unsafe.headers['x-request-id'], 'evil\u0007id with spaces', 'an unsafe id is replaced')
})
