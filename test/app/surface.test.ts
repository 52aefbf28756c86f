import t from 'tap'
import { errorStatus } from '../../src/errors.js'
import { buildTestApp } from '../helpers/app.js'

type Json = Record<string, unknown>
type Operation = Json & { operationId: string, responses: Record<string, Json>, deprecated?: boolean, 'x-stability'?: string, 'x-sunset'?: string }

// PRODUCT.md §1 and §2, restated here on purpose: the test holds the document to the product.
const surface = [
  ['listInventory', 'GET', '/inventory'],
  ['updateInventory', 'PATCH', '/inventory/{petId}'],
  ['getPetById', 'GET', '/pets/{petId}'],
  ['listOrders', 'GET', '/store/orders']
]
const codes = {
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
  internal_error: 500,
  not_implemented: 501,
  service_unavailable: 503
}

t.test('the served document has exactly the operations of PRODUCT.md §1, and the app routes them', async (t) => {
  const api = await buildTestApp(t)
  const doc = (await api.request({ method: 'GET', url: '/openapi.json' })).json() as Json & { paths: Record<string, Record<string, Operation>>, components: { schemas: Record<string, Json> } }
  const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => [op.operationId, method.toUpperCase(), path]))
  t.same(operations.sort(), [...surface].sort(), 'these four operations and no other')

  const ops = Object.fromEntries(Object.values(doc.paths).flatMap((item) => Object.values(item)).map((op) => [op.operationId, op]))
  t.equal(ops.updateInventory!['x-stability'], 'experimental', 'updateInventory is experimental')
  t.equal(ops.getPetById!.deprecated, true, 'getPetById is deprecated')
  t.type(ops.getPetById!['x-sunset'], 'string', 'with a sunset date')
  for (const op of Object.values(ops)) {
    t.ok(op.responses['401'], `${op.operationId} documents 401`)
    for (const [status, response] of Object.entries(op.responses)) {
      if (Number(status) < 400) continue
      const ref = String(response.$ref ?? '')
      t.match(ref, /^#\/components\/responses\//, `${op.operationId} ${status} uses a shared error response`)
    }
  }

  const headers = await api.authHeader()
  for (const [id, method, path] of surface) {
    const res = await api.request({ method: method!, url: `/v1${path!.replace('{petId}', '1')}`, headers, ...(method === 'PATCH' ? { payload: { quantity: 4 } } : {}) })
    t.equal(res.statusCode, 200, `${id}: ${method} /v1${path} is routed`)
  }
})

t.test('the Error codes of PRODUCT.md §2: the same in openapi.yaml and in the code', async (t) => {
  const api = await buildTestApp(t)
  const doc = (await api.request({ method: 'GET', url: '/openapi.json' })).json() as { components: { schemas: Record<string, Json & { properties: Record<string, Json> }> } }
  const error = doc.components.schemas.Error!
  t.same(error.required, ['code', 'message', 'status'])
  t.equal(error.additionalProperties, false, 'nothing else in an Error body')
  t.same([...(error.properties.code!.enum as string[])].sort(), Object.keys(codes).sort(), 'the document lists every code')
  t.same(errorStatus, codes, 'each code has its HTTP status in the code')
})

t.test('schemas carry the bounds and the status rule of PRODUCT.md §2–3', async (t) => {
  const api = await buildTestApp(t)
  const doc = (await api.request({ method: 'GET', url: '/openapi.json' })).json() as { components: { schemas: Record<string, Json & { properties: Record<string, Json> }> } }
  const s = doc.components.schemas
  t.match(s.InventoryItem, { additionalProperties: false, required: ['petId', 'quantity', 'status'], properties: { petId: { type: 'integer', format: 'int64', minimum: 1 }, quantity: { type: 'integer', minimum: 0 } } })
  t.match(s.InventoryUpdate, { additionalProperties: false, required: ['quantity'], properties: { quantity: { type: 'integer', minimum: 0, maximum: 2147483647 } } })
  t.same(s.PetStatus!.enum, ['available', 'pending', 'sold'])
  const rule = String(s.PetStatus!.description)
  for (const word of ['sold', 'pending', 'available', 'placed', 'approved', 'quantity']) t.match(rule, word, `the status rule mentions ${word}`)
  t.match(s.Pet, { required: ['id', 'name', 'photoUrls', 'status'] })
  t.match(s.Order, { required: ['id', 'petId', 'quantity', 'shipDate', 'status', 'complete'], properties: { shipDate: { format: 'date-time' }, status: { enum: ['placed', 'approved', 'delivered'] }, complete: { type: 'boolean' } } })
})
