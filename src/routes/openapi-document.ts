import type { FastifyInstance } from 'fastify'
import { stringify as toYaml } from 'yaml'
import { methodNotAllowed } from '../plugins/app/error-handling.js'

/** GET /openapi.json and /openapi.yaml: the document as this instance serves it, outside /v1. */
export default async function openapiDocument (app: FastifyInstance, options: { served: Record<string, unknown> }) {
  const json = JSON.stringify(options.served)
  const yaml = toYaml(options.served)
  const hidden = { schema: { hide: true } }
  app.get('/openapi.json', hidden, (_request, reply) => reply.type('application/json; charset=utf-8').send(json))
  app.get('/openapi.yaml', hidden, (_request, reply) => reply.type('application/yaml; charset=utf-8').send(yaml))
  methodNotAllowed(app, '/openapi.json', ['GET'])
  methodNotAllowed(app, '/openapi.yaml', ['GET'])
}
