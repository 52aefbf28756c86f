import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'
import { sunsetOf } from '../helpers/spec-file.js'

// getPetById retires at its sunset (deprecation.test.ts covers that); stand a day before it so
// these tests keep testing the operation itself whatever today's date is.
const beforeSunset = sunsetOf('getPetById') - 86_400_000
const MAX_ID = Number.MAX_SAFE_INTEGER

const pets = [
  { id: 12, name: 'Full', category: { id: 3, name: 'Fish' }, photoUrls: ['https://img.example/a.jpg', 'https://img.example/b.jpg'], tags: [{ id: 1, name: 'calm' }, { id: 2, name: 'blue' }] },
  { id: 13, name: 'Bare', photoUrls: [] },
  { id: 14, name: 'Tagless', category: { id: 1, name: 'Dogs' }, photoUrls: ['https://img.example/c.jpg'], tags: [] },
  { id: MAX_ID, name: 'Last', photoUrls: [] }
]

async function setup (t: Parameters<typeof buildTestApp>[0]) {
  const api = await buildTestApp(t, { env: { SEED: 'false' }, now: () => beforeSunset })
  await api.store.importCatalogue({
    pets,
    inventory: [{ petId: 12, quantity: 3 }, { petId: 13, quantity: 0 }, { petId: 14, quantity: 1 }, { petId: MAX_ID, quantity: 9 }],
    orders: [{ id: 1, petId: 14, quantity: 1, shipDate: '2026-12-01T00:00:00.000Z', status: 'placed', complete: false }]
  })
  return { api, headers: await api.authHeader() }
}

t.test('getPetById returns the pet in the classic Petstore shape with its derived status', async (t) => {
  const { api, headers } = await setup(t)
  const get = async (id: number) => {
    const res = await api.request({ method: 'GET', url: `/v1/pets/${id}`, headers })
    t.equal(res.statusCode, 200, `pet ${id}`)
    return res.json() as Record<string, unknown>
  }

  t.strictSame(await get(12), { ...pets[0], status: 'available' }, 'every field, as imported')
  const bare = await get(13)
  t.strictSame(bare, { id: 13, name: 'Bare', photoUrls: [], status: 'sold' }, 'without category and tags: absent, not null')
  t.strictSame(await get(14), { ...pets[2], status: 'pending' }, 'empty tags stay an empty list; the open order makes it pending')
  t.strictSame(await get(MAX_ID), { id: MAX_ID, name: 'Last', photoUrls: [], status: 'available' }, 'the largest exact id')

  const inventory = (await api.request({ method: 'GET', url: '/v1/inventory', headers })).json() as { petId: number, status: string }[]
  for (const item of inventory) {
    t.equal((await get(item.petId)).status, item.status, `pet ${item.petId}: same status as its inventory entry`)
  }
})

t.test('getPetById answers 404 not_found for an unknown pet', async (t) => {
  const { api, headers } = await setup(t)
  const body = expectError(t, await api.request({ method: 'GET', url: '/v1/pets/999', headers }), 404, 'not_found', 'unknown pet')
  t.match(body.message, /999/, 'the message names the id')
  expectError(t, await api.request({ method: 'GET', url: `/v1/pets/${MAX_ID - 1}`, headers }), 404, 'not_found', 'a large unknown id')
})

t.test('getPetById path parameter: whole numbers in range, written in plain decimal', async (t) => {
  const { api, headers } = await setup(t)
  // 9007199254740992 and …993 would round to an existing neighbour if parsed loosely.
  for (const petId of ['abc', '1.5', '12.0', '0', '-3', '-0', '1e3', '+12', '0x0c', '012', ' 12', '9007199254740992', '9007199254740993', '1'.repeat(30), '12abc']) {
    const res = await api.request({ method: 'GET', url: `/v1/pets/${encodeURIComponent(petId)}`, headers })
    const body = expectError(t, res, 400, 'invalid_request', `petId ${JSON.stringify(petId)}`)
    t.match(body.message, /^params\/petId /, `petId ${JSON.stringify(petId)} is named`)
  }
})
