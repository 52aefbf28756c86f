import type { onRequestHookHandler, onSendHookHandler, RouteHandlerMethod, RouteOptions } from 'fastify'
import { ApiError } from './errors.js'
import { requireBody } from './json-body.js'
import { type HandlerMap, successStatus } from './operation-types.js'
import type { ApiDocument, OperationInfo } from './document.js'

export interface OperationContext {
  document: ApiDocument
  handlers: HandlerMap
  publicBaseUrl: string
  /** Milliseconds since the epoch; injectable so tests can stand after a sunset. */
  now: () => number
}

type OperationRouteOptions = Pick<RouteOptions, 'handler'> & Partial<Pick<RouteOptions, 'preValidation' | 'onRequest' | 'onSend' | 'config'>>

/** The query string of an operation that declares no query parameter: no member at all. */
const NO_QUERY = { type: 'object', properties: {} } as const

/**
 * An onRoute hook for the routes fastify-openapi-glue makes: an operation that declares no query
 * parameter gets no query-string schema from the glue, so nothing would refuse `?limit=10`. Its
 * route is given an empty one, which the validator compiler closes (src/contract/validation.ts):
 * Fastify's own validation refuses the parameter, with the message a declared one gets
 * (`querystring must NOT have additional properties ('limit')`), after the path parameters and
 * the body, as for every operation. A schema rather than a preValidation hook: a request of
 * such an operation then goes through no hook runner more than one of any other.
 */
export function emptyQuerySchemas (document: ApiDocument): (route: RouteOptions) => void {
  return (route) => {
    const operationId = (route.schema as { operationId?: unknown } | undefined)?.operationId
    const op = typeof operationId === 'string' ? document.operations.get(operationId) : undefined
    if (op === undefined || op.declaresQuery || route.schema?.querystring !== undefined) return
    route.schema = { ...route.schema, querystring: NO_QUERY }
  }
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
 * schemas, as the options of its one route: the handler, the scope its security requirement names
 * (route config, which authentication reads before the body is parsed), the body requirement
 * (Fastify validates a body only when one arrived) and the deprecation behaviour. Nothing here
 * names an operation.
 */
export function operationResolver (context: OperationContext) {
  return (operationId: string): OperationRouteOptions => {
    // Both exist: the glue calls this for the document's own operations, and checkHandlers ran at boot.
    const op = context.document.operations.get(operationId)!
    // The request is typed from the document, and the validators enforce the same document.
    const handler = context.handlers[operationId as keyof HandlerMap] as RouteHandlerMethod
    // A returned body is the operation's first 2xx, which need not be 200 (a 201 create, say).
    const status = successStatus(Object.keys((op.definition.responses ?? {}) as object))
    return {
      handler: status === 200 ? handler : function (request, reply) { reply.code(status); return handler.call(this, request, reply) },
      config: { operationId, ...(op.scope === undefined ? {} : { scope: op.scope }) },
      ...(op.bodyRequired ? { preValidation: [requireBody] } : {}),
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
