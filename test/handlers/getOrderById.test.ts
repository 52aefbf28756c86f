import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { expectError, expectUnauthorized } from '../helpers/assertions.js'
import { type Order, placeOrder, roomyHeaders, setStock } from '../helpers/orders.js'

t.test('getOrderById returns the order, whatever its status', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  // Demo orders: 1 delivered, 2 placed, 3 approved.
  const expected: Order[] = [
    { id: 1, petId: 1, quantity: 1, shipDate: '2026-11-20T10:00:00.000Z', status: 'delivered', complete: true },
    { id: 2, petId: 3, quantity: 2, shipDate: '2026-11-25T09:30:00.000Z', status: 'placed', complete: false },
    { id: 3, petId: 7, quantity: 1, shipDate: '2026-11-26T14:00:00.000Z', status: 'approved', complete: false }
  ]
  for (const order of expected) {
    const res = await api.request({ method: 'GET', url: `/v1/store/orders/${order.id}`, headers })
    t.equal(res.statusCode, 200, `order ${order.id}`)
    t.strictSame(res.json(), order, `order ${order.id} as stored`)
  }

  await setStock(api, headers, 8, 7)
  const placed = (await placeOrder(api, headers, { petId: 8, quantity: 2 })).json() as Order
  const res = await api.request({ method: 'GET', url: `/v1/store/orders/${placed.id}`, headers })
  t.equal(res.statusCode, 200)
  t.strictSame(res.json(), placed, 'an order placed through the API')
})

t.test('an unknown order is 404; a malformed id is 400; without a key, 401', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  const body = expectError(t, await api.request({ method: 'GET', url: '/v1/store/orders/99', headers }), 404, 'not_found')
  t.equal(body.message, 'no order with id 99')
  for (const id of ['abc', '0', '-3', '1.5', '042', '9007199254740992']) {
    const res = await api.request({ method: 'GET', url: `/v1/store/orders/${id}`, headers })
    const error = expectError(t, res, 400, 'invalid_request', `orderId ${id}`)
    t.match(error.message, /^params\/orderId /, `orderId ${id}: names the parameter`)
  }
  expectUnauthorized(t, await api.request({ method: 'GET', url: '/v1/store/orders/1' }))
})

t.test('HEAD, ETag and If-None-Match, as on every GET', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  const res = await api.request({ method: 'GET', url: '/v1/store/orders/2', headers })
  t.equal(res.statusCode, 200)
  const etag = res.headers.etag
  t.match(etag, /^"[A-Za-z0-9_-]+"$/, 'a strong entity tag')

  const head = await api.request({ method: 'HEAD', url: '/v1/store/orders/2', headers })
  t.equal(head.statusCode, 200)
  t.equal(head.headers.etag, etag, 'HEAD: the same tag, no body')

  const notModified = await api.request({ method: 'GET', url: '/v1/store/orders/2', headers: { ...headers, 'if-none-match': String(etag) } })
  t.equal(notModified.statusCode, 304)

  t.equal((await api.request({ method: 'PATCH', url: '/v1/store/orders/2', headers, payload: { status: 'approved' } })).statusCode, 200)
  const changed = await api.request({ method: 'GET', url: '/v1/store/orders/2', headers: { ...headers, 'if-none-match': String(etag) } })
  t.equal(changed.statusCode, 200, 'a changed order: 200 with the new body')
  t.equal(changed.json().status, 'approved')
  t.not(changed.headers.etag, etag, 'and a new tag')
})

t.test('another method on the path is 405 with Allow', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  const res = await api.request({ method: 'PUT', url: '/v1/store/orders/2', headers, payload: { status: 'approved' } })
  expectError(t, res, 405, 'method_not_allowed')
  t.same(String(res.headers.allow).split(', ').sort(), ['DELETE', 'GET', 'HEAD', 'PATCH'])
})
