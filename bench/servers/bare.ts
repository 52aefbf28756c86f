/**
 * The ceilings: bare Fastify 5 with no plugins. `GET /` answers {"hello":"world"} the way
 * Fastify's own benchmark does; `GET /payload/NAME` sends the bytes of bench payload file NAME
 * (a copy of a real list response), so a list can be compared with the cost of just sending it.
 * `PATCH /v1/inventory/:petId` and `GET /v1/pets/:petId` answer the service's PATCH and GET pet
 * requests from a Map, with Fastify's own validation of the same shapes: what those requests cost
 * with no authentication, no rate limits and no database.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import Fastify from 'fastify'

const port = Number(process.env.PORT ?? 0)
const payloadDir = process.env.PAYLOAD_DIR
const entries = Number(process.env.ENTRIES ?? 100)

const app = Fastify({ logger: false })

const schema = { response: { 200: { type: 'object', properties: { hello: { type: 'string' } } } } }
app.get('/', { schema }, (_request, reply) => { reply.send({ hello: 'world' }) })

for (const name of payloadDir === undefined ? [] : readdirSync(payloadDir)) {
  const body = readFileSync(join(payloadDir!, name))
  app.get(`/payload/${name}`, (_request, reply) => { reply.type('application/json; charset=utf-8').send(body) })
}

const status = { type: 'string', enum: ['available', 'pending', 'sold'] }
const petIdParams = { type: 'object', required: ['petId'], properties: { petId: { type: 'integer', minimum: 1 } } }
const quantities = new Map<number, number>()
for (let id = 1; id <= entries; id++) quantities.set(id, id % 50)

app.patch<{ Params: { petId: number }, Body: { quantity: number } }>('/v1/inventory/:petId', {
  schema: {
    params: petIdParams,
    body: { type: 'object', required: ['quantity'], additionalProperties: false, properties: { quantity: { type: 'integer', minimum: 0, maximum: 2147483647 } } },
    response: { 200: { type: 'object', required: ['petId', 'quantity', 'status'], properties: { petId: { type: 'integer' }, quantity: { type: 'integer' }, status } } }
  }
}, async (request, reply) => {
  const { petId } = request.params
  if (!quantities.has(petId)) return reply.code(404).send({ code: 'not_found' })
  const quantity = request.body.quantity
  quantities.set(petId, quantity)
  return { petId, quantity, status: quantity === 0 ? 'sold' : 'available' }
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
  return { id: petId, name: `Pet ${petId}`, photoUrls: [], status: quantity === 0 ? 'sold' : 'available' }
})

app.get('/healthz', (_request, reply) => { reply.send({ status: 'ok' }) })

await app.listen({ port, host: '127.0.0.1' })
