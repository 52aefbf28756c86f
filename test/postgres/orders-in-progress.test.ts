import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'
import { holdInventoryRow, ordersOf, placeOrder, roomyHeaders, setStock, untilBlockedBy } from '../helpers/orders.js'

// A request still in progress needs a transaction left open while another request arrives: on
// PostgreSQL, the first request waits for a row another connection holds. (On SQLite a
// transaction runs to its end before the next request is looked at, so none is ever in progress.)

t.test('a repeat of an Idempotency-Key while the first request is in progress is 409 idempotency_key_in_use', async (t) => {
  const api = await buildTestApp(t, { database: 'postgres' })
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)
  const key = { 'idempotency-key': 'slow-order-1' }

  const held = await holdInventoryRow(t, api.config.databaseUrl, 8)
  const first = placeOrder(api, headers, { petId: 8, quantity: 1 }, key)
  await untilBlockedBy(held.pid!) // the first request waits inside its transaction

  const meanwhile = await placeOrder(api, headers, { petId: 8, quantity: 1 }, key)
  const body = expectError(t, meanwhile, 409, 'idempotency_key_in_use')
  t.equal(body.message, 'a request with this Idempotency-Key is still in progress', 'the message of openapi.yaml\'s example')
  const otherKey = await placeOrder(api, headers, { petId: 6, quantity: 1 }, { 'idempotency-key': 'slow-order-2' })
  t.equal(otherKey.statusCode, 201, 'another key is not held up')

  await held.release()
  const done = await first
  t.equal(done.statusCode, 201, 'the first request completes')
  const replay = await placeOrder(api, headers, { petId: 8, quantity: 1 }, key)
  t.equal(replay.statusCode, 201)
  t.equal(replay.body, done.body, 'and is replayed from then on')
  t.equal(replay.headers['idempotent-replayed'], 'true')
  t.equal((await ordersOf(api, headers, 8)).length, 1, 'one order for pet 8')
})
