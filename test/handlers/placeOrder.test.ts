import t from 'tap'
import { demoCatalogue } from '../../src/store/demo-catalogue.js'
import { buildTestApp } from '../helpers/app.js'
import { expectError, expectUnauthorized } from '../helpers/assertions.js'
import { holdInventoryRow, inventoryEntry, type Order, ordersOf, placeOrder, roomyHeaders, setStock } from '../helpers/orders.js'

// The demo catalogue (src/store/demo-catalogue.ts): every pet has an inventory entry; pets 4, 6
// and 8 have no open order; pet 99 does not exist. Each test sets the stock it needs first.

t.test('placeOrder places an order: 201, the order, its Location, and the order can be read there', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)

  const before = Date.now()
  const res = await placeOrder(api, headers, { petId: 8, quantity: 2 })
  const after = Date.now()
  t.equal(res.statusCode, 201)
  const order = res.json() as Order
  t.match(order, { petId: 8, quantity: 2, status: 'placed', complete: false })
  const demoIds = demoCatalogue.orders!.map((o) => o.id)
  t.ok(Number.isSafeInteger(order.id) && order.id > Math.max(...demoIds), `the service gave the id ${order.id}, after the demo orders ${demoIds.join(', ')}`)
  const shipped = Date.parse(order.shipDate)
  t.ok(shipped >= before - 1000 && shipped <= after + 1000, `without a shipDate, the time of placing (${order.shipDate})`)
  t.equal(res.headers.location, `/v1/store/orders/${order.id}`, 'Location names the order')
  t.equal(res.headers['idempotent-replayed'], undefined, 'a first answer is not marked replayed')

  const read = await api.request({ method: 'GET', url: String(res.headers.location), headers })
  t.equal(read.statusCode, 200)
  t.strictSame(read.json(), order, 'GET at Location returns the order as placed')

  const dated = await placeOrder(api, headers, { petId: 8, quantity: 1, shipDate: '2026-12-02T10:30:00+01:00' })
  t.equal(dated.statusCode, 201)
  const second = dated.json() as Order
  t.equal(Date.parse(second.shipDate), Date.parse('2026-12-02T09:30:00Z'), 'the shipDate sent, the same instant')
  t.ok(second.id > order.id, 'ids increase')
})

t.test('a pet without an inventory entry is 404, and nothing is placed', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  const body = expectError(t, await placeOrder(api, headers, { petId: 99, quantity: 1 }), 404, 'not_found')
  t.equal(body.message, 'no inventory entry for pet 99')
  t.same(await ordersOf(api, headers, 99), [], 'no order for pet 99')
})

t.test('a malformed body or Idempotency-Key is 400 invalid_request naming the field; without a key, 401', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  const invalid: [unknown, RegExp][] = [
    [{ petId: 8, quantity: 0 }, /^body\/quantity /],
    [{ petId: 8, quantity: 1001 }, /^body\/quantity /],
    [{ petId: 8, quantity: '2' }, /^body\/quantity must be integer/],
    [{ petId: 8, quantity: 1.5 }, /^body\/quantity must be integer/],
    [{ petId: 0, quantity: 1 }, /^body\/petId /],
    [{ petId: 9007199254740992, quantity: 1 }, /^body\/petId /],
    [{ quantity: 1 }, /petId/],
    [{ petId: 8 }, /quantity/],
    [{ petId: 8, quantity: 1, shipDate: 'tomorrow' }, /^body\/shipDate /],
    [{ petId: 8, quantity: 1, status: 'delivered' }, /additional properties/],
    [[{ petId: 8, quantity: 1 }], /^body /]
  ]
  for (const [payload, message] of invalid) {
    const body = expectError(t, await placeOrder(api, headers, payload), 400, 'invalid_request', JSON.stringify(payload))
    t.match(body.message, message, `${JSON.stringify(payload)}: ${body.message}`)
  }
  for (const key of ['has space', 'x'.repeat(256), 'tab\there']) {
    const body = expectError(t, await placeOrder(api, headers, { petId: 8, quantity: 1 }, { 'idempotency-key': key }), 400, 'invalid_request', `Idempotency-Key ${JSON.stringify(key.slice(0, 20))}`)
    t.match(body.message, /idempotency-key/i, 'names the header')
  }
  t.same(await ordersOf(api, headers, 8), [], 'nothing was placed')
  expectUnauthorized(t, await placeOrder(api, {}, { petId: 8, quantity: 1 }))
})

