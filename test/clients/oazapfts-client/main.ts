/**
 * A partner's program on a client from a second generator: oazapfts, by other authors than
 * openapi-typescript, generates ./petstore.ts from the served /openapi.json (written beside this
 * file by test/clients/oazapfts-client.test.ts): one function per operationId, whose answer is
 * typed per status, errors included. Compiled with `tsc --strict`; not part of the project's own
 * typecheck, since it sees the API only as an outsider does.
 *
 * Usage: node main.js BASE_URL API_KEY NO_SCOPE_KEY (NO_SCOPE_KEY: a valid key holding no scope).
 * Prints one JSON object: for each operationId, the calls made and what came back.
 */
import * as petstore from './petstore.js'

type InventoryItem = petstore.InventoryItem
type Pet = petstore.Pet
type Order = petstore.Order
type ApiError = petstore.Error

const [baseUrl, apiKey, noScopeKey] = process.argv.slice(2)
if (baseUrl === undefined || apiKey === undefined || noScopeKey === undefined) throw new Error('usage: node main.js BASE_URL API_KEY NO_SCOPE_KEY')
petstore.defaults.baseUrl = `${baseUrl}/v1`
petstore.defaults.headers = { Authorization: `Bearer ${apiKey}` }
const as = (key: string) => ({ headers: { Authorization: `Bearer ${key}` } })
const unknownKey = 'psk_unknownunknownunknownunknownunknownunknownu'

interface Call { what: string, status: number, data: unknown, headers: Record<string, string> }
const report: Record<string, Call[]> = {}

function keep (operationId: string, what: string, result: { status: number, headers: Headers, data?: unknown }): void {
  const headers: Record<string, string> = {}
  result.headers.forEach((value, name) => { headers[name] = value })
  ;(report[operationId] ??= []).push({ what, status: result.status, data: result.data, headers })
}

/** Every field used as its type says, so a lying type fails here rather than in a partner's code. */
const descriptions: string[] = []
const describeItem = (item: InventoryItem) => `${item.petId.toFixed(0)} ${item.quantity.toFixed(0)} ${item.status.toUpperCase()}`
const describeError = (error: ApiError) => `${error.status.toFixed(0)} ${error.code.toUpperCase()} ${error.message.trim()}`
const describePet = (pet: Pet) => [pet.id.toFixed(0), pet.name.trim(), pet.category?.name.trim(), ...pet.photoUrls.map((url) => new URL(url).hostname),
  ...(pet.tags ?? []).map((tag) => `${tag.id.toFixed(0)}:${tag.name.trim()}`), pet.status.toUpperCase()].join(' ')
const describeOrder = (order: Order) => [order.id.toFixed(0), order.petId.toFixed(0), order.quantity.toFixed(0),
  new Date(order.shipDate).toISOString(), order.status.toUpperCase(), order.complete ? 'complete' : 'open'].join(' ')

/** The orders the program places, for the operations after placeOrder. */
const placed: { keyed?: Order, plain?: Order } = {}

