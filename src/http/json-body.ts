import type { FastifyInstance, FastifyRequest, FastifySchemaValidationError, preValidationHookHandler } from 'fastify'
import { ApiError } from '../errors.js'

type JsonParser = (request: FastifyRequest, body: string, done: (error: Error | null, body?: unknown) => void) => void

/**
 * For operations whose requestBody is required: Fastify validates a body only when one arrived,
 * so a request without any body (and without Content-Type) would reach the handler empty.
 */
export const requireBody: preValidationHookHandler = (request, _reply, done) => {
  if (request.body !== undefined) return done()
  done(new ApiError('invalid_request', 'body is required: send a JSON object with Content-Type: application/json'))
}

/**
 * Fastify's own JSON parser (with the instance's poisoning settings), registered in its place,
 * except that an empty body sent to a route that declares none (cancelOrder's DELETE) is no body
 * rather than 400: many HTTP clients send `Content-Type: application/json` with every request.
 * A route that takes a body still refuses an empty one.
 */
export function jsonBodyParser (fastify: FastifyInstance): JsonParser {
  const { onProtoPoisoning = 'error', onConstructorPoisoning = 'error' } = fastify.initialConfig
  const parse = fastify.getDefaultJsonParser(onProtoPoisoning, onConstructorPoisoning) as JsonParser
  return (request, body, done) => {
    if (body.length === 0 && request.routeOptions.schema?.body === undefined) {
      done(null, undefined)
      return
    }
    parse(request, body, done)
  }
}

/** "body/quantity must be integer"; for an unknown property its name is added. */
export function formatValidationErrors (errors: FastifySchemaValidationError[], dataVar: string): Error {
  const text = errors.map((e) => {
    const extra = e.keyword === 'additionalProperties' ? ` ('${String(e.params.additionalProperty)}')` : ''
    return `${dataVar}${e.instancePath} ${e.message ?? 'is invalid'}${extra}`
  }).join(', ')
  return new Error(text)
}
