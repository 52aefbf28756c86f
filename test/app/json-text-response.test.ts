import Database from 'better-sqlite3'
import t from 'tap'
import { JsonText } from '../../src/contract/json-text.js'
import { expectError } from '../helpers/assertions.js'
import { buildTestApp } from '../helpers/app.js'

// GET /v1/inventory sends JSON text built by the database. It must be validated against
// openapi.yaml all the same: a body outside the schema is a 500, never sent.

// A commit through a connection that is not the service's (as another process makes it) is seen
// from the service's next event-loop turn; these tests write that way and then let a turn pass.
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

t.test('a list the schema forbids, written behind the service\'s back, is 500; once repaired, 200 again', async (t) => {
  const api = await buildTestApp(t, { env: { SEED: 'false' }, logger: false })
  await api.store.importCatalogue({ pets: [{ id: 1, name: 'a', photoUrls: [] }], inventory: [{ petId: 1, quantity: 4 }] })
  const headers = await api.authHeader()
  let res = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  t.equal(res.statusCode, 200)
  t.same(res.json(), [{ petId: 1, quantity: 4, status: 'available' }])

  // 4.5 passes the table's CHECK (0 ≤ quantity ≤ 2^31-1) but is no integer: only validation stops it.
  const raw = new Database(api.config.databaseUrl.slice('sqlite:'.length))
  t.teardown(() => raw.close())
  raw.prepare('UPDATE inventory SET quantity = 4.5 WHERE pet_id = 1').run()
  await nextTurn()
  res = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  expectError(t, res, 500, 'internal_error', 'a non-integer quantity')
  t.notMatch(res.body, /4\.5|quantity/, 'the offending data stays out of the response')
  res = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  expectError(t, res, 500, 'internal_error', 'still refused on the next request (a refused text is never remembered as valid)')

  raw.prepare('UPDATE inventory SET quantity = 6 WHERE pet_id = 1').run()
  await nextTurn()
  res = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  t.equal(res.statusCode, 200, 'repaired')
  t.same(res.json(), [{ petId: 1, quantity: 6, status: 'available' }])
})

t.test('JSON text that is not JSON, or not of the schema, is 500', async (t) => {
  const texts = ['[{"petId":1,"quantity":2,"status":"available"}', '[{"petId":1,"quantity":2,"status":"lost"}]', '{}', '[{"petId":0,"quantity":2,"status":"sold"}]']
  let next = 0
  const api = await buildTestApp(t, {
    logger: false,
    handlers: { listInventory: async () => new JsonText(texts[next++]!) as never }
  })
  const headers = await api.authHeader()
  for (const text of texts) {
    const res = await api.request({ method: 'GET', url: '/v1/inventory', headers })
    expectError(t, res, 500, 'internal_error', text)
  }
})

t.test('valid JSON text is sent exactly as given, as application/json', async (t) => {
  const text = '[{"petId":1,"quantity":2,"status":"available"},{"petId":3,"quantity":0,"status":"sold"}]'
  const api = await buildTestApp(t, { logger: false, handlers: { listInventory: async () => new JsonText(text) as never } })
  const headers = await api.authHeader()
  for (let i = 0; i < 2; i++) {
    const res = await api.request({ method: 'GET', url: '/v1/inventory', headers })
    t.equal(res.statusCode, 200)
    t.equal(res.body, text, 'the very text')
    t.match(res.headers['content-type'], /^application\/json/)
    t.equal(res.headers['content-length'], String(Buffer.byteLength(text)))
  }
  const head = await api.app.inject({ method: 'HEAD', url: '/v1/inventory', headers })
  t.equal(head.statusCode, 200, 'HEAD too')
  t.equal(head.headers['content-length'], String(Buffer.byteLength(text)), 'with the length of the body it leaves out')
  t.equal(head.body, '')
})
