import t from 'tap'
import type { Catalogue } from '../../src/store/types.js'
import { buildTestApp } from '../helpers/app.js'

type Item = { petId: number, quantity: number, status: string }

const MAX_ID = Number.MAX_SAFE_INTEGER
const pet = (id: number) => ({ id, name: `Pet ${id}`, photoUrls: [] })
let nextOrderId = 500
const order = (petId: number, quantity: number, status: 'placed' | 'approved' | 'delivered') =>
  ({ id: nextOrderId--, petId, quantity, shipDate: '2026-12-01T12:00:00.000Z', status, complete: status === 'delivered' })

// Every case of the status rule (openapi.yaml, InventoryItem.status), inserted out of order.
const cases: { petId: number, quantity: number, orders: ReturnType<typeof order>[], status: string, why: string }[] = [
  { petId: 30, quantity: 3, orders: [order(30, 3, 'placed')], status: 'pending', why: 'placed orders reserve exactly the stock' },
  { petId: 2, quantity: 0, orders: [], status: 'sold', why: 'no stock, no orders' },
  { petId: MAX_ID, quantity: 1, orders: [], status: 'available', why: 'the largest exact id, in stock' },
  { petId: 17, quantity: 3, orders: [], status: 'available', why: 'in stock, nothing reserved' },
  { petId: 5, quantity: 0, orders: [order(5, 2, 'placed'), order(5, 1, 'approved')], status: 'sold', why: 'no stock wins over open orders' },
  { petId: 40, quantity: 3, orders: [order(40, 5, 'approved')], status: 'pending', why: 'approved orders reserve more than the stock' },
  { petId: 41, quantity: 5, orders: [order(41, 2, 'placed'), order(41, 3, 'approved')], status: 'pending', why: 'placed and approved add up to the stock' },
  { petId: 42, quantity: 5, orders: [order(42, 2, 'placed'), order(42, 2, 'approved')], status: 'available', why: 'open orders reserve one unit less than the stock' },
  { petId: 43, quantity: 2, orders: [order(43, 10, 'delivered')], status: 'available', why: 'delivered orders reserve nothing' },
  { petId: 44, quantity: 2, orders: [order(44, 5, 'delivered'), order(44, 1, 'placed')], status: 'available', why: 'only the open order counts' },
  { petId: 45, quantity: 2, orders: [order(46, 2, 'placed')], status: 'available', why: 'orders for another pet do not count' },
  { petId: 46, quantity: 1, orders: [], status: 'pending', why: 'reserved by the order listed with pet 45' },
  { petId: 1, quantity: 2147483647, orders: [order(1, 2147483647, 'approved')], status: 'pending', why: 'the largest quantity, fully reserved' }
]

const catalogue: Catalogue = {
  pets: cases.map((c) => pet(c.petId)),
  inventory: cases.map((c) => ({ petId: c.petId, quantity: c.quantity })),
  orders: cases.flatMap((c) => c.orders)
}

t.test('an empty store lists no inventory', async (t) => {
  const api = await buildTestApp(t, { env: { SEED: 'false' } })
  const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: await api.authHeader() })
  t.equal(res.statusCode, 200)
  t.same(res.json(), [])
})

t.test('listInventory returns every entry ordered by petId, with the status rule of openapi.yaml', async (t) => {
  const api = await buildTestApp(t, { env: { SEED: 'false' } })
  await api.store.importCatalogue(catalogue)
  const res = await api.request({ method: 'GET', url: '/v1/inventory', headers: await api.authHeader() })
  t.equal(res.statusCode, 200)
  const items = res.json() as Item[]
  t.same(items.map((i) => i.petId), cases.map((c) => c.petId).sort((a, b) => a - b), 'every entry, in ascending petId order')
  for (const c of cases) {
    t.strictSame(items.find((i) => i.petId === c.petId), { petId: c.petId, quantity: c.quantity, status: c.status }, `pet ${c.petId} ${c.status}: ${c.why}`)
  }
})

t.test('the status follows the orders and the stock as they change; it is never stored', async (t) => {
  const api = await buildTestApp(t, { env: { SEED: 'false' } })
  const headers = await api.authHeader()
  await api.store.importCatalogue({ pets: [pet(7)], inventory: [{ petId: 7, quantity: 2 }], orders: [{ ...order(7, 2, 'placed'), id: 1 }] })
  const statusOf7 = async () => ((await api.request({ method: 'GET', url: '/v1/inventory', headers })).json() as Item[])[0]!.status

  t.equal(await statusOf7(), 'pending', 'an open order for the whole stock')
  await api.store.importCatalogue({ orders: [{ ...order(7, 2, 'approved'), id: 1 }] })
  t.equal(await statusOf7(), 'pending', 'approved still reserves')
  await api.store.importCatalogue({ orders: [{ ...order(7, 2, 'delivered'), id: 1 }] })
  t.equal(await statusOf7(), 'available', 'once delivered the order reserves nothing')
  await api.store.importCatalogue({ orders: [{ ...order(7, 1, 'placed'), id: 2 }] })
  t.equal(await statusOf7(), 'available', 'a new open order for half the stock')
  const patched = await api.request({ method: 'PATCH', url: '/v1/inventory/7', headers, payload: { quantity: 1 } })
  t.same(patched.json(), { petId: 7, quantity: 1, status: 'pending' }, 'lowering the stock to the reservation makes it pending')
  t.equal(await statusOf7(), 'pending', 'and the list agrees')
  await api.request({ method: 'PATCH', url: '/v1/inventory/7', headers, payload: { quantity: 0 } })
  t.equal(await statusOf7(), 'sold', 'no stock: sold')
})

t.test('the demo catalogue of a first start shows every status', async (t) => {
  const api = await buildTestApp(t)
  const items = (await api.request({ method: 'GET', url: '/v1/inventory', headers: await api.authHeader() })).json() as Item[]
  t.ok(items.length > 0, 'the demo catalogue is loaded into an empty database')
  t.same([...new Set(items.map((i) => i.status))].sort(), ['available', 'pending', 'sold'])
})
