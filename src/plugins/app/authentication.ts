import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { KeyRefusal } from '../../authentication/key-guard.js'
import { ApiError, type ErrorCode, StoreUnavailableError } from '../../contract/errors.js'
import type { MaybePromise } from '../../maybe-promise.js'
import { clientAddress } from '../../rate-limit/client-address.js'
import { hashApiKey } from '../../repositories/api-keys.js'
import type { ApiKeyRecord } from '../../store/types.js'
import bearerAuth from '../external/bearer-auth.js'
import type { AuthFailureReason } from './metrics.js'

const BEARER_REALM = 'Bearer realm="petstore"'

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

const invalidKey = () => new ApiError('unauthorized', 'invalid or revoked API key', { 'www-authenticate': `${BEARER_REALM}, error="invalid_token"` })

// The two refusals of a key that was not looked up: it may well be valid, so it is not called
// invalid. A limited address's request is answered by the limiter first (429 for the address);
// this one only when the limiter's store fails open.
const notChecked = () => new ApiError('rate_limited',
  'too many requests without a valid API key from this client address: the key was not checked; retry in 1 s', { 'retry-after': '1' })
const busy = () => new ApiError('service_unavailable', 'too many API keys are being checked at once; retry in 1 s', { 'retry-after': '1' })

/**
 * The scope the route's operation needs (its security requirement in openapi.yaml, given to the
 * route by src/contract/operations.ts), when the request's key does not hold it: 403 with the
 * RFC 6750 §3.1 challenge. Routes without an operation (404, 405) need no scope.
 */
function missingScope (request: FastifyRequest): ApiError | undefined {
  const { scope, operationId } = request.routeOptions.config
  if (scope === undefined || request.apiKey === null || request.apiKey.scopes.includes(scope)) return undefined
  request.server.metrics?.authFailure('insufficient_scope')
  return new ApiError('insufficient_scope', `the API key lacks the scope ${scope}, which ${operationId ?? 'this operation'} needs`,
    { 'www-authenticate': `${BEARER_REALM}, error="insufficient_scope", scope="${scope}"` })
}

/** identify's refusals, by code: an invalid key, or one the key guard did not let it look up. */
const keyFailureReasons: Partial<Record<ErrorCode, AuthFailureReason>> = {
  unauthorized: 'invalid_key',
  rate_limited: 'key_not_checked',
  service_unavailable: 'key_checks_busy'
}

/**
 * bearer-auth's `auth`: the key of the Authorization header, looked up by its SHA-256 through the
 * API keys repository. The key guard (src/authentication/key-guard.ts) decides first whether the
 * lookup is worth making: guessed keys from a limited address, and repeats of a key the store just
 * refused, are not looked up. An unknown or revoked key is refused here, where that is known, with
 * its own message; an accepted one is the request's `apiKey`.
 */
function identify (key: string, request: FastifyRequest): MaybePromise<boolean> {
  const keyHash = hashApiKey(key)
  const checked = request.server.keyGuard.check(keyHash, () => clientAddress(request))
  // This runs for every /v1 request: a key the store had at hand is judged in this same call,
  // without a promise (see KeyGuard.check); bearer-auth takes a boolean or a promise of one, and
  // turns a throw into its failure as it does a rejection.
  return checked instanceof Promise ? checked.then((record) => accept(record, request)) : accept(checked, request)
}

/** The key guard's answer: the request's key, or the refusal. */
function accept (record: ApiKeyRecord | KeyRefusal | undefined, request: FastifyRequest): true {
  if (record === undefined || record === 'unknown') throw invalidKey()
  if (record === 'not-checked') throw notChecked()
  if (record === 'busy') throw busy()
  request.apiKey = record
  return true
}

/**
 * Every request of the scope it is registered in (/v1), in one onRequest pass, before the body is
 * read or the path validated: identify the API key (bearer-auth reads the header, `identify`
 * judges the key), let the limiter count the request (failed authentications too, per client
 * address), then answer 401 when the key was not accepted, 403 when it lacks the operation's scope. A key that could not be looked up
 * (storage down, or too many keys waiting for a lookup) is answered 503, uncounted.
 */
async function authentication (app: FastifyInstance) {
  await app.register(bearerAuth, { auth: identify })
  const verify = app.verifyBearerAuth
  if (verify === undefined) throw new Error('@fastify/bearer-auth did not decorate verifyBearerAuth')
  app.decorateRequest('apiKey', null)
  const metrics = app.metrics

  app.addHook('onRequest', (request, reply, done) => {
    // A request that breaks HTTP's framing rules (http-protocol.ts) is counted per client address
    // and answered 400, its key not looked up.
    const { protocolError } = request
    if (protocolError !== null) {
      app.rateLimits.count(request, reply, null, (error) => { done(error ?? protocolError) })
      return
    }
    verify(request, reply, (error?: Error) => {
      // The service's own waiting (storage down, too many keys being checked) is not the
      // client's doing: answered 503, counted against no one.
      if (error instanceof StoreUnavailableError || (error instanceof ApiError && error.statusCode === 503)) {
        metrics?.authFailure(error instanceof StoreUnavailableError ? 'storage_unavailable' : 'key_checks_busy')
        app.rateLimits.skip(request, reply)
        return done(error)
      }
      const failure = error === undefined ? undefined : (error instanceof ApiError ? error : headerFailures[(error as { code?: string }).code ?? ''] ?? error)
      if (error !== undefined) metrics?.authFailure((error instanceof ApiError ? keyFailureReasons[error.code] : headerFailureReasons[(error as { code?: string }).code ?? '']) ?? 'error')
      // A valid key without the operation's scope is counted against the key, like any request of
      // it, then refused (unless the limiter refuses it first).
      const refusal = failure ?? missingScope(request)
      app.rateLimits.count(request, reply, failure === undefined ? request.apiKey : null, (error) => { done(error ?? refusal) })
    })
  })
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope of bearerAuth the route's operation needs (src/contract/operations.ts). */
    scope?: string
    operationId?: string
  }
  interface FastifyRequest {
    /** The caller's active API key, once authentication has resolved it. */
    apiKey: ApiKeyRecord | null
  }
}

export default fp(authentication, { name: 'authentication', dependencies: ['rate-limit-policy', 'repositories', 'storage', 'http-protocol'] })
