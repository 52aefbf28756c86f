/**
 * The ceiling: bare Fastify 5, no plugins, answering the benchmark's requests the cheapest way:
 * `GET /v1/inventory` with the exact bytes of the service's list (PAYLOAD_FILE, read at start),
 * the PATCH, GET pet and POST order requests from a Map, with Fastify's own validation of the
 * same shapes. What those requests cost with no authentication, rate limits or storage.
 *
 * Environment: PORT, HOST, PAYLOAD_FILE, ENTRIES (pets 1…ENTRIES exist).
 */
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'

const payload = readFileSync(process.env.PAYLOAD_FILE ?? '')
const entries = Number(process.env.ENTRIES ?? 100)
const quantities = new Map<number, number>()
for (let id = 1; id <= entries; id++) quantities.set(id, id % 50)
let nextOrderId = 1

const app = Fastify({ logger: false })
const status = { type: 'string', enum: ['available', 'pending', 'sold'] }
const petIdParams = { type: 'object', required: ['petId'], properties: { petId: { type: 'integer', minimum: 1 } } }
const int32 = { type: 'integer', minimum: 0, maximum: 2147483647 }
const statusOf = (quantity: number) => quantity === 0 ? 'sold' : 'available'

app.get('/healthz', (_request, reply) => { reply.send({ status: 'ok' }) })

app.get('/v1/inventory', (_request, reply) => { reply.type('application/json; charset=utf-8').send(payload) })

app.patch<{ Params: { petId: number }, Body: { quantity: number } }>('/v1/inventory/:petId', {
  schema: {
    params: petIdParams,
    body: { type: 'object', required: ['quantity'], additionalProperties: false, properties: { quantity: int32 } },
    response: { 200: { type: 'object', required: ['petId', 'quantity', 'status'], properties: { petId: { type: 'integer' }, quantity: { type: 'integer' }, status } } }
  }
}, async (request, reply) => {
  const { petId } = request.params
  if (!quantities.has(petId)) return reply.code(404).send({ code: 'not_found' })
  quantities.set(petId, request.body.quantity)
  return { petId, quantity: request.body.quantity, status: statusOf(request.body.quantity) }
})

app.get<{ Params: { petId: number } }>('/v1/pets/:petId', {
  schema: {
    params: petIdParams,
    response: { 200: { type: 'object', required: ['id', 'name', 'photoUrls', 'status'], properties: { id: { type: 'integer' }, name: { type: 'string' }, photoUrls: { type: 'array', items: { type: 'string' } }, status } } }
  }
}, async (request, reply) => {
  const { petId } = request.params
  const quantity = quantities.get(petId)
  if (quantity === undefined) return reply.code(404).send({ code: 'not_found' })
  return { id: petId, name: `Pet ${petId}`, photoUrls: [], status: statusOf(quantity) }
})

app.post<{ Body: { petId: number, quantity: number } }>('/v1/store/orders', {
  schema: {
    body: { type: 'object', required: ['petId', 'quantity'], additionalProperties: false, properties: { petId: { type: 'integer', minimum: 1 }, quantity: { ...int32, minimum: 1 } } },
    response: { 201: { type: 'object', properties: { id: { type: 'integer' }, petId: { type: 'integer' }, quantity: { type: 'integer' }, shipDate: { type: 'string' }, status: { type: 'string' }, complete: { type: 'boolean' } } } }
  }
}, async (request, reply) => {
  const { petId, quantity } = request.body
  if (!quantities.has(petId)) return reply.code(404).send({ code: 'not_found' })
  const id = nextOrderId++
  reply.header('location', `/v1/store/orders/${id}`)
  return reply.code(201).send({ id, petId, quantity, shipDate: new Date().toISOString(), status: 'placed', complete: false })
})

await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' })
