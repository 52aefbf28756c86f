/**
 * Each response of openapi.yaml is given to Fastify as the schema of its status
 * (src/contract/response-schemas.ts), so every answer is checked against it, whatever
 * JSON Content-Type its handler set. Given per media type, as fastify-openapi-glue makes them, an
 * answer labelled with another JSON type (application/problem+json, say) was sent without any check.
 * (Fastify serializes an object only for a JSON type; for text/plain it refuses the object.)
 */
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { expectError } from '../helpers/assertions.js'

t.test('a body outside its schema is refused even when the handler labelled it application/problem+json', async (t) => {
  const api = await buildTestApp(t, {
    handlers: {
      getPetById: async (_request, reply) => {
        reply.type('application/problem+json')
        return { id: 1, name: 'Rex' } as never // no photoUrls, no status
      }
    }
  })
  const res = await api.request({ method: 'GET', url: '/v1/pets/1', headers: await api.authHeader() })
  expectError(t, res, 500, 'internal_error', 'checked against the Pet schema, not sent')
})
