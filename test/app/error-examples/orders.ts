import type { Provocation } from './provocation.js'

/**
 * The errors of the order operations' own handlers, on the demo catalogue (pets 1 to 10, orders
 * 1 to 6). Pet 12 and orders 41 and 42 are added after the 404s, so the messages are the ones of
 * openapi.yaml's examples. (idempotency_key_in_use needs a transaction still open on PostgreSQL:
 * test/postgres/orders-in-progress.test.ts provokes it and compares the message.)
 */
export const provoke: Provocation = async (api) => {
  const headers = { ...await api.authHeader('pro'), 'content-type': 'application/json' }
  const send = (method: string, url: string, payload?: object, extra: Record<string, string> = {}) =>
    api.request({ method, url, headers: { ...headers, ...extra }, ...(payload === undefined ? {} : { payload }) })

  const provoked: Awaited<ReturnType<Provocation>> = [
    ['an order for a pet without an inventory entry', await send('POST', '/v1/store/orders', { petId: 12, quantity: 1 })],
    ['an unknown order', await send('GET', '/v1/store/orders/42')]
  ]
  const placed = await send('POST', '/v1/store/orders', { petId: 8, quantity: 1 }, { 'idempotency-key': 'order-8-1' })
  if (placed.statusCode !== 201) throw new Error(`placeOrder answered ${placed.statusCode}: ${placed.body}`)
  provoked.push(['the Idempotency-Key again with another body', await send('POST', '/v1/store/orders', { petId: 8, quantity: 2 }, { 'idempotency-key': 'order-8-1' })])

  // Pet 12 with 9 in stock and open orders 41 (1 unit) and 42 (5 units): 3 left to reserve.
  await api.store.importCatalogue({
    pets: [{ id: 12, name: 'Pepper', photoUrls: [] }],
    inventory: [{ petId: 12, quantity: 9 }],
    orders: [
      { id: 41, petId: 12, quantity: 1, shipDate: '2026-12-01T10:00:00.000Z', status: 'placed', complete: false },
      { id: 42, petId: 12, quantity: 5, shipDate: '2026-12-02T09:30:00.000Z', status: 'placed', complete: false }
    ]
  })
  provoked.push(['more than the stock left to reserve', await send('POST', '/v1/store/orders', { petId: 12, quantity: 5 })])
  await send('PATCH', '/v1/inventory/12', { quantity: 2 })
  provoked.push(['delivering more than the stock', await send('PATCH', '/v1/store/orders/42', { status: 'delivered' })])
  await send('PATCH', '/v1/inventory/12', { quantity: 7 })
  const delivered = await send('PATCH', '/v1/store/orders/42', { status: 'delivered' })
  if (delivered.statusCode !== 200) throw new Error(`updateOrder answered ${delivered.statusCode}: ${delivered.body}`)
  provoked.push(['approving a delivered order', await send('PATCH', '/v1/store/orders/42', { status: 'approved' })])
  provoked.push(['cancelling a delivered order', await send('DELETE', '/v1/store/orders/42')])
  return provoked
}
