import t from 'tap'
import { demoCatalogue } from '../../src/store/demo-catalogue.js'
import { buildTestApp } from '../helpers/app.js'
import { createTestSchema } from '../helpers/postgres.js'
import { inventoryRepository } from '../../src/repositories/inventory.js'
import { EVENT_SCOPES } from '../helpers/contract.js'

interface Item { petId: number, quantity: number, status: string }

// Demo catalogue: pet 3 has an open order for 2, so its status depends on the quantity.
const expectedStatus = (quantity: number) => quantity === 0 ? 'sold' : quantity <= 2 ? 'pending' : 'available'

t.test('200 concurrent PATCHes of one pet across two instances on one schema', async (t) => {
  const schema = await createTestSchema(t)
  const env = { DATABASE_URL: schema.url(), DATABASE_POOL_MAX: '4' }
  // Both start at once: migrations wait for each other, and both may load the demo catalogue (an upsert).
  const [a, b] = await Promise.all([buildTestApp(t, { env }), buildTestApp(t, { env })])
  // An enterprise key with room to spare: this test is about storage, not about rate limits.
  const headers = { authorization: `Bearer ${await a.createKey('enterprise', { perMinute: 100000, perDay: 1000000 })}` }
  const instances = [a, b]

  const values = Array.from({ length: 200 }, (_, i) => i)
  const reads: Item[] = []
  const patches = values.map(async (quantity, i) => {
    const res = await instances[i % 2]!.request({ method: 'PATCH', url: '/v1/inventory/3', headers, payload: { quantity } })
    return { quantity, res }
  })
  // Reads interleaved with the writes, on both instances.
  const lists = Array.from({ length: 20 }, async (_, i) => {
    const res = await instances[i % 2]!.request({ method: 'GET', url: '/v1/inventory', headers })
    reads.push((res.json() as Item[]).find((item) => item.petId === 3)!)
  })
  const results = await Promise.all(patches)
  await Promise.all(lists)

  t.equal(results.filter(({ res }) => res.statusCode === 200).length, 200, 'every PATCH succeeded')
  const inconsistent = results.filter(({ quantity, res }) => {
    const body = res.json() as Item
    return body.quantity !== quantity || body.status !== expectedStatus(quantity)
  })
  t.same(inconsistent.map(({ quantity }) => quantity), [], 'each answer reports the quantity it wrote with the matching status')
  t.same(reads.filter((item) => item.status !== expectedStatus(item.quantity)), [], 'every concurrent read is consistent with the quantity it reports')

  // Each instance learns of the other's writes by a notification: poll, for at most 5 s, until both agree.
  const readBoth = () => Promise.all(instances.map(async (api) =>
    ((await api.request({ method: 'GET', url: '/v1/inventory', headers })).json() as Item[]).find((item) => item.petId === 3)!))
  let finals = await readBoth()
  for (const deadline = Date.now() + 5000; finals[0]!.quantity !== finals[1]!.quantity && Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    finals = await readBoth()
  }
  t.same(finals[0], finals[1], 'both instances read the same entry')
  t.ok(values.includes(finals[0]!.quantity), `the final quantity (${finals[0]!.quantity}) is one of the sent values`)
  t.equal(finals[0]!.status, expectedStatus(finals[0]!.quantity))
  t.equal((await inventoryRepository(a.store, EVENT_SCOPES).list()).length, demoCatalogue.inventory!.length, 'the demo catalogue is there once')
})
