import t from 'tap'
import type { Order } from '../../src/store/types.js'
import { buildTestApp } from '../helpers/app.js'
import { demoCatalogue } from '../../src/store/demo-catalogue.js'

const orders: Order[] = [
  { id: 100, petId: 2, quantity: 1, shipDate: '2026-12-03T08:00:00.000Z', status: 'delivered', complete: true },
  { id: 3, petId: 1, quantity: 4, shipDate: '2026-12-01T10:30:00.000Z', status: 'placed', complete: false },
  { id: Number.MAX_SAFE_INTEGER, petId: 1, quantity: 2147483647, shipDate: '2027-01-15T23:59:59.000Z', status: 'approved', complete: false },
  { id: 12, petId: 2, quantity: 2, shipDate: '2026-12-02T09:15:00.000Z', status: 'approved', complete: false },
  { id: 7, petId: 1, quantity: 1, shipDate: '2026-11-30T16:45:00.000Z', status: 'delivered', complete: true }
]

t.test('an empty store lists no orders', async (t) => {
  const api = await buildTestApp(t, { env: { SEED: 'false' } })
  const res = await api.request({ method: 'GET', url: '/v1/store/orders', headers: await api.authHeader() })
  t.equal(res.statusCode, 200)
  t.same(res.json(), [])
})

t.test('listOrders returns every order, ordered by id, in the classic Petstore shape', async (t) => {
  const api = await buildTestApp(t, { env: { SEED: 'false' } })
  await api.store.importCatalogue({ pets: [{ id: 1, name: 'A', photoUrls: [] }, { id: 2, name: 'B', photoUrls: [] }], orders })
  const res = await api.request({ method: 'GET', url: '/v1/store/orders', headers: await api.authHeader() })
  t.equal(res.statusCode, 200)
  const sorted = [...orders].sort((a, b) => a.id - b.id)
  t.strictSame(res.json(), sorted, 'every order exactly as stored (complete a boolean, shipDate an ISO date-time), ascending by id')
})

t.test('the demo catalogue has orders of every status', async (t) => {
  const api = await buildTestApp(t)
  const res = await api.request({ method: 'GET', url: '/v1/store/orders', headers: await api.authHeader() })
  const list = res.json() as Order[]
  t.equal(list.length, demoCatalogue.orders!.length)
  t.same([...new Set(list.map((o) => o.status))].sort(), ['approved', 'delivered', 'placed'])
  t.same(list.map((o) => o.id), [...list.map((o) => o.id)].sort((a, b) => a - b), 'ascending ids')
})
