import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError, type ErrorCode, StoreUnavailableError } from '../../contract/errors.js'
import type { ApiKeyRecord } from '../../store/types.js'
import { BEARER_REALM } from '../external/bearer-auth.js'
import type { AuthFailureReason } from './metrics.js'

/** bearer-auth's own failures, by code: the header is missing, or names another scheme. */
const headerFailures: Record<string, ApiError> = {
  FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER: new ApiError('unauthorized',
    'missing Authorization header: send Authorization: Bearer <API_KEY>', { 'www-authenticate': BEARER_REALM }),
  FST_BEARER_AUTH_INVALID_AUTHORIZATION_HEADER: new ApiError('unauthorized',
    'the Authorization header must use the Bearer scheme', { 'www-authenticate': `${BEARER_REALM}, error="invalid_request"` })
}

const headerFailureReasons: Record<string, AuthFailureReason> = {
  FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER: 'missing',
  FST_BEARER_AUTH_INVALID_AUTHORIZATION_HEADER: 'scheme'
}

/** bearer-auth.ts's refusals, by code: an invalid key, or one the key guard did not let it look up. */
const keyFailureReasons: Partial<Record<ErrorCode, AuthFailureReason>> = {
  unauthorized: 'invalid_key',
  rate_limited: 'key_not_checked',
  service_unavailable: 'key_checks_busy'
}

/**
 * Every request of the scope it is registered in (/v1), in one onRequest pass, before the body is
 * read or the path validated: identify the API key (bearer-auth), let the limiter count the
 * request (failed authentications too, per client address), then answer 401 when the key was
 * not accepted. A key that could not be looked up (storage down) is answered 503, uncounted.
 */
async function authentication (app: FastifyInstance) {
  const verify = app.verifyBearerAuth
  if (verify === undefined) throw new Error('@fastify/bearer-auth did not decorate verifyBearerAuth')
  app.decorateRequest('apiKey', null)
  const metrics = app.metrics

  app.addHook('onRequest', (request, reply, done) => {
    // A request that breaks HTTP's framing rules (http-protocol.ts) is counted per client address
    // and answered 400, its key not looked up.
    const { protocolError } = request
    if (protocolError !== null) {
      app.rateLimits.count(request, reply, null).then(() => { done(protocolError) }, done)
      return
    }
    verify(request, reply, (error?: Error) => {
      if (error instanceof StoreUnavailableError) {
        metrics?.authFailure('storage_unavailable')
        app.rateLimits.skip(request, reply)
        return done(error)
      }
      const failure = error === undefined ? undefined : (error instanceof ApiError ? error : headerFailures[(error as { code?: string }).code ?? ''] ?? error)
      if (error !== undefined) metrics?.authFailure((error instanceof ApiError ? keyFailureReasons[error.code] : headerFailureReasons[(error as { code?: string }).code ?? '']) ?? 'error')
      app.rateLimits.count(request, reply, failure === undefined ? request.apiKey : null)
        .then(() => { done(failure) }, done)
    })
  })
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's active API key, once authentication has resolved it. */
    apiKey: ApiKeyRecord | null
  }
}

export default fp(authentication, { name: 'authentication', dependencies: ['bearer-auth', 'rate-limit-policy', 'storage', 'http-protocol'] })
