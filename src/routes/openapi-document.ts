import type { FastifyInstance } from 'fastify'
import { dump as toYaml } from 'js-yaml'
import { methodNotAllowed } from '../plugins/app/error-handling.js'

/**
 * Written with js-yaml, whose writer quotes every string a reader could take for another type:
 * YAML 1.2's (numbers, booleans, null) and the ones readers of YAML 1.1 also know (a timestamp
 * such as x-sunset's 2027-06-30T00:00:00Z, yes/no/on/off). The yaml package writes for 1.2's
 * core schema, which leaves such dates unquoted, and js-yaml (among others) reads them as dates.
 * noRefs: a part used twice (openapi.yaml's anchors) is written out each time, as in the JSON.
 */
const yamlOptions = { noRefs: true, lineWidth: 100 }

/** GET /openapi.json and /openapi.yaml: the document as this instance serves it, outside /v1. */
export default async function openapiDocument (app: FastifyInstance, options: { served: Record<string, unknown> }) {
  const json = JSON.stringify(options.served)
  // Written on the first request rather than at start: YAML costs about 20 ms of CPU per app
  // (json, used by the docs page, is cheap), and most instances are never asked for it.
  let yaml: string | undefined
  const hidden = { schema: { hide: true } }
  app.get('/openapi.json', hidden, (_request, reply) => reply.type('application/json; charset=utf-8').send(json))
  app.get('/openapi.yaml', hidden, (_request, reply) => reply.type('application/yaml; charset=utf-8').send(yaml ??= toYaml(options.served, yamlOptions)))
  methodNotAllowed(app, '/openapi.json', ['GET'])
  methodNotAllowed(app, '/openapi.yaml', ['GET'])
}
