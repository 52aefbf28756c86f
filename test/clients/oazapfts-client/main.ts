/**
 * A partner's program on a client from a second generator: oazapfts, by other authors than
 * openapi-typescript, generates ./petstore.ts from the served /openapi.json (written beside this
 * file by test/clients/oazapfts-client.test.ts): one function per operationId, whose answer is
 * typed per status, errors included; with --allSchemas, the event bodies of the document's
 * `webhooks` too. Compiled with `tsc --strict`; not part of the project's own typecheck, since it
 * sees the API only as an outsider does.
 *
 * Usage: node main.js BASE_URL API_KEY NO_SCOPE_KEY WEBHOOKS_ONLY_KEY (NO_SCOPE_KEY: a valid key
 * holding no scope; WEBHOOKS_ONLY_KEY: one holding only the webhook operations' scope). The server
 * must accept webhook endpoints on loopback (WEBHOOK_ALLOW_PRIVATE).
 * Prints one JSON object: for each operationId, the calls made and what came back, and the events
 * its webhook receiver got.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import * as petstore from './petstore.js'

type InventoryItem = petstore.InventoryItem
type Pet = petstore.Pet
type Order = petstore.Order
type ApiError = petstore.Error
type WebhookEndpoint = petstore.WebhookEndpoint
type WebhookEndpointWithSecret = petstore.WebhookEndpointWithSecret
type WebhookDelivery = petstore.WebhookDelivery
type WebhookEventType = petstore.WebhookEventType
type WebhookEvent = petstore.InventoryUpdatedEvent | petstore.OrderPlacedEvent | petstore.OrderApprovedEvent | petstore.OrderDeliveredEvent | petstore.OrderCancelledEvent

const [baseUrl, apiKey, noScopeKey, webhooksOnlyKey] = process.argv.slice(2)
if (baseUrl === undefined || apiKey === undefined || noScopeKey === undefined || webhooksOnlyKey === undefined) throw new Error('usage: node main.js BASE_URL API_KEY NO_SCOPE_KEY WEBHOOKS_ONLY_KEY')
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

const iso = (dateTime: string) => new Date(dateTime).toISOString()
const describeEndpoint = (endpoint: WebhookEndpoint) => [endpoint.id.toFixed(0), new URL(endpoint.url).host, ...endpoint.events.map((type) => type.toUpperCase()),
  endpoint.description?.trim() ?? '(none)', endpoint.enabled ? 'enabled' : 'disabled', endpoint.disabledReason?.trim() ?? '', iso(endpoint.createdAt), iso(endpoint.updatedAt)].join(' ')
const describeSecret = (endpoint: WebhookEndpointWithSecret) => [describeEndpoint(endpoint), endpoint.secret.slice(0, 'whsec_'.length),
  endpoint.previousSecretExpiresAt === null ? 'one secret' : iso(endpoint.previousSecretExpiresAt)].join(' ')
const describeDelivery = (delivery: WebhookDelivery) => [delivery.id.toFixed(0), delivery.eventId.trim(), delivery.eventType.toUpperCase(), delivery.attempt.toFixed(0),
  iso(delivery.attemptedAt), delivery.statusCode?.toFixed(0) ?? delivery.error?.toUpperCase(), delivery.durationMs.toFixed(0), delivery.nextAttemptAt === null ? 'done' : iso(delivery.nextAttemptAt)].join(' ')
function describeEvent (event: WebhookEvent): string {
  const head = `${event.id.trim()} ${event.type.toUpperCase()} ${iso(event.createdAt)}`
  if (event.type === 'inventory.updated') {
    const { petId, quantity, status, previous } = event.data
    return `${head} ${petId.toFixed(0)} ${previous.quantity.toFixed(0)} ${previous.status.toUpperCase()} → ${quantity.toFixed(0)} ${status.toUpperCase()}`
  }
  return `${head} ${describeOrder(event.data)}`
}

/** The program's webhook receiver, on loopback: it keeps every event and answers 204. */
const received: { headers: Record<string, string>, body: unknown }[] = []
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as WebhookEvent
    const headers = Object.fromEntries(['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, String(request.headers[name] ?? '')]))
    received.push({ headers, body: event })
    descriptions.push(describeEvent(event))
    response.writeHead(204).end()
  })
})
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/petstore/events`

/** The orders the program places, for the operations after placeOrder. */
const placed: { keyed?: Order, plain?: Order } = {}
/** The program's webhook endpoints: the receiver's, and nine more to reach the limit of 10. */
const endpoints: { receiver?: WebhookEndpoint, more: WebhookEndpoint[] } = { more: [] }
const ALL_EVENTS: WebhookEventType[] = ['inventory.updated', 'order.placed', 'order.approved', 'order.delivered', 'order.cancelled']
const nextCursor = (headers: Headers) => {
  const next = /<([^>]+)>; rel="next"/.exec(headers.get('link') ?? '')?.[1]
  return next === undefined ? undefined : new URL(next, baseUrl).searchParams.get('cursor') ?? undefined
}

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
      cursor = nextCursor(result.headers)
      if (cursor === undefined) break
    }
    const madeUp = await petstore.listOrders({ cursor: 'not-a-cursor' })
    keep('listOrders', 'a cursor the service did not give', madeUp)
    if (madeUp.status === 400) descriptions.push(describeError(madeUp.data))
  },

  // The webhook endpoints before any change, so that the receiver gets the events of every change below.
  async createWebhookEndpoint () {
    const created = await petstore.createWebhookEndpoint({ url: receiverUrl, events: ALL_EVENTS, description: 'Stock and order sync' })
    keep('createWebhookEndpoint', 'the receiver, for every event', created)
    if (created.status !== 201) throw new Error(`createWebhookEndpoint: ${created.status}`)
    descriptions.push(describeSecret(created.data))
    // Location is the path from the server's root: /v1/webhooks/{id}.
    const id = Number(/^\/v1\/webhooks\/([0-9]+)$/.exec(created.headers.get('location') ?? '')?.[1])
    endpoints.receiver = { ...created.data, id }
    for (let n = 2; n <= 10; n++) {
      const more = await petstore.createWebhookEndpoint({ url: `http://127.0.0.1:9/shop-${n}/events`, events: ['order.cancelled'], description: `Cancellations, shop ${n}` })
      keep('createWebhookEndpoint', `endpoint ${n} of 10`, more)
      if (more.status !== 201) continue
      endpoints.more.push(more.data)
      descriptions.push(describeSecret(more.data))
    }
    const eleventh = await petstore.createWebhookEndpoint({ url: 'http://127.0.0.1:9/shop-11/events', events: ['order.placed'] })
    keep('createWebhookEndpoint', 'an 11th endpoint', eleventh)
    if (eleventh.status === 409) descriptions.push(describeError(eleventh.data))
    // The types refuse an event the document does not list; the service must refuse it too.
    const unknownEvent = await petstore.createWebhookEndpoint({ url: receiverUrl, events: ['order.shipped'] as unknown as WebhookEventType[] })
    keep('createWebhookEndpoint', 'an event type the service does not send', unknownEvent)
    if (unknownEvent.status === 400) descriptions.push(describeError(unknownEvent.data))
    const lacking = await petstore.createWebhookEndpoint({ url: receiverUrl, events: ['order.placed'] }, {}, as(webhooksOnlyKey))
    keep('createWebhookEndpoint', 'order events, with a key without orders:read', lacking)
    if (lacking.status === 403) descriptions.push(describeError(lacking.data))
  },

  async listWebhookEndpoints () {
    // Pages of 4, following each page's Link rel="next".
    let cursor: string | undefined
    for (let page = 1; page <= 10; page++) {
      const result = await petstore.listWebhookEndpoints({ limit: 4, cursor })
      keep('listWebhookEndpoints', `page ${page} of 4 endpoints`, result)
      if (result.status !== 200) throw new Error(`listWebhookEndpoints, page ${page}: ${result.status}`)
      descriptions.push(...result.data.map(describeEndpoint))
      cursor = nextCursor(result.headers)
      if (cursor === undefined) break
    }
    const other = await petstore.listWebhookEndpoints({}, as(webhooksOnlyKey))
    keep('listWebhookEndpoints', 'another key\'s list', other)
    if (other.status === 200) descriptions.push(...other.data.map(describeEndpoint))
  },

  async getWebhookEndpoint () {
    const endpointId = endpoints.receiver?.id ?? 1
    const endpoint = await petstore.getWebhookEndpoint(endpointId)
    keep('getWebhookEndpoint', 'the receiver\'s, at its Location', endpoint)
    if (endpoint.status === 200) descriptions.push(describeEndpoint(endpoint.data))
    const other = await petstore.getWebhookEndpoint(endpointId, {}, as(webhooksOnlyKey))
    keep('getWebhookEndpoint', 'another key\'s endpoint', other)
    if (other.status === 404) descriptions.push(describeError(other.data))
  },

  async updateWebhookEndpoint () {
    const endpointId = endpoints.receiver?.id ?? 1
    const updated = await petstore.updateWebhookEndpoint(endpointId, { description: null })
    keep('updateWebhookEndpoint', 'the receiver\'s description removed', updated)
    if (updated.status === 200) descriptions.push(describeEndpoint(updated.data))
    const other = await petstore.updateWebhookEndpoint(endpointId, { enabled: false }, {}, as(webhooksOnlyKey))
    keep('updateWebhookEndpoint', 'another key\'s endpoint', other)
    if (other.status === 404) descriptions.push(describeError(other.data))
  },

  async rotateWebhookSecret () {
    const endpointId = endpoints.receiver?.id ?? 1
    const rotated = await petstore.rotateWebhookSecret(endpointId)
    keep('rotateWebhookSecret', 'the receiver\'s', rotated)
    if (rotated.status === 200) descriptions.push(describeSecret(rotated.data))
    const other = await petstore.rotateWebhookSecret(endpointId, {}, as(webhooksOnlyKey))
    keep('rotateWebhookSecret', 'another key\'s endpoint', other)
    if (other.status === 404) descriptions.push(describeError(other.data))
  },

  async deleteWebhookEndpoint () {
    for (const [i, endpoint] of endpoints.more.entries()) keep('deleteWebhookEndpoint', `endpoint ${i + 2} of 10`, await petstore.deleteWebhookEndpoint(endpoint.id))
    const again = await petstore.deleteWebhookEndpoint(endpoints.more.at(-1)?.id ?? 999999)
    keep('deleteWebhookEndpoint', 'the same endpoint again', again)
    if (again.status === 404) descriptions.push(describeError(again.data))
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
  },

  async listWebhookDeliveries () {
    // The events of the changes above, each matched once it has come (30 s at most), then a second more for any other.
    const { keyed, plain } = placed
    const order = (type: WebhookEventType, id: number | undefined) => (event: WebhookEvent) => event.type !== 'inventory.updated' && event.type === type && event.data.id === id
    const stock = (petId: number) => (event: WebhookEvent) => event.type === 'inventory.updated' && event.data.petId === petId
    const wanted = [order('order.placed', keyed?.id), order('order.placed', plain?.id), order('order.approved', keyed?.id), order('order.delivered', keyed?.id),
      order('order.cancelled', plain?.id), stock(1), stock(keyed?.petId ?? 12)]
    const deadline = Date.now() + 30_000
    while (!wanted.every((matches) => received.some(({ body }) => matches(body as WebhookEvent))) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
    await new Promise((resolve) => setTimeout(resolve, 1000))

    const endpointId = endpoints.receiver?.id ?? 1
    let cursor: string | undefined
    for (let page = 1; page <= 100; page++) {
      const result = await petstore.listWebhookDeliveries(endpointId, { limit: 3, cursor })
      keep('listWebhookDeliveries', `page ${page} of 3 attempts`, result)
      if (result.status !== 200) throw new Error(`listWebhookDeliveries, page ${page}: ${result.status}`)
      descriptions.push(...result.data.map(describeDelivery))
      cursor = nextCursor(result.headers)
      if (cursor === undefined) break
    }
    const other = await petstore.listWebhookDeliveries(endpointId, {}, as(webhooksOnlyKey))
    keep('listWebhookDeliveries', 'another key\'s endpoint', other)
    if (other.status === 404) descriptions.push(describeError(other.data))
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
  cancelOrder: () => petstore.cancelOrder(1, {}, as(noScopeKey)),
  createWebhookEndpoint: () => petstore.createWebhookEndpoint({ url: 'http://127.0.0.1:9/events', events: ['order.placed'] }, {}, as(noScopeKey)),
  listWebhookEndpoints: () => petstore.listWebhookEndpoints({}, as(noScopeKey)),
  getWebhookEndpoint: () => petstore.getWebhookEndpoint(1, {}, as(noScopeKey)),
  updateWebhookEndpoint: () => petstore.updateWebhookEndpoint(1, { enabled: false }, {}, as(noScopeKey)),
  deleteWebhookEndpoint: () => petstore.deleteWebhookEndpoint(1, {}, as(noScopeKey)),
  rotateWebhookSecret: () => petstore.rotateWebhookSecret(1, {}, as(noScopeKey)),
  listWebhookDeliveries: () => petstore.listWebhookDeliveries(1, {}, as(noScopeKey))
}

for (const [operationId, call] of Object.entries(withoutScope)) keep(operationId, 'a key without its scope', await call())
for (const run of Object.values(operations)) await run()
receiver.closeAllConnections()
receiver.close()
process.stdout.write(JSON.stringify({ operations: report, descriptions, events: received }) + '\n')
