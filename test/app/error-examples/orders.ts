import type { Provocation } from './provocation.js'

/**
 * The errors of the order operations' own handlers, on the demo catalogue, which holds the pet 12
 * (7 in stock) and the open order 42 (2 units) of openapi.yaml's examples; pet 99 and order 99 do
 * not exist. (idempotency_key_in_use needs a request still in progress, which only PostgreSQL
 * has: error-examples.test.ts provokes it on an app of its own.)
 */
export const provoke: Provocation = async (api) => {
  const headers = { ...await api.authHeader('pro'), 'content-type': 'application/json' }
  const send = (method: string, url: string, payload?: object, extra: Record<string, string> = {}) =>
    api.request({ method, url, headers: { ...headers, ...extra }, ...(payload === undefined ? {} : { payload }) })
  const expect = async (status: number, what: string, sending: Promise<Awaited<ReturnType<typeof send>>>) => {
    const res = await sending
    if (res.statusCode !== status) throw new Error(`${what} answered ${res.statusCode}: ${res.body}`)
  }

  const provoked: Awaited<ReturnType<Provocation>> = [
    ['an order for a pet without an inventory entry', await send('POST', '/v1/store/orders', { petId: 99, quantity: 1 })],
    ['an unknown order', await send('GET', '/v1/store/orders/99')],
    ['a cursor this service did not give', await send('GET', '/v1/store/orders?cursor=not-a-cursor')]
  ]
  await expect(201, 'placeOrder', send('POST', '/v1/store/orders', { petId: 8, quantity: 1 }, { 'idempotency-key': 'order-8-1' }))
  provoked.push(['the Idempotency-Key again with another body', await send('POST', '/v1/store/orders', { petId: 8, quantity: 2 }, { 'idempotency-key': 'order-8-1' })])

  // Pet 12: 7 in stock; order 42 and one more of 2 reserve 4, so 3 are left to reserve.
  await expect(201, 'placeOrder', send('POST', '/v1/store/orders', { petId: 12, quantity: 2 }))
  provoked.push(['more than the stock left to reserve', await send('POST', '/v1/store/orders', { petId: 12, quantity: 5 })])

  // Order 42 of 5 units (the import replaces the demo's), delivered from a stock lowered to 2.
  await api.store.importCatalogue({ orders: [{ id: 42, petId: 12, quantity: 5, shipDate: '2026-12-02T09:30:00.000Z', status: 'placed', complete: false }] })
  await expect(200, 'updateInventory', send('PATCH', '/v1/inventory/12', { quantity: 2 }))
  provoked.push(['delivering more than the stock', await send('PATCH', '/v1/store/orders/42', { status: 'delivered' })])
  await expect(200, 'updateInventory', send('PATCH', '/v1/inventory/12', { quantity: 7 }))
  await expect(200, 'updateOrder', send('PATCH', '/v1/store/orders/42', { status: 'delivered' }))
  provoked.push(['approving a delivered order', await send('PATCH', '/v1/store/orders/42', { status: 'approved' })])
  // Sent with the Content-Type of the requests above and no body, as many clients do.
  provoked.push(['cancelling a delivered order', await send('DELETE', '/v1/store/orders/42')])
  return provoked
}
