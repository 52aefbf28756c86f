import type { FastifyInstance } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import { emptyQuerySchemas, operationResolver, methodsByPath, type OperationContext } from '../contract/operations.js'
import { responsesByStatus } from '../contract/response-schemas.js'
import authentication from '../plugins/app/authentication.js'
import { methodNotAllowed, notFound } from '../plugins/app/error-handling.js'

/**
 * Everything under /v1, in the order a request meets it: authentication with the rate limits
 * (one onRequest pass, src/plugins/app/authentication.ts) → the operation's own route options
 * (sunset, body requirement, src/contract/operations.ts) → parsing and validation from openapi.yaml
 * → the handler (handlers/<operationId>.ts) → response validation → deprecation headers.
 */
export default async function v1 (app: FastifyInstance, context: OperationContext) {
  await app.register(authentication)
  // Before the glue's routes exist: their response schemas by status (src/contract/response-schemas.ts).
  app.addHook('onRoute', responsesByStatus)
  // …and a query-string schema for the operations that declare no query parameter (src/contract/operations.ts).
  app.addHook('onRoute', emptyQuerySchemas(context.document))
  await app.register(openapiGlue, {
    specification: context.document.spec,
    // The glue accepts partial route options from the resolver (they are spread over the route it
    // builds); its typings ask for complete ones.
    operationResolver: operationResolver(context) as never
  })
  for (const [url, methods] of methodsByPath(context.document)) methodNotAllowed(app, url, methods)
  // Unknown paths under /v1 are answered only after authentication, like every /v1 path. With CORS
  // on, @fastify/cors routes OPTIONS on every path at the root, outside authentication: these
  // routes keep OPTIONS on unknown /v1 paths here (a preflight is answered before routing).
  app.setNotFoundHandler(notFound)
  app.options('/', { schema: { hide: true } }, (_request, reply) => { reply.callNotFound() })
  app.options('/*', { schema: { hide: true } }, (_request, reply) => { reply.callNotFound() })
}
