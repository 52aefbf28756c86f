import type { FastifyInstance, onRequestHookHandler, onSendHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import type { ApiDocument, OperationInfo } from '../openapi/document.js'

export interface DeprecationOptions {
  document: ApiDocument
  publicBaseUrl: string
  /** Milliseconds since the epoch; injectable so tests can stand after the sunset. */
  now: () => number
}

const asArray = <T>(value: T | T[] | undefined): T[] => value === undefined ? [] : Array.isArray(value) ? value : [value]

/**
 * For every operation marked `deprecated: true` in openapi.yaml: Deprecation (RFC 9745), Sunset
 * (RFC 8594) and a Link to its docs on each response, from x-deprecated-at and x-sunset; after
 * the sunset, 410 gone. Nothing here names an operation: the document decides.
 */
async function deprecation (app: FastifyInstance, options: DeprecationOptions) {
  // Swagger UI deep links are #/<first tag>/<operationId> ("default" for an untagged operation).
  const tagOf = (op: OperationInfo): string => {
    const paths = options.document.spec.paths as Record<string, Record<string, { tags?: string[] }>>
    return paths[op.path]?.[op.method.toLowerCase()]?.tags?.[0] ?? 'default'
  }
  const headersFor = (op: OperationInfo): Record<string, string> => {
    const headers: Record<string, string> = {
      link: `<${options.publicBaseUrl}/docs#/${encodeURIComponent(tagOf(op))}/${op.operationId}>; rel="deprecation"; type="text/html"`
    }
    if (op.deprecatedAt) headers.deprecation = `@${Math.floor(op.deprecatedAt.getTime() / 1000)}`
    if (op.sunset) headers.sunset = op.sunset.toUTCString()
    return headers
  }

  app.addHook('onRoute', (route: RouteOptions) => {
    const operationId = (route.schema as { operationId?: string } | undefined)?.operationId
    const op = operationId === undefined ? undefined : options.document.operations.get(operationId)
    if (!op?.deprecated) return
    const headers = headersFor(op)
    const sunset = op.sunset

    const addHeaders: onSendHookHandler = (_request, reply, payload, done) => {
      reply.headers(headers)
      done(null, payload)
    }
    route.onSend = [...asArray(route.onSend), addHeaders]

    if (sunset) {
      const refuseAfterSunset: onRequestHookHandler = (_request, _reply, done) => {
        if (options.now() < sunset.getTime()) return done()
        done(new ApiError('gone', `${op.method} ${op.path} was retired on ${sunset.toUTCString()}; see ${headers.link}`))
      }
      route.onRequest = [...asArray(route.onRequest), refuseAfterSunset]
    }
  })
}

export default fp(deprecation, { name: 'deprecation' })
