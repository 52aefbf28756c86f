import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../../contract/errors.js'
import { clientAddress } from '../../rate-limit/client-address.js'
import { hashApiKey } from '../../store/api-keys.js'

export const BEARER_REALM = 'Bearer realm="petstore"'

const invalidKey = () => new ApiError('unauthorized', 'invalid or revoked API key', { 'www-authenticate': `${BEARER_REALM}, error="invalid_token"` })

// The two refusals of a key that was not looked up: it may well be valid, so it is not called
// invalid. A limited address's request is answered by the limiter first (429 for the address);
// this one only when the limiter's store fails open.
const notChecked = () => new ApiError('rate_limited',
  'too many requests without a valid API key from this client address: the key was not checked; retry in 1 s', { 'retry-after': '1' })
const busy = () => new ApiError('service_unavailable', 'too many API keys are being checked at once; retry in 1 s', { 'retry-after': '1' })

/**
 * @fastify/bearer-auth without a hook of its own: it decorates `verifyBearerAuth`, which the
 * authentication plugin calls, so that the limiter can count a request before a failed
 * authentication is answered. The key is looked up by its SHA-256 in the store; an unknown or
 * revoked key is refused here, where that is known, with its own message. The rate-limit policy's
 * key guard decides first whether the lookup is worth making (guessed keys from a limited
 * address, and repeats of a key the store just refused, are not looked up).
 */
async function bearerAuthentication (app: FastifyInstance) {
  await app.register(bearerAuth, {
    addHook: false,
    keys: [],
    verifyErrorLogLevel: 'debug',
    // The scheme name is case-insensitive (RFC 7235 §2.1); bearer-auth's 'rfc6749' mode compares it so.
    specCompliance: 'rfc6749',
    auth: async (key: string, request: FastifyRequest) => {
      const keyHash = hashApiKey(key)
      const { apiKeysRepository } = request.server
      const record = await request.server.rateLimits.keyGuard.check(keyHash, () => clientAddress(request), () => apiKeysRepository.findActive(keyHash))
      if (record === undefined || record === 'unknown') throw invalidKey()
      if (record === 'not-checked') throw notChecked()
      if (record === 'busy') throw busy()
      request.apiKey = record
      return true
    }
  })
}

export default fp(bearerAuthentication, { name: 'bearer-auth' })
