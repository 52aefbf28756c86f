import t from 'tap'
import { errorStatus } from '../../src/contract/errors.js'
import { buildTestApp } from '../helpers/app.js'
import { errorCodes, isStub, operations, sampleRequest } from '../helpers/surface.js'

type Json = Record<string, unknown>
type Operation = Json & { operationId: string, responses: Record<string, Json>, deprecated?: boolean, 'x-stability'?: string, 'x-sunset'?: string }

// The operations and Error codes of the product (the interface and openapi.yaml), restated here on purpose:
// the test holds the document to the product. The document may have more (the complete lists are
// read from openapi.yaml, see test/helpers/surface.ts); it must have these.
const productOperations = [
  ['listInventory', 'GET', '/inventory'],
  ['updateInventory', 'PATCH', '/inventory/{petId}'],
  ['getPetById', 'GET', '/pets/{petId}'],
  ['listOrders', 'GET', '/store/orders'],
  ['placeOrder', 'POST', '/store/orders'],
  ['getOrderById', 'GET', '/store/orders/{orderId}'],
  ['updateOrder', 'PATCH', '/store/orders/{orderId}'],
  ['cancelOrder', 'DELETE', '/store/orders/{orderId}']
]
const productCodes = {
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  api_key_banned: 429,
  gone: 410,
  insufficient_stock: 409,
  invalid_transition: 409,
  idempotency_key_in_use: 409,
  idempotency_key_reused: 422,
  internal_error: 500,
  not_implemented: 501,
  service_unavailable: 503
}

t.test('the served document has the operations of openapi.yaml, among them the eight of the product, and the app routes every one', async (t) => {
  const api = await buildTestApp(t)
  const doc = (await api.request({ method: 'GET', url: '/openapi.json' })).json() as Json & { paths: Record<string, Record<string, Operation>>, components: { schemas: Record<string, Json> } }
  const served = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => [op.operationId, method.toUpperCase(), path]))
  t.same(served.sort(), operations.map((op) => [op.operationId, op.method, op.path]).sort(), 'the operations of openapi.yaml and no other')
  for (const operation of productOperations) t.ok(served.some((o) => o.join(' ') === operation.join(' ')), `the product's ${operation.join(' ')} is there`)

  const ops = Object.fromEntries(Object.values(doc.paths).flatMap((item) => Object.values(item)).map((op) => [op.operationId, op]))
  t.equal(ops.updateInventory!['x-stability'], 'experimental', 'updateInventory is experimental')
  t.equal(ops.getPetById!.deprecated, true, 'getPetById is deprecated')
  for (const id of ['placeOrder', 'updateOrder']) t.equal(ops[id]!['x-stability'], 'beta', `${id} is beta`)
  t.type(ops.getPetById!['x-sunset'], 'string', 'with a sunset date')
  for (const op of Object.values(ops)) {
    t.ok(op.responses['401'], `${op.operationId} documents 401`)
    for (const [status, response] of Object.entries(op.responses)) {
      if (Number(status) < 400) continue
      const ref = String(response.$ref ?? '')
      t.match(ref, /^#\/components\/responses\//, `${op.operationId} ${status} uses a shared error response`)
    }
  }

  // The samples are the document's examples (pet 12, order 42), which the demo catalogue holds: each
  // answers with the operation's success status, as "Try it out" does on a fresh start. In the
  // document's order: order 42 is read, approved, then cancelled.
  const headers = await api.authHeader()
  for (const op of operations) {
    const sample = sampleRequest(op)
    const res = await api.request({ ...sample, headers: { ...headers, ...sample.headers } })
    const what = `${op.operationId}: ${sample.method} ${sample.url}`
    if (isStub(op.operationId)) {
      t.equal(res.statusCode, 501, `${what} is routed to its generated stub`)
    } else if (productOperations.some(([id]) => id === op.operationId)) {
      const success = Object.keys(op.definition.responses as Json).filter((status) => status.startsWith('2')).sort()[0]
      t.equal(res.statusCode, Number(success), `${what} is routed and answers ${success}`)
    } else {
      // A sample request may name an entity that does not exist: any status the operation declares, from its handler.
      t.ok(Object.keys(op.definition.responses as Json).includes(String(res.statusCode)), `${what} is routed: ${res.statusCode} is one of its statuses`)
      t.notMatch(res.body, /no route /, `${what}: not the unknown route's 404`)
    }
  }
})

t.test('the Error codes of openapi.yaml, among them those of openapi.yaml: the same in the code', async (t) => {
  const api = await buildTestApp(t)
  const doc = (await api.request({ method: 'GET', url: '/openapi.json' })).json() as { components: { schemas: Record<string, Json & { properties: Record<string, Json> }> } }
  const error = doc.components.schemas.Error!
  t.same(error.required, ['code', 'message', 'status'])
  t.equal(error.additionalProperties, false, 'nothing else in an Error body')
  t.same([...(error.properties.code!.enum as string[])].sort(), [...errorCodes].sort(), 'the served document lists the codes of openapi.yaml')
  t.same(Object.keys(errorStatus).sort(), [...errorCodes].sort(), 'the code (src/contract/errors.ts) has a status for each code of openapi.yaml, and no other')
  t.match(errorStatus, productCodes, 'the product\'s codes, each with its HTTP status')
  for (const [code, status] of Object.entries(errorStatus)) t.ok(status >= 400 && status <= 599, `${code}: ${status} is an error status`)
})

t.test('schemas carry the bounds and the status rule of openapi.yaml', async (t) => {
  const api = await buildTestApp(t)
  const doc = (await api.request({ method: 'GET', url: '/openapi.json' })).json() as { components: { schemas: Record<string, Json & { properties: Record<string, Json> }> } }
  const s = doc.components.schemas
  t.match(s.InventoryItem, { additionalProperties: false, required: ['petId', 'quantity', 'status'], properties: { petId: { type: 'integer', format: 'int64', minimum: 1 }, quantity: { type: 'integer', minimum: 0 } } })
  t.match(s.InventoryUpdate, { additionalProperties: false, required: ['quantity'], properties: { quantity: { type: 'integer', minimum: 0, maximum: 2147483647 } } })
  t.same(s.PetStatus!.enum, ['available', 'pending', 'sold'])
  const rule = String(s.PetStatus!.description)
  for (const word of ['sold', 'pending', 'available', 'placed', 'approved', 'quantity']) t.match(rule, word, `the status rule mentions ${word}`)
  t.match(s.Pet, { required: ['id', 'name', 'photoUrls', 'status'] })
  t.match(s.Order, { required: ['id', 'petId', 'quantity', 'shipDate', 'status', 'complete'], properties: { shipDate: { format: 'date-time' }, status: { $ref: '#/components/schemas/OrderStatus' }, complete: { type: 'boolean' } } })
  t.same(s.OrderStatus!.enum, ['placed', 'approved', 'delivered'], 'an Order\'s status is an OrderStatus: placed, approved or delivered')
})
