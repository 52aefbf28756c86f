import type { FastifySchema, FastifySchemaValidationError, onRequestHookHandler, onSendHookHandler, preValidationHookHandler, RouteHandlerMethod, RouteOptions } from 'fastify'
import { ApiError } from './errors.js'
import { formatValidationErrors, requireBody } from './json-body.js'
import { type HandlerMap, successStatus } from './operation-types.js'
import { validatorCompiler } from './validation.js'
import type { ApiDocument, OperationInfo } from './document.js'

export interface OperationContext {
  document: ApiDocument
  handlers: HandlerMap
  publicBaseUrl: string
  /** Milliseconds since the epoch; injectable so tests can stand after a sunset. */
  now: () => number
}

type OperationRouteOptions = Pick<RouteOptions, 'handler'> & Partial<Pick<RouteOptions, 'preValidation' | 'onRequest' | 'onSend'>>

// An operation that declares no query parameter gets no query-string schema from the glue, so
// nothing would refuse `?limit=10`: its route checks the query against an empty schema, with the
// same validator and message as a declared one (`querystring must NOT have additional properties`).
const validateNoQuery = validatorCompiler({ schema: { type: 'object', properties: {} } as FastifySchema, httpPart: 'querystring', method: '', url: '' }) as
  ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null }
const refuseQueryParameters: preValidationHookHandler = (request, _reply, done) => {
  if (validateNoQuery(request.query)) return done()
  done(new ApiError('invalid_request', formatValidationErrors(validateNoQuery.errors ?? [], 'querystring').message))
}

/**
 * Deprecation (RFC 9745), Sunset (RFC 8594) and a Link to the operation's docs on every response,
 * from x-deprecated-at and x-sunset; after the sunset, 410 gone.
 */
function deprecationOptions (op: OperationInfo, context: OperationContext): Partial<OperationRouteOptions> {
  const headers: Record<string, string> = { link: `<${context.publicBaseUrl}/docs${op.docsAnchor}>; rel="deprecation"; type="text/html"` }
  if (op.deprecatedAt) headers.deprecation = `@${Math.floor(op.deprecatedAt.getTime() / 1000)}`
  if (op.sunset) headers.sunset = op.sunset.toUTCString()
  const addHeaders: onSendHookHandler = (_request, reply, payload, done) => {
    reply.headers(headers)
    done(null, payload)
  }
  const sunset = op.sunset
  if (sunset === undefined) return { onSend: addHeaders }
  const refuseAfterSunset: onRequestHookHandler = (_request, _reply, done) => {
    if (context.now() < sunset.getTime()) return done()
    done(new ApiError('gone', `${op.method} ${op.path} was retired on ${sunset.toUTCString()}; see ${headers.link}`))
  }
  return { onSend: addHeaders, onRequest: refuseAfterSunset }
}

/**
 * fastify-openapi-glue's operationResolver: everything an operation of openapi.yaml does beyond its
 * schemas, as the options of its one route: the handler, the body requirement (Fastify validates a
 * body only when one arrived) and the deprecation behaviour. Nothing here names an operation.
 */
export function operationResolver (context: OperationContext) {
  return (operationId: string): OperationRouteOptions => {
    // Both exist: the glue calls this for the document's own operations, and checkHandlers ran at boot.
    const op = context.document.operations.get(operationId)!
    // The request is typed from the document, and the validators enforce the same document.
    const handler = context.handlers[operationId as keyof HandlerMap] as RouteHandlerMethod
    // A returned body is the operation's first 2xx, which need not be 200 (a 201 create, say).
    const status = successStatus(Object.keys((op.definition.responses ?? {}) as object))
    const preValidation = [
      ...(op.declaresQuery ? [] : [refuseQueryParameters]),
      ...(op.bodyRequired ? [requireBody] : [])
    ]
    return {
      handler: status === 200 ? handler : function (request, reply) { reply.code(status); return handler.call(this, request, reply) },
      ...(preValidation.length > 0 ? { preValidation } : {}),
      ...(op.deprecated ? deprecationOptions(op, context) : {})
    }
  }
}

/** Every operation must have a handler: checked once, at boot, with all the missing ones named. */
export function checkHandlers (document: ApiDocument, handlers: HandlerMap): void {
  const missing = [...document.operations.keys()].filter((id) => typeof handlers[id as keyof HandlerMap] !== 'function')
  if (missing.length > 0) throw new Error(`no handler for operation(s) ${missing.join(', ')}: run npm run generate`)
}

/** The methods each path of the document has, with Fastify's path syntax (`/inventory/:petId`). */
export function methodsByPath (document: ApiDocument): Map<string, string[]> {
  const paths = new Map<string, string[]>()
  for (const op of document.operations.values()) {
    const url = op.path.replace(/\{([^}]+)\}/g, ':$1')
    paths.set(url, [...paths.get(url) ?? [], op.method])
  }
  return paths
}
