import type { FastifyInstance, RouteHandlerMethod } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import { requireBody } from '../http/json-body.js'
import { type HandlerMap, successStatus } from '../http/operation-types.js'
import { withQuerystringSchema } from '../http/validation.js'
import type { ApiDocument } from '../openapi/document.js'
import authentication, { requireAuthentication } from './authentication.js'
import deprecation from './deprecation.js'
import rateLimit, { type RateLimitOptions } from './rate-limit.js'

export interface ApiOptions {
  document: ApiDocument
  handlers: HandlerMap
  publicBaseUrl: string
  now: () => number
  /** Plan limits; `false` only for measuring the limiter's cost (bench/limiter-cost.ts). */
  rateLimit: Omit<RateLimitOptions, 'plans' | 'now'> | false
}

/**
 * Everything under /v1. Order of the onRequest stage, per request:
 * identify the API key → (rate limits: they count failed authentications too) → reject when
 * unauthenticated → route-level hooks (deprecation) → body parsing and validation → handler.
 */
export default async function api (app: FastifyInstance, options: ApiOptions) {
  await app.register(authentication)
  if (options.rateLimit !== false) {
    await app.register(rateLimit, { ...options.rateLimit, plans: options.document.plans, now: options.now })
  }
  app.addHook('onRequest', requireAuthentication)
  await app.register(deprecation, { document: options.document, publicBaseUrl: options.publicBaseUrl, now: options.now })

  app.addHook('onRoute', (route) => {
    const operationId = (route.schema as { operationId?: string } | undefined)?.operationId
    if (operationId === undefined) return
    route.schema = withQuerystringSchema(route.schema)
    const status = successStatus(Object.keys(route.schema.response ?? {}))
    if (status !== 200) {
      const handler = route.handler
      route.handler = function (request, reply) {
        reply.code(status)
        return handler.call(this, request, reply)
      }
    }
    if (options.document.operations.get(operationId)?.bodyRequired !== true) return
    const existing = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation]
    route.preValidation = [...existing, requireBody]
  })

  await app.register(openapiGlue, {
    specification: options.document.spec,
    operationResolver: (operationId: string) => {
      const handler = options.handlers[operationId as keyof HandlerMap]
      if (typeof handler !== 'function') throw new Error(`operation ${operationId} has no handler: run npm run generate`)
      // The request is typed from the document, and the validators enforce the same document.
      return handler as RouteHandlerMethod
    }
  })
  // Unknown paths under /v1 are answered only after authentication, like every /v1 path.
  app.setNotFoundHandler(app.notFoundHandler)
}
