/**
 * The ceilings: bare Fastify 5 with no plugins. `GET /` answers {"hello":"world"} the way
 * Fastify's own benchmark does; `GET /payload/NAME` sends the bytes of bench payload file NAME
 * (a copy of a real list response), so a list can be compared with the cost of just sending it.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import Fastify from 'fastify'

const port = Number(process.env.PORT ?? 0)
const payloadDir = process.env.PAYLOAD_DIR

const app = Fastify({ logger: false })

const schema = { response: { 200: { type: 'object', properties: { hello: { type: 'string' } } } } }
app.get('/', { schema }, (_request, reply) => { reply.send({ hello: 'world' }) })

for (const name of payloadDir === undefined ? [] : readdirSync(payloadDir)) {
  const body = readFileSync(join(payloadDir!, name))
  app.get(`/payload/${name}`, (_request, reply) => { reply.type('application/json; charset=utf-8').send(body) })
}

app.get('/healthz', (_request, reply) => { reply.send({ status: 'ok' }) })

await app.listen({ port, host: '127.0.0.1' })
