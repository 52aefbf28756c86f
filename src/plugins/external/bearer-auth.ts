import bearerAuth, { type FastifyBearerAuthOptions } from '@fastify/bearer-auth'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

export interface BearerAuthOptions {
  /** Judges the key of `Authorization: Bearer <key>`: true when accepted; it throws its refusal. */
  auth: NonNullable<FastifyBearerAuthOptions['auth']>
}

/**
 * @fastify/bearer-auth without a hook of its own: it decorates `verifyBearerAuth`, which the
 * authentication plugin (src/plugins/app/authentication.ts) calls with its own `auth`, so that the
 * limiter can count a request before a failed authentication is answered.
 */
async function bearerAuthentication (app: FastifyInstance, options: BearerAuthOptions) {
  await app.register(bearerAuth, {
    addHook: false,
    keys: [],
    verifyErrorLogLevel: 'debug',
    // The scheme name is case-insensitive (RFC 7235 §2.1); bearer-auth's 'rfc6749' mode compares it so.
    specCompliance: 'rfc6749',
    auth: options.auth
  })
}

export default fp(bearerAuthentication, { name: 'bearer-auth' })
