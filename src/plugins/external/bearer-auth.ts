import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../../errors.js'
import { hashApiKey } from '../../store/api-keys.js'

export const BEARER_REALM = 'Bearer realm="petstore"'

/**
 * @fastify/bearer-auth without a hook of its own: it decorates `verifyBearerAuth`, which the
 * authentication plugin calls, so that the limiter can count a request before a failed
 * authentication is answered. The key is looked up by its SHA-256 in the store; an unknown or
 * revoked key is refused here, where that is known, with its own message.
 */
async function bearerAuthentication (app: FastifyInstance) {
  await app.register(bearerAuth, {
    addHook: false,
    keys: [],
    verifyErrorLogLevel: 'debug',
    // The scheme name is case-insensitive (RFC 7235 §2.1); bearer-auth's 'rfc6749' mode compares it so.
    specCompliance: 'rfc6749',
    auth: async (key: string, request: FastifyRequest) => {
      const record = await request.server.store.findActiveApiKey(hashApiKey(key))
      if (record === undefined) {
        throw new ApiError('unauthorized', 'invalid or revoked API key', { 'www-authenticate': `${BEARER_REALM}, error="invalid_token"` })
      }
      request.apiKey = record
      return true
    }
  })
}

export default fp(bearerAuthentication, { name: 'bearer-auth' })
