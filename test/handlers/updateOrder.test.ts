import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { expectError, expectUnauthorized } from '../helpers/assertions.js'
import { inventoryEntry, type Order, placeOrder, roomyHeaders, setStock } from '../helpers/orders.js'

const patchOrder = (api: Awaited<ReturnType<typeof buildTestApp>>, headers: Record<string, string>, id: number, payload: unknown) =>
  api.request({ method: 'PATCH', url: `/v1/store/orders/${id}`, headers, payload: payload as object })

t.test('placed → approved → delivered; the status it already has changes nothing', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)
  const placed = (await placeOrder(api, headers, { petId: 8, quantity: 3 })).json() as Order

  let res = await patchOrder(api, headers, placed.id, { status: 'approved' })
  t.equal(res.statusCode, 200)
  t.strictSame(res.json(), { ...placed, status: 'approved' }, 'approved, not complete, nothing else changed')
  t.same((await inventoryEntry(api, headers, 8)).item, { petId: 8, quantity: 7, status: 'available' }, 'approving keeps the reservation and the stock')

  res = await patchOrder(api, headers, placed.id, { status: 'approved' })
  t.equal(res.statusCode, 200, 'approved again: 200')
  t.strictSame(res.json(), { ...placed, status: 'approved' }, 'unchanged')

  res = await patchOrder(api, headers, placed.id, { status: 'delivered' })
  t.equal(res.statusCode, 200)
  t.strictSame(res.json(), { ...placed, status: 'delivered', complete: true }, 'delivered and complete')
  t.same((await inventoryEntry(api, headers, 8)).item, { petId: 8, quantity: 4, status: 'available' }, 'the 3 units left the stock')

  res = await patchOrder(api, headers, placed.id, { status: 'delivered' })
  t.equal(res.statusCode, 200, 'delivered again: 200')
  t.strictSame(res.json(), { ...placed, status: 'delivered', complete: true }, 'unchanged')
  t.same((await inventoryEntry(api, headers, 8)).item, { petId: 8, quantity: 4, status: 'available' }, 'and the stock is not lowered twice')

  const read = await api.request({ method: 'GET', url: `/v1/store/orders/${placed.id}`, headers })
  t.strictSame(read.json(), { ...placed, status: 'delivered', complete: true }, 'getOrderById agrees')
})

t.test('placed → delivered directly; delivering the whole stock leaves the pet sold', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)
  const placed = (await placeOrder(api, headers, { petId: 8, quantity: 7 })).json() as Order
  const reserved = await inventoryEntry(api, headers, 8)
  t.same(reserved.item, { petId: 8, quantity: 7, status: 'pending' }, 'all 7 reserved: pending')

  const res = await patchOrder(api, headers, placed.id, { status: 'delivered' })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { status: 'delivered', complete: true })
  const sold = await inventoryEntry(api, headers, 8)
  t.same(sold.item, { petId: 8, quantity: 0, status: 'sold' }, 'at once: no stock left, sold')
  t.not(sold.etag, reserved.etag, 'with a new entity tag')
})

t.test('a delivered order is final: 409 invalid_transition naming both statuses', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  // Demo order 1 is delivered.
  const body = expectError(t, await patchOrder(api, headers, 1, { status: 'approved' }), 409, 'invalid_transition')
  t.equal(body.message, 'order 1 is delivered; it cannot become approved')
  const read = await api.request({ method: 'GET', url: '/v1/store/orders/1', headers })
  t.match(read.json(), { status: 'delivered', complete: true }, 'unchanged')
})

t.test('delivering more than the stock now holds is 409 insufficient_stock, and nothing changes', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)
  const placed = (await placeOrder(api, headers, { petId: 8, quantity: 5 })).json() as Order
  await setStock(api, headers, 8, 2)

  const body = expectError(t, await patchOrder(api, headers, placed.id, { status: 'delivered' }), 409, 'insufficient_stock')
  t.equal(body.message, `pet 8 has 2 units in stock; order ${placed.id} needs 5`)
  const read = await api.request({ method: 'GET', url: `/v1/store/orders/${placed.id}`, headers })
  t.strictSame(read.json(), placed, 'the order is still placed')
  t.same((await inventoryEntry(api, headers, 8)).item, { petId: 8, quantity: 2, status: 'pending' }, 'the stock untouched')

  await setStock(api, headers, 8, 5)
  t.equal((await patchOrder(api, headers, placed.id, { status: 'delivered' })).statusCode, 200, 'with the stock back, it is delivered')
  t.same((await inventoryEntry(api, headers, 8)).item, { petId: 8, quantity: 0, status: 'sold' })
})

t.test('bad input is 400, an unknown order 404, without a key 401', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  for (const payload of [{ status: 'placed' }, { status: 'shipped' }, {}, { status: 'approved', complete: true }, { status: null }]) {
    expectError(t, await patchOrder(api, headers, 2, payload), 400, 'invalid_request', JSON.stringify(payload))
  }
  const read = await api.request({ method: 'GET', url: '/v1/store/orders/2', headers })
  t.match(read.json(), { status: 'placed' }, 'order 2 untouched')
  const body = expectError(t, await patchOrder(api, headers, 99, { status: 'approved' }), 404, 'not_found')
  t.equal(body.message, 'no order with id 99')
  expectError(t, await patchOrder(api, headers, 0, { status: 'approved' }), 400, 'invalid_request', 'orderId 0')
  expectUnauthorized(t, await patchOrder(api, {}, 2, { status: 'approved' }))
})
