import type { FastifySchemaValidationError, preValidationHookHandler } from 'fastify'
import { ApiError } from './errors.js'

/**
 * For operations whose requestBody is required: Fastify validates a body only when one arrived,
 * so a request without any body (and without Content-Type) would reach the handler empty.
 */
export const requireBody: preValidationHookHandler = (request, _reply, done) => {
  if (request.body !== undefined) return done()
  done(new ApiError('invalid_request', 'body is required: send a JSON object with Content-Type: application/json'))
}

/** "body/quantity must be integer"; for an unknown property its name is added. */
export function formatValidationErrors (errors: FastifySchemaValidationError[], dataVar: string): Error {
  const text = errors.map((e) => {
    const extra = e.keyword === 'additionalProperties' ? ` ('${String(e.params.additionalProperty)}')` : ''
    return `${dataVar}${e.instancePath} ${e.message ?? 'is invalid'}${extra}`
  }).join(', ')
  return new Error(text)
}
