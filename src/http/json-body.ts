import type { FastifyInstance, FastifySchemaValidationError, preValidationHookHandler } from 'fastify'
import secureJson from 'secure-json-parse'
import { ApiError } from '../errors.js'

/**
 * application/json bodies: parsed as Fastify would, but each failure says what is wrong
 * (Fastify reports prototype-poisoning keys as "not valid JSON", which is untrue).
 */
export function installJsonBodyParser (app: FastifyInstance): void {
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string
    if (text.length === 0) return done(new ApiError('invalid_request', 'body is empty; send a JSON object'), undefined)
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }))
    } catch (error) {
      const message = error instanceof SyntaxError && /prototype/.test(error.message)
        ? 'body must not contain "__proto__" or "constructor.prototype" keys'
        : `body is not valid JSON: ${(error as Error).message}`
      done(new ApiError('invalid_request', message), undefined)
    }
  })
}

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