t.test('no overselling: an order is placed only while the stock not yet reserved covers it', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)

  t.equal((await placeOrder(api, headers, { petId: 8, quantity: 4 })).statusCode, 201, '4 of 7')
  let body = expectError(t, await placeOrder(api, headers, { petId: 8, quantity: 5 }), 409, 'insufficient_stock')
  t.equal(body.message, 'pet 8 has 3 units left to reserve; 5 requested', 'says how many can still be reserved')
  t.equal((await placeOrder(api, headers, { petId: 8, quantity: 3 })).statusCode, 201, 'the 3 left')
  body = expectError(t, await placeOrder(api, headers, { petId: 8, quantity: 2 }), 409, 'insufficient_stock')
  t.equal(body.message, 'pet 8 has 0 units left to reserve; 2 requested')
  t.same((await ordersOf(api, headers, 8)).map((o) => o.quantity), [4, 3], 'exactly the orders that fitted')

  // A delivered order reserves nothing: pet 10 has 25 and a delivered demo order of 5.
  await setStock(api, headers, 10, 3)
  t.equal((await placeOrder(api, headers, { petId: 10, quantity: 3 })).statusCode, 201, 'delivered orders do not count')
})

t.test('20 concurrent orders of 1 for a pet with 7 in stock: exactly 7 are placed', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)

  const answers = await Promise.all(Array.from({ length: 20 }, () => placeOrder(api, headers, { petId: 8, quantity: 1 })))
  const placed = answers.filter((res) => res.statusCode === 201)
  const refused = answers.filter((res) => res.statusCode === 409)
  t.equal(placed.length, 7, '7 placed')
  t.equal(refused.length, 13, 'the 13 others refused')
  for (const res of refused) t.equal(res.json().code, 'insufficient_stock')
  t.equal(new Set(placed.map((res) => (res.json() as Order).id)).size, 7, 'seven distinct orders')

  const orders = await ordersOf(api, headers, 8)
  t.equal(orders.length, 7, 'listOrders has the same seven')
  t.equal(orders.reduce((sum, o) => sum + o.quantity, 0), 7, 'reserving the whole stock, no more')
  t.same((await inventoryEntry(api, headers, 8)).item, { petId: 8, quantity: 7, status: 'pending' }, 'and the entry is pending')
})

t.test('placing reserves: the entry turns pending once its open orders reserve its stock, at once and with a new ETag', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)
  const start = await inventoryEntry(api, headers, 8)
  t.same(start.item, { petId: 8, quantity: 7, status: 'available' })

  t.equal((await placeOrder(api, headers, { petId: 8, quantity: 6 })).statusCode, 201)
  const partly = await inventoryEntry(api, headers, 8)
  t.same(partly.item, { petId: 8, quantity: 7, status: 'available' }, '6 of 7 reserved: still available')

  t.equal((await placeOrder(api, headers, { petId: 8, quantity: 1 })).statusCode, 201)
  const all = await inventoryEntry(api, headers, 8)
  t.same(all.item, { petId: 8, quantity: 7, status: 'pending' }, '7 of 7 reserved: pending, on the next read')
  t.not(all.etag, start.etag, 'a new entity tag')
  const stale = await api.request({ method: 'GET', url: '/v1/inventory', headers: { ...headers, 'if-none-match': start.etag } })
  t.equal(stale.statusCode, 200, 'the old tag no longer gets 304')

  const pet = await api.request({ method: 'GET', url: '/v1/pets/8', headers })
  t.equal(pet.json().status, 'pending', 'getPetById follows the same rule')
})

