import t from 'tap'
import { buildTestApp } from '../helpers/app.js'

t.test('updateInventory sets the stock and answers with the resulting status', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader()
  const patch = (petId: string | number, payload: unknown) =>
    api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, headers, payload: payload as object })

  // Demo catalogue: pet 3 has 2 in stock and an open order for 2 (pending).
  let res = await patch(3, { quantity: 2 })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { petId: 3, quantity: 2, status: 'pending' })

  res = await patch(3, { quantity: 3 })
  t.same(res.json(), { petId: 3, quantity: 3, status: 'available' }, 'more stock than reserved: available')

  res = await patch(3, { quantity: 0 })
  t.same(res.json(), { petId: 3, quantity: 0, status: 'sold' }, 'zero stock: sold')

  res = await patch(3, { quantity: 2147483647 })
  t.same(res.json(), { petId: 3, quantity: 2147483647, status: 'available' }, 'the upper bound is accepted')

  res = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  t.same(res.json().find((i: { petId: number }) => i.petId === 3), { petId: 3, quantity: 2147483647, status: 'available' }, 'the list shows the write')
})

t.test('updateInventory rejects invalid bodies with 400 naming the field, and changes nothing', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader()
  const cases: [string, unknown, RegExp][] = [
    ['a string', { quantity: '5' }, /body\/quantity must be integer/],
    ['a fraction', { quantity: 5.5 }, /body\/quantity must be integer/],
    ['null', { quantity: null }, /body\/quantity must be integer/],
    ['an array', { quantity: [5] }, /body\/quantity must be integer/],
    ['a negative number', { quantity: -1 }, /body\/quantity must be >= 0/],
    ['above int32', { quantity: 2147483648 }, /body\/quantity must be <= 2147483647/],
    ['missing quantity', {}, /body must have required property 'quantity'/],
    ['an unknown property', { quantity: 5, status: 'sold' }, /body must NOT have additional properties \('status'\)/],
    ['not an object', [1], /body must be object/]
  ]
  for (const [name, payload, message] of cases) {
    const res = await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers, payload: payload as object })
    t.equal(res.statusCode, 400, name)
    t.equal(res.json().code, 'invalid_request', name)
    t.match(res.json().message, message, name)
  }
  const res = await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { ...headers, 'content-type': 'application/json' } })
  t.equal(res.statusCode, 400, 'no body at all')
  const list = await api.request({ method: 'GET', url: '/v1/inventory', headers })
  t.same(list.json()[0], { petId: 1, quantity: 4, status: 'available' }, 'pet 1 is untouched')
})

t.test('updateInventory path parameter: whole numbers in range, written in plain decimal', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader()
  for (const petId of ['abc', '1.5', '0', '-3', '1e3', '+1', '0x10', '007', '9007199254740992', '9007199254740993', '99999999999999999999999']) {
    const res = await api.request({ method: 'PATCH', url: `/v1/inventory/${petId}`, headers, payload: { quantity: 1 } })
    t.equal(res.statusCode, 400, `petId ${petId}`)
    t.match(res.json().message, /^params\/petId /, `petId ${petId} is named`)
  }
  const res = await api.request({ method: 'PATCH', url: '/v1/inventory/9007199254740991', headers, payload: { quantity: 1 } })
  t.equal(res.statusCode, 404, 'the largest exact id is valid, and unknown')
})

t.test('updateInventory answers 404 for a pet without an inventory entry', async (t) => {
  const api = await buildTestApp(t)
  const res = await api.request({ method: 'PATCH', url: '/v1/inventory/999', headers: await api.authHeader(), payload: { quantity: 1 } })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { code: 'not_found', message: 'no inventory entry for pet 999', status: 404 })
})
