import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { hashApiKey } from '../store/api-keys.js'
import type { ApiKeyRecord } from '../store/types.js'

/**
 * Resolves the caller's API key in an onRequest hook, before the body is read or the path is
 * validated. A failure is kept on the request rather than answered at once, so that the rate
 * limiter (which runs next) can count it; `requireAuthentication` then rejects it.
 * The key is looked up by its SHA-256 on every request: a revoked key fails on its next request.
 */
async function authentication (app: FastifyInstance) {
  await app.register(bearerAuth, {
    addHook: false,
    keys: [],
    verifyErrorLogLevel: 'debug',
    // The scheme name is case-insensitive (RFC 7235 §2.1); bearer-auth's 'rfc6749' mode compares it so.
    specCompliance: 'rfc6749',
    auth: async (key: string, request: FastifyRequest) => {
      const record = await app.store.findActiveApiKey(hashApiKey(key))
      if (record === undefined) return false
      request.apiKey = record
      return true
    }
  })
  const verify = app.verifyBearerAuth
  if (verify === undefined) throw new Error('@fastify/bearer-auth did not decorate verifyBearerAuth')
  app.decorateRequest('apiKey', null)
  app.decorateRequest('authError', null)

  app.addHook('onRequest', (request, reply, done) => {
    verify(request, reply, (error?: Error) => {
      if (error) request.authError = error
      done()
    })
  })
}

/** Answers 401 (through the error handler) when identification failed. */
export const requireAuthentication: onRequestHookHandler = (request, _reply, done) => {
  done(request.authError ?? undefined)
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's active API key, once authentication has resolved it. */
    apiKey: ApiKeyRecord | null
    authError: Error | null
  }
}

export default fp(authentication, { name: 'authentication', dependencies: ['storage'] })
