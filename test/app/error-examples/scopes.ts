import type { Provocation } from './provocation.js'

/** A key without the scope an operation needs: 403 insufficient_scope, decided before its handler runs. */
export const provoke: Provocation = async (api) => {
  const limits = { perMinute: 100_000, perDay: 10_000_000 }
  const readsInventory = { authorization: `Bearer ${await api.createKey('enterprise', limits, ['inventory:read'])}` }
  const readsOrders = { authorization: `Bearer ${await api.createKey('enterprise', limits, ['orders:read'])}` }
  return [
    ['placeOrder with a key that may only read the inventory', await api.request({
      method: 'POST', url: '/v1/store/orders', headers: { ...readsInventory, 'content-type': 'application/json' }, payload: { petId: 12, quantity: 2 }
    })],
    ['getPetById with a key that may only read orders', await api.request({ method: 'GET', url: '/v1/pets/12', headers: readsOrders })]
  ]
}
