import type { FastifyInstance } from 'fastify'
import { stringify as toYaml } from 'yaml'
import { methodNotAllowed } from '../plugins/app/error-handling.js'

/** GET /openapi.json and /openapi.yaml: the document as this instance serves it, outside /v1. */
export default async function openapiDocument (app: FastifyInstance, options: { served: Record<string, unknown> }) {
  const json = JSON.stringify(options.served)
  // Written on the first request rather than at start: YAML costs about 20 ms of CPU per app
  // (json, used by the docs page, is cheap), and most instances are never asked for it.
  let yaml: string | undefined
  const hidden = { schema: { hide: true } }
  app.get('/openapi.json', hidden, (_request, reply) => reply.type('application/json; charset=utf-8').send(json))
  app.get('/openapi.yaml', hidden, (_request, reply) => reply.type('application/yaml; charset=utf-8').send(yaml ??= toYaml(options.served)))
  methodNotAllowed(app, '/openapi.json', ['GET'])
  methodNotAllowed(app, '/openapi.yaml', ['GET'])
}
