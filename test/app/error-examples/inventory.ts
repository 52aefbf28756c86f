import type { Provocation } from './provocation.js'

/** The errors of the inventory operations' own handlers. */
export const provoke: Provocation = async (api) => {
  const headers = { ...await api.authHeader(), 'content-type': 'application/json' }
  return [
    ['a pet without an inventory entry', await api.request({ method: 'PATCH', url: '/v1/inventory/42', headers, payload: { quantity: 1 } })]
  ]
}