t.test('Idempotency-Key: a repeat gets the first answer again and places nothing', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)
  const key = { 'idempotency-key': '8e0f3c5e-6d2b-4c1e-9a57-2f1d3b6a7c90' }

  const first = await placeOrder(api, headers, { petId: 8, quantity: 2, shipDate: '2026-12-02T09:30:00Z' }, key)
  t.equal(first.statusCode, 201)
  t.equal(first.headers['idempotent-replayed'], undefined, 'the first answer is not a replay')

  // The same JSON value: other property order, other white space.
  const repeat = await api.request({
    method: 'POST',
    url: '/v1/store/orders',
    headers: { ...headers, ...key, 'content-type': 'application/json' },
    payload: '{ "shipDate": "2026-12-02T09:30:00Z",\n  "quantity": 2, "petId": 8 }'
  })
  t.equal(repeat.statusCode, 201, 'the same status')
  t.equal(repeat.body, first.body, 'the same body')
  t.equal(repeat.headers.location, first.headers.location, 'the same Location')
  t.equal(repeat.headers['idempotent-replayed'], 'true', 'marked Idempotent-Replayed: true')

  t.equal((await ordersOf(api, headers, 8)).length, 1, 'one order, not two')
  t.same((await inventoryEntry(api, headers, 8)).item, { petId: 8, quantity: 7, status: 'available' }, 'reserving 2, once')

  const other = await placeOrder(api, headers, { petId: 8, quantity: 3 }, key)
  const body = expectError(t, other, 422, 'idempotency_key_reused')
  t.equal(body.message, 'this Idempotency-Key was used with another request body')
  t.equal((await ordersOf(api, headers, 8)).length, 1, 'still one order')

  // The replay is the first answer as it was sent, even after the order moved on.
  const id = (first.json() as Order).id
  t.equal((await api.request({ method: 'PATCH', url: `/v1/store/orders/${id}`, headers, payload: { status: 'approved' } })).statusCode, 200)
  const later = await placeOrder(api, headers, { petId: 8, quantity: 2, shipDate: '2026-12-02T09:30:00Z' }, key)
  t.equal(later.body, first.body, 'still the first answer')
  t.equal(later.headers['idempotent-replayed'], 'true')
})

t.test('Idempotency-Key belongs to the API key that sent it', async (t) => {
  const api = await buildTestApp(t)
  const [a, b] = [await roomyHeaders(api), await roomyHeaders(api)]
  await setStock(api, a, 8, 7)
  const key = { 'idempotency-key': 'order-2026-12-02-0001' }
  const fromA = await placeOrder(api, a, { petId: 8, quantity: 1 }, key)
  const fromB = await placeOrder(api, b, { petId: 8, quantity: 1 }, key)
  t.equal(fromA.statusCode, 201)
  t.equal(fromB.statusCode, 201)
  t.equal(fromB.headers['idempotent-replayed'], undefined, 'another API key: a new request, not a replay')
  t.not((fromB.json() as Order).id, (fromA.json() as Order).id, 'two orders')
  t.equal((await ordersOf(api, a, 8)).length, 2)
})

t.test('Idempotency-Key: the answers of placing are kept, 404 and 409 included', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)

  const missing = { 'idempotency-key': 'missing-pet-1' }
  const first404 = await placeOrder(api, headers, { petId: 99, quantity: 1 }, missing)
  expectError(t, first404, 404, 'not_found')
  const again404 = await placeOrder(api, headers, { petId: 99, quantity: 1 }, missing)
  expectError(t, again404, 404, 'not_found', 'the 404 replayed')
  t.equal(again404.body, first404.body)
  t.equal(again404.headers['idempotent-replayed'], 'true')

  const tooMany = { 'idempotency-key': 'too-many-1' }
  const first409 = await placeOrder(api, headers, { petId: 8, quantity: 8 }, tooMany)
  expectError(t, first409, 409, 'insufficient_stock')
  await setStock(api, headers, 8, 20)
  const again409 = await placeOrder(api, headers, { petId: 8, quantity: 8 }, tooMany)
  expectError(t, again409, 409, 'insufficient_stock', 'replayed, though the stock now covers it')
  t.equal(again409.body, first409.body)
  t.equal(again409.headers['idempotent-replayed'], 'true')
  t.same(await ordersOf(api, headers, 8), [], 'nothing placed')
})

