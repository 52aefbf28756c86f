import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { expectError, expectUnauthorized } from '../helpers/assertions.js'
import { inventoryEntry, type Order, placeOrder, roomyHeaders, setStock } from '../helpers/orders.js'

t.test('cancelling an open order deletes it (204, no body) and frees its reservation at once', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)
  const placed = (await placeOrder(api, headers, { petId: 8, quantity: 7 })).json() as Order
  const reserved = await inventoryEntry(api, headers, 8)
  t.same(reserved.item, { petId: 8, quantity: 7, status: 'pending' })

  const res = await api.request({ method: 'DELETE', url: `/v1/store/orders/${placed.id}`, headers })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '', 'no body')

  const freed = await inventoryEntry(api, headers, 8)
  t.same(freed.item, { petId: 8, quantity: 7, status: 'available' }, 'available again')
  t.not(freed.etag, reserved.etag, 'with a new entity tag')
  const gone = expectError(t, await api.request({ method: 'GET', url: `/v1/store/orders/${placed.id}`, headers }), 404, 'not_found')
  t.equal(gone.message, `no order with id ${placed.id}`)
  expectError(t, await api.request({ method: 'DELETE', url: `/v1/store/orders/${placed.id}`, headers }), 404, 'not_found', 'cancelled twice')
  t.equal((await placeOrder(api, headers, { petId: 8, quantity: 7 })).statusCode, 201, 'the freed units can be ordered again')
})

t.test('an approved order can be cancelled; a delivered one cannot', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  // Demo order 3 is approved (pet 7, its whole stock of 1), order 1 delivered.
  t.same((await inventoryEntry(api, headers, 7)).item, { petId: 7, quantity: 1, status: 'pending' })
  t.equal((await api.request({ method: 'DELETE', url: '/v1/store/orders/3', headers })).statusCode, 204)
  t.same((await inventoryEntry(api, headers, 7)).item, { petId: 7, quantity: 1, status: 'available' }, 'its unit is free')

  const body = expectError(t, await api.request({ method: 'DELETE', url: '/v1/store/orders/1', headers }), 409, 'invalid_transition')
  t.equal(body.message, 'order 1 is delivered; it cannot be cancelled')
  t.equal((await api.request({ method: 'GET', url: '/v1/store/orders/1', headers })).statusCode, 200, 'still there')
})

t.test('an unknown order is 404, a malformed id 400, without a key 401', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  const body = expectError(t, await api.request({ method: 'DELETE', url: '/v1/store/orders/99', headers }), 404, 'not_found')
  t.equal(body.message, 'no order with id 99')
  expectError(t, await api.request({ method: 'DELETE', url: '/v1/store/orders/abc', headers }), 400, 'invalid_request')
  expectUnauthorized(t, await api.request({ method: 'DELETE', url: '/v1/store/orders/2' }))
  t.equal((await api.request({ method: 'GET', url: '/v1/store/orders/2', headers })).statusCode, 200, 'order 2 is still there')
})

t.test('Content-Type: application/json with no body, as many clients send on every request, is a DELETE without a body', async (t) => {
  const api = await buildTestApp(t)
  const headers = { ...await roomyHeaders(api), 'content-type': 'application/json' }
  // Demo orders 2 and 4 are placed.
  const noPayload = await api.request({ method: 'DELETE', url: '/v1/store/orders/2', headers })
  t.equal(noPayload.statusCode, 204, 'no payload at all')
  const emptyPayload = await api.request({ method: 'DELETE', url: '/v1/store/orders/4', headers: { ...headers, 'content-length': '0' }, payload: '' })
  t.equal(emptyPayload.statusCode, 204, 'Content-Length: 0')
  for (const id of [2, 4]) expectError(t, await api.request({ method: 'GET', url: `/v1/store/orders/${id}`, headers }), 404, 'not_found', `order ${id} is gone`)

  const malformed = expectError(t, await api.request({ method: 'DELETE', url: '/v1/store/orders/3', headers, payload: '{' }), 400, 'invalid_request', 'a body that is not JSON')
  t.match(malformed.message, /^body is not valid JSON/)
  const emptyPatch = expectError(t, await api.request({ method: 'PATCH', url: '/v1/store/orders/3', headers, payload: '' }), 400, 'invalid_request', 'an operation that takes a body')
  t.equal(emptyPatch.message, 'body is empty; send a JSON object', 'still refuses an empty one')
  t.match((await api.request({ method: 'GET', url: '/v1/store/orders/3', headers })).json(), { id: 3, status: 'approved' }, 'order 3 untouched')
})
