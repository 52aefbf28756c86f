import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { inventoryEntry, type Item, type Order, ordersOf, placeOrder, setStock } from '../helpers/orders.js'
import { createTestSchema } from '../helpers/postgres.js'

/**
 * Polls `read` every few milliseconds until `check` holds or `deadlineMs` have passed; returns the
 * last value read and how long it took.
 */
async function until<T> (read: () => Promise<T>, check: (value: T) => boolean, deadlineMs: number): Promise<{ value: T, ms: number }> {
  const started = Date.now()
  let value = await read()
  while (!check(value) && Date.now() - started < deadlineMs) {
    await sleep(2)
    value = await read()
  }
  return { value, ms: Date.now() - started }
}

t.test('two instances on one PostgreSQL schema: concurrent orders never oversell, and each sees the other\'s at once', async (t) => {
  const schema = await createTestSchema(t)
  const env = { DATABASE_URL: schema.url(), DATABASE_POOL_MAX: '4' }
  const [a, b] = await Promise.all([buildTestApp(t, { env }), buildTestApp(t, { env })]) as [TestApp, TestApp]
  const headers = { authorization: `Bearer ${await a.createKey('enterprise', { perMinute: 100000, perDay: 1000000 })}` }

  await setStock(a, headers, 8, 7)
  // b reads the entry before the orders, so what it shows later is news it had to learn.
  const onBBefore = await until(() => inventoryEntry(b, headers, 8), (e) => e.item?.quantity === 7, 5000)
  t.same(onBBefore.value.item, { petId: 8, quantity: 7, status: 'available' }, 'both start from 7 available')

  await t.test('40 concurrent orders of 1 across both instances: exactly 7 are placed', async (t) => {
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => placeOrder(i % 2 === 0 ? a : b, headers, { petId: 8, quantity: 1 })))
    const placed = answers.filter((res) => res.statusCode === 201)
    t.equal(placed.length, 7, '7 placed')
    t.same(answers.filter((res) => res.statusCode !== 201).map((res) => `${res.statusCode} ${res.json().code as string}`),
      Array.from({ length: 33 }, () => '409 insufficient_stock'), 'every other one refused with insufficient_stock')
    const orders = await ordersOf(a, headers, 8)
    t.equal(orders.reduce((sum, o) => sum + o.quantity, 0), 7, 'the stored orders reserve 7 units, no more')
  })

  await t.test('the other instance shows the entry pending within 100 ms', async (t) => {
    // Both wrote; each must show pending. The instance that did not place the last order learns of it by notification.
    for (const [name, api] of [['a', a], ['b', b]] as const) {
      const { value, ms } = await until(() => inventoryEntry(api, headers, 8), (e) => e.item?.status === 'pending', 100)
      t.same(value.item, { petId: 8, quantity: 7, status: 'pending' }, `on ${name}, pending within 100 ms (after ${ms} ms)`)
    }
  })

  await t.test('an order placed on a shows on b within 100 ms, and cancelling it on b shows on a', async (t) => {
    await setStock(a, headers, 6, 3)
    await until(() => inventoryEntry(b, headers, 6), (e) => e.item?.quantity === 3, 5000)
    const beforeOnB = await inventoryEntry(b, headers, 6)
    t.same(beforeOnB.item, { petId: 6, quantity: 3, status: 'available' })

    const res = await placeOrder(a, headers, { petId: 6, quantity: 3 })
    t.equal(res.statusCode, 201)
    const order = res.json() as Order
    const onB = await until(() => inventoryEntry(b, headers, 6), (e) => e.item?.status === 'pending', 100)
    t.same(onB.value.item, { petId: 6, quantity: 3, status: 'pending' }, `b shows the reservation within 100 ms (after ${onB.ms} ms)`)
    t.not(onB.value.etag, beforeOnB.etag, 'with a new entity tag')

    t.equal((await b.request({ method: 'DELETE', url: `/v1/store/orders/${order.id}`, headers })).statusCode, 204, 'cancelled on b')
    const onA = await until(() => inventoryEntry(a, headers, 6), (e) => e.item?.status === 'available', 100)
    t.same(onA.value.item, { petId: 6, quantity: 3, status: 'available' } satisfies Item, `a shows it freed within 100 ms (after ${onA.ms} ms)`)
  })

  await t.test('an Idempotency-Key holds across instances', async (t) => {
    await setStock(a, headers, 4, 5)
    const key = { 'idempotency-key': 'cross-instance-1' }
    const first = await placeOrder(a, headers, { petId: 4, quantity: 2 }, key)
    t.equal(first.statusCode, 201)
    const again = await placeOrder(b, headers, { petId: 4, quantity: 2 }, key)
    t.equal(again.statusCode, 201)
    t.equal(again.body, first.body, 'b replays a\'s answer')
    t.equal(again.headers['idempotent-replayed'], 'true')
    t.equal(again.headers.location, first.headers.location)
    const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => placeOrder(i % 2 === 0 ? a : b, headers, { petId: 4, quantity: 1 }, { 'idempotency-key': 'cross-instance-2' })))
    t.equal(burst.filter((res) => res.statusCode === 201 && res.headers['idempotent-replayed'] === undefined).length, 1, 'a burst on both instances places one order')
    t.equal((await ordersOf(a, headers, 4)).length, 2, 'two orders for pet 4 in all')
  })
})