t.test('Idempotency-Key: 401 and 429 answers are not kept; a retry runs again', async (t) => {
  let clock = Date.parse('2026-12-02T09:30:10Z')
  const api = await buildTestApp(t, { now: () => clock })
  const roomy = await roomyHeaders(api)
  await setStock(api, roomy, 8, 7)

  const k1 = { 'idempotency-key': 'not-kept-401' }
  expectUnauthorized(t, await placeOrder(api, { authorization: `Bearer psk_${'A'.repeat(43)}` }, { petId: 8, quantity: 1 }, k1))
  const after401 = await placeOrder(api, roomy, { petId: 8, quantity: 1 }, k1)
  t.equal(after401.statusCode, 201, 'after a 401, the same Idempotency-Key places the order')
  t.equal(after401.headers['idempotent-replayed'], undefined, 'not a replay')

  // A key of 2 requests a minute: two GETs use them up.
  const tight = { authorization: `Bearer ${await api.createKey('enterprise', { perMinute: 2, perDay: 1000 })}` }
  t.equal((await api.request({ method: 'GET', url: '/v1/inventory', headers: tight })).statusCode, 200)
  t.equal((await api.request({ method: 'GET', url: '/v1/inventory', headers: tight })).statusCode, 200)
  const k2 = { 'idempotency-key': 'not-kept-429' }
  expectError(t, await placeOrder(api, tight, { petId: 8, quantity: 1 }, k2), 429, 'rate_limited')
  clock += 60_000
  const after429 = await placeOrder(api, tight, { petId: 8, quantity: 1 }, k2)
  t.equal(after429.statusCode, 201, 'in the next minute, the retry places the order')
  t.equal(after429.headers['idempotent-replayed'], undefined, 'not a replay')
  t.equal((await ordersOf(api, roomy, 8)).length, 2, 'two orders, one per retried request')
})

t.test('Idempotency-Key: a 503 (the storage busy past DATABASE_TIMEOUT_MS) is not kept; a retry runs again', async (t) => {
  const api = await buildTestApp(t, { env: { DATABASE_TIMEOUT_MS: '300' } })
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)
  const key = { 'idempotency-key': 'not-kept-503' }

  // Another writer holds pet 8's entry (on SQLite the whole file) for longer than the service waits.
  const held = await holdInventoryRow(t, api.config.databaseUrl, 8)
  expectError(t, await placeOrder(api, headers, { petId: 8, quantity: 1 }, key), 503, 'service_unavailable')
  await held.release()

  const retry = await placeOrder(api, headers, { petId: 8, quantity: 1 }, key)
  t.equal(retry.statusCode, 201, 'the retry places the order')
  t.equal(retry.headers['idempotent-replayed'], undefined, 'not a replay of the 503')
  t.equal((await ordersOf(api, headers, 8)).length, 1, 'one order')
})

t.test('concurrent repeats of one Idempotency-Key place one order', async (t) => {
  const api = await buildTestApp(t)
  const headers = await roomyHeaders(api)
  await setStock(api, headers, 8, 7)
  const key = { 'idempotency-key': 'burst-1' }
  const answers = await Promise.all(Array.from({ length: 10 }, () => placeOrder(api, headers, { petId: 8, quantity: 1 }, key)))
  const originals = answers.filter((res) => res.statusCode === 201 && res.headers['idempotent-replayed'] === undefined)
  t.equal(originals.length, 1, 'one answer placed the order')
  for (const res of answers) {
    if (res === originals[0]) continue
    const replayed = res.statusCode === 201 && res.headers['idempotent-replayed'] === 'true' && res.body === originals[0]?.body
    const inUse = res.statusCode === 409 && res.json().code === 'idempotency_key_in_use'
    t.ok(replayed || inUse, `every other answer is the replay or idempotency_key_in_use (${res.statusCode} ${res.body})`)
  }
  t.equal((await ordersOf(api, headers, 8)).length, 1, 'one order')
})