/** The operations of the generated client: each exported function is one. */
type OperationId = { [K in keyof typeof petstore]: (typeof petstore)[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof typeof petstore]

// One function per operation, in the order they run. A new operation in the document is a new
// function in petstore.ts, and this object fails to compile until it has an entry for it.
const operations: Record<OperationId, () => Promise<void>> = {
  async listInventory () {
    const list = await petstore.listInventory()
    keep('listInventory', 'the list', list)
    if (list.status !== 200) throw new Error(`listInventory: ${list.status}`)
    descriptions.push(...list.data.map(describeItem))
    const again = await petstore.listInventory({ ifNoneMatch: list.headers.get('etag') ?? '' })
    keep('listInventory', 'If-None-Match with its ETag', again)
    const unknown = await petstore.listInventory({}, as(unknownKey))
    keep('listInventory', 'an unknown key', unknown)
    if (unknown.status === 401) descriptions.push(describeError(unknown.data))
  },

  async getPetById () {
    const pet = await petstore.getPetById(1)
    keep('getPetById', 'pet 1', pet)
    if (pet.status === 200) descriptions.push(describePet(pet.data))
    const missing = await petstore.getPetById(999999)
    keep('getPetById', 'an unknown pet', missing)
    if (missing.status === 404) descriptions.push(describeError(missing.data))
  },

  async listOrders () {
    // The open orders two at a time, following each page's Link rel="next".
    let cursor: string | undefined
    for (let page = 1; page <= 100; page++) {
      const result = await petstore.listOrders({ status: ['placed', 'approved'], limit: 2, cursor })
      keep('listOrders', `page ${page} of open orders`, result)
      if (result.status !== 200) throw new Error(`listOrders, page ${page}: ${result.status}`)
      descriptions.push(...result.data.map(describeOrder))
      const next = /<([^>]+)>; rel="next"/.exec(result.headers.get('link') ?? '')?.[1]
      cursor = next === undefined ? undefined : new URL(next, baseUrl).searchParams.get('cursor') ?? undefined
      if (cursor === undefined) break
    }
    const madeUp = await petstore.listOrders({ cursor: 'not-a-cursor' })
    keep('listOrders', 'a cursor the service did not give', madeUp)
    if (madeUp.status === 400) descriptions.push(describeError(madeUp.data))
  },

  async updateInventory () {
    const updated = await petstore.updateInventory(1, { quantity: 7 })
    keep('updateInventory', 'pet 1 to 7 in stock', updated)
    if (updated.status === 200) descriptions.push(describeItem(updated.data))
    const negative = await petstore.updateInventory(1, { quantity: -1 })
    keep('updateInventory', 'a negative quantity', negative)
    if (negative.status === 400) descriptions.push(describeError(negative.data))
    keep('updateInventory', 'a pet without an inventory entry', await petstore.updateInventory(999999, { quantity: 1 }))
  },

  async placeOrder () {
    const idempotencyKey = 'oazapfts-client-order-12-1'
    const keyed = await petstore.placeOrder({ petId: 12, quantity: 1 }, { idempotencyKey })
    keep('placeOrder', 'an order with an Idempotency-Key', keyed)
    if (keyed.status !== 201) throw new Error(`placeOrder: ${keyed.status}`)
    descriptions.push(describeOrder(keyed.data))
    placed.keyed = keyed.data
    const replayed = await petstore.placeOrder({ petId: 12, quantity: 1 }, { idempotencyKey })
    keep('placeOrder', 'the same key and body again', replayed)
    const plain = await petstore.placeOrder({ petId: 12, quantity: 1, shipDate: '2026-12-02T10:30:00+01:00' })
    keep('placeOrder', 'an order without a key', plain)
    if (plain.status === 201) placed.plain = plain.data
    const tooMany = await petstore.placeOrder({ petId: 12, quantity: 1000 })
    keep('placeOrder', 'more than is left to reserve', tooMany)
    if (tooMany.status === 409) descriptions.push(describeError(tooMany.data))
    keep('placeOrder', 'a pet without an inventory entry', await petstore.placeOrder({ petId: 999999, quantity: 1 }))
  },

  async getOrderById () {
    const order = await petstore.getOrderById(placed.keyed?.id ?? 1)
    keep('getOrderById', 'the order placed with a key', order)
    if (order.status === 200) descriptions.push(describeOrder(order.data))
    keep('getOrderById', 'an unknown order', await petstore.getOrderById(999999))
  },

  async updateOrder () {
    const orderId = placed.keyed?.id ?? 1
    const approved = await petstore.updateOrder(orderId, { status: 'approved' })
    keep('updateOrder', 'approve the order placed with a key', approved)
    if (approved.status === 200) descriptions.push(describeOrder(approved.data))
    const delivered = await petstore.updateOrder(orderId, { status: 'delivered' })
    keep('updateOrder', 'deliver it', delivered)
    if (delivered.status === 200) descriptions.push(describeOrder(delivered.data))
    const back = await petstore.updateOrder(orderId, { status: 'approved' })
    keep('updateOrder', 'approve it once delivered', back)
    if (back.status === 409) descriptions.push(describeError(back.data))
    keep('updateOrder', 'an unknown order', await petstore.updateOrder(999999, { status: 'approved' }))
  },

  async cancelOrder () {
    const orderId = placed.plain?.id ?? 1
    keep('cancelOrder', 'the order placed without a key', await petstore.cancelOrder(orderId))
    keep('cancelOrder', 'the same order again', await petstore.cancelOrder(orderId))
    const delivered = await petstore.cancelOrder(placed.keyed?.id ?? 1)
    keep('cancelOrder', 'the delivered order', delivered)
    if (delivered.status === 409) descriptions.push(describeError(delivered.data))
  }
}

/** The same operations with a key that holds no scope: each is refused with 403 before anything runs. */
const withoutScope: Record<OperationId, () => Promise<{ status: number, headers: Headers, data?: unknown }>> = {
  listInventory: () => petstore.listInventory({}, as(noScopeKey)),
  getPetById: () => petstore.getPetById(1, {}, as(noScopeKey)),
  listOrders: () => petstore.listOrders({}, as(noScopeKey)),
  updateInventory: () => petstore.updateInventory(1, { quantity: 7 }, {}, as(noScopeKey)),
  placeOrder: () => petstore.placeOrder({ petId: 12, quantity: 1 }, {}, as(noScopeKey)),
  getOrderById: () => petstore.getOrderById(1, {}, as(noScopeKey)),
  updateOrder: () => petstore.updateOrder(1, { status: 'approved' }, {}, as(noScopeKey)),
  cancelOrder: () => petstore.cancelOrder(1, {}, as(noScopeKey))
}

for (const [operationId, call] of Object.entries(withoutScope)) keep(operationId, 'a key without its scope', await call())
for (const run of Object.values(operations)) await run()
process.stdout.write(JSON.stringify({ operations: report, descriptions }) + '\n')
