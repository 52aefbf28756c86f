import { randomUUID } from 'node:crypto'
import type { Server } from 'node:http'
import type { FastifyHttpOptions, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { handlers as generatedHandlers } from '../handlers/index.js'
import type { Config } from './config.js'
import { type ApiDocument, documentForServing, loadDocument } from './contract/document.js'
import { formatValidationErrors } from './contract/json-body.js'
import { strictJsonParser } from './contract/json-parser.js'
import { isNotImplemented } from './contract/not-implemented.js'
import type { HandlerMap } from './contract/operation-types.js'
import { checkHandlers } from './contract/operations.js'
import { serializerCompiler, validatorCompiler } from './contract/validation.js'
import { holdsKeyMaterial, loggerOptions, requestLogger } from './logger.js'
import conditionalRequests from './plugins/app/conditional-requests.js'
import corsPreflights from './plugins/app/cors-preflights.js'
import dependencies from './plugins/app/dependencies.js'
import errorHandling, { answerClientError, answerFrameworkError } from './plugins/app/error-handling.js'
import httpProtocol from './plugins/app/http-protocol.js'
import metrics from './plugins/app/metrics.js'
import keyGuard from './plugins/app/key-guard.js'
import webhooks from './plugins/app/webhooks.js'
import rateLimitPolicy from './plugins/app/rate-limit-policy.js'
import repositories from './plugins/app/repositories.js'
import storage from './plugins/app/storage.js'
import compress from './plugins/external/compress.js'
import cors from './plugins/external/cors.js'
import rateLimit from './plugins/external/rate-limit.js'
import securityHeaders from './plugins/external/security-headers.js'
import swagger from './plugins/external/swagger.js'
import health from './routes/health.js'
import openapiDocument from './routes/openapi-document.js'
import v1 from './routes/v1.js'
import type { Store } from './store/types.js'

export interface AppOptions {
  config: Config
  /** openapi.yaml, loaded; read from the project when absent. */
  document?: ApiDocument
  /** A store made by the caller instead of one from DATABASE_URL (it is still closed with the app). */
  store?: Store
  /** Handlers in place of (some of) handlers/ — for an operation added to a test document, say. */
  handlers?: Partial<HandlerMap>
  /** Milliseconds since the epoch; the rate-limit windows and the sunset read it. */
  now?: () => number
  /** How often expired Idempotency-Key records are removed (tests shorten it). */
  idempotencySweepMs?: number | undefined
  /** Monotonic milliseconds (performance.now by default); /readyz's reuse of a result reads it (app.dependencies). */
  monotonicNow?: () => number
}

const REQUEST_ID = /^[\w.:-]{1,128}$/

/** The options Fastify is constructed with (src/server.ts, the test helper, the benchmarks). */
export function serverOptions (config: Config): FastifyHttpOptions<Server> {
  return {
    logger: loggerOptions(config),
    childLoggerFactory: requestLogger,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    // A caller's X-Request-Id is kept when it is sane, so logs can be joined across services; one
    // that holds an API key is not (it would be in every line of the request, and echoed).
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) && !holdsKeyMaterial(given) ? given : randomUUID()
    },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    schemaErrorFormatter: formatValidationErrors,
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    // A request's headers and body must all arrive within REQUEST_TIMEOUT_MS; Node answers a late
    // one through clientError (408, error-handling.ts). Node checks every 30 s by default, far
    // too coarse for a 30 s limit: here every tenth of it, at most once a second.
    requestTimeout: config.requestTimeoutMs,
    http: {
      // Node would refuse a request without Host itself, with an empty body: http-protocol.ts does.
      requireHostHeader: false,
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(config.requestTimeoutMs / 10)))
    },
    return503OnClosing: false
  }
}

/**
 * The whole service as one plugin, fastify/demo style: the libraries (external plugins), the
 * application's own plugins, then the routes. Register it on an instance built with serverOptions.
 */
async function app (fastify: FastifyInstance, options: AppOptions) {
  const { config } = options
  const document = options.document ?? await loadDocument()
  const handlers: HandlerMap = { ...generatedHandlers, ...options.handlers }
  checkHandlers(document, handlers)
  const stubs = [...document.operations.keys()].filter((id) => isNotImplemented(handlers[id as keyof HandlerMap]))
  if (stubs.length > 0) {
    fastify.log.warn({ operations: stubs }, `not implemented yet (answering 501 not_implemented): ${stubs.join(', ')}; write handlers/<operationId>.ts`)
  }
  const now = options.now ?? Date.now
  const served = documentForServing(document, config.publicBaseUrl)
  fastify.decorate('apiDocument', document)

  fastify.setValidatorCompiler(validatorCompiler)
  fastify.setSerializerCompiler(serializerCompiler)
  // Only JSON bodies are accepted; anything else is 415 rather than a string that fails validation.
  // Fastify's JSON parser stays, wrapped: see strictJsonParser.
  fastify.removeContentTypeParser('text/plain')
  fastify.removeContentTypeParser('application/json')
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, strictJsonParser(fastify))

  await fastify.register(securityHeaders)
  await fastify.register(compress)
  await fastify.register(rateLimit, {
    banSeconds: config.rateLimitBanSeconds,
    redis: config.redisUrl === undefined ? undefined : { url: config.redisUrl, keyPrefix: config.redisKeyPrefix, commandTimeoutMs: config.redisCommandTimeoutMs },
    now
  })
  await fastify.register(swagger, { served, persistAuthorization: config.docsPersistAuthorization })

  await fastify.register(errorHandling)
  await fastify.register(httpProtocol)
  // After the Host check, and at the root so that their hooks answer preflights before /v1 authenticates.
  if (config.corsOrigins !== undefined) {
    await fastify.register(cors, { origins: config.corsOrigins, document })
    await fastify.register(corsPreflights, { origins: config.corsOrigins })
  }
  await fastify.register(conditionalRequests)
  await fastify.register(metrics, { enabled: config.metricsPort !== undefined })
  await fastify.register(storage, {
    databaseUrl: config.databaseUrl,
    storeOptions: { poolMax: config.databasePoolMax, timeoutMs: config.databaseTimeoutMs },
    seed: config.seed,
    store: options.store
  })
  await fastify.register(dependencies, { clock: options.monotonicNow })
  await fastify.register(repositories, { now, sweepIntervalMs: options.idempotencySweepMs, webhookEncryptionKey: config.webhookEncryptionKey })
  await fastify.register(webhooks, { now, timeoutMs: config.webhookTimeoutMs, retrySchedule: config.webhookRetrySchedule, allowPrivate: config.webhookAllowPrivate })
  await fastify.register(keyGuard, { now, maxWaitMs: config.databaseTimeoutMs })
  await fastify.register(rateLimitPolicy, { plans: document.plans, banAfter: config.rateLimitBanAfter, now })

  await fastify.register(health)
  await fastify.register(openapiDocument, { served })
  await fastify.register(v1, { prefix: '/v1', document, handlers, publicBaseUrl: config.publicBaseUrl, now })
}

declare module 'fastify' {
  interface FastifyInstance {
    /** openapi.yaml as this app read it (src/contract/document.ts). */
    apiDocument: ApiDocument
  }
}

export default fp(app, { name: 'petstore', fastify: '5.x' })
