/**
 * A body that can never change (every object in it frozen, as the stores' cached pets are) is
 * checked against openapi.yaml and turned into bytes once, then sent as those bytes
 * (src/contract/validation.ts). These tests hold the rule to what makes it safe: only a deeply
 * frozen body is kept, a refused one never is, and a cached pet still changes with its stock.
 */
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'

type Pet = { id: number, name: string, photoUrls: string[], status: string, category?: { id: number, name: string } }

function deepFreeze<T> (value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}

t.test('a deeply frozen body: the same bytes and entity tag each time; one outside the schema is refused each time', async (t) => {
  let body: Pet = deepFreeze({ id: 1, name: 'Rex', photoUrls: [], status: 'available', category: { id: 2, name: 'Dogs' } })
  const api = await buildTestApp(t, { handlers: { getPetById: async () => body as never } })
  const headers = await api.authHeader()
  const first = await api.request({ method: 'GET', url: '/v1/pets/1', headers })
  const second = await api.request({ method: 'GET', url: '/v1/pets/1', headers })
  t.equal(first.statusCode, 200)
  t.same(first.json(), body)
  t.equal(second.body, first.body, 'the same bytes')
  t.equal(second.headers.etag, first.headers.etag, 'the same entity tag')

  body = deepFreeze({ id: 1, name: 'Rex', photoUrls: [], status: 'lost' })
  expectError(t, await api.request({ method: 'GET', url: '/v1/pets/1', headers }), 500, 'internal_error', 'a frozen body outside the schema')
  expectError(t, await api.request({ method: 'GET', url: '/v1/pets/1', headers }), 500, 'internal_error', 'refused again: a refused body is never kept')
})

t.test('frozen on the outside only: a change inside it is sent, and checked', async (t) => {
  const category = { id: 2, name: 'Dogs' }
  const body = Object.freeze({ id: 1, name: 'Rex', photoUrls: Object.freeze([]), status: 'available', category })
  const api = await buildTestApp(t, { handlers: { getPetById: async () => body as never } })
  const headers = await api.authHeader()
  t.equal((await api.request({ method: 'GET', url: '/v1/pets/1', headers })).json<Pet>().category?.name, 'Dogs')
  category.name = 'Hounds'
  const changed = await api.request({ method: 'GET', url: '/v1/pets/1', headers })
  t.equal(changed.json<Pet>().category?.name, 'Hounds', 'the change is sent, not bytes kept from before')
  category.name = ''
  expectError(t, await api.request({ method: 'GET', url: '/v1/pets/1', headers }), 500, 'internal_error', 'and checked: an empty name is refused')
})

t.test('a cached pet: its bytes and tag change when its stock changes its status', async (t) => {
  const api = await buildTestApp(t)
  const headers = await api.authHeader('enterprise')
  const pet = await api.request({ method: 'GET', url: '/v1/pets/1', headers })
  t.equal(pet.statusCode, 200)
  const again = await api.request({ method: 'GET', url: '/v1/pets/1', headers })
  t.equal(again.headers.etag, pet.headers.etag, 'unchanged: the same tag')

  const status = pet.json<Pet>().status
  const quantity = status === 'sold' ? 5 : 0
  const patched = await api.request({ method: 'PATCH', url: '/v1/inventory/1', headers: { ...headers, 'content-type': 'application/json' }, payload: { quantity } })
  t.equal(patched.statusCode, 200, `stock set to ${quantity}`)
  const after = await api.request({ method: 'GET', url: '/v1/pets/1', headers })
  t.not(after.json<Pet>().status, status, `the status follows the stock (${status} → ${after.json<Pet>().status})`)
  t.not(after.headers.etag, pet.headers.etag, 'and so does the entity tag')
})
