import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { handlers as generatedHandlers } from '../handlers/index.js'
import type { Config } from './config.js'
import { ApiError } from './errors.js'
import type { HandlerMap } from './http/operation-types.js'
import { atEndOfTurn } from './http/end-of-turn.js'
import { formatValidationErrors, installJsonBodyParser } from './http/json-body.js'
import { serializerCompiler, validatorCompiler } from './http/validation.js'
import { type ApiDocument, loadDocument } from './openapi/document.js'
import api from './plugins/api.js'
import docs from './plugins/docs.js'
import errorHandling, { answerClientError, answerFrameworkError } from './plugins/error-handling.js'
import health from './plugins/health.js'
import securityHeaders from './plugins/security-headers.js'
import storage from './plugins/storage.js'
import type { Store } from './store/types.js'

export interface AppOptions {
  /** openapi.yaml, parsed; loaded from the project when absent. */
  document?: ApiDocument
  /** A store made by the caller instead of one from DATABASE_URL. */
  store?: Store
  /** Replaces handlers (tests use it to prove response validation). */
  handlers?: Partial<HandlerMap>
  /** Milliseconds since the epoch. */
  now?: () => number
  /** false leaves out the rate limits: only to measure their cost (bench/limiter-cost.ts). */
  rateLimit?: boolean
  logger?: FastifyServerOptions['logger']
}

const REQUEST_ID = /^[\w.:-]{1,128}$/

/** Builds the whole service, ready to `listen` or `inject`; never listens itself. */
export async function buildApp (config: Config, options: AppOptions = {}): Promise<FastifyInstance> {
  const document = options.document ?? loadDocument()
  const handlers: HandlerMap = { ...generatedHandlers, ...options.handlers }
  const missing = [...document.operations.keys()].filter((id) => typeof handlers[id as keyof HandlerMap] !== 'function')
  if (missing.length > 0) throw new Error(`no handler for operation(s) ${missing.join(', ')}: run npm run generate`)

  const app = Fastify({
    logger: options.logger ?? { level: config.logLevel },
    bodyLimit: config.bodyLimit,
    // Fastify takes a hop count too, though its types list only boolean, string and function.
    trustProxy: config.trustProxy as boolean | string,
    // A caller's X-Request-Id is kept when it is sane, so logs can be joined across services.
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    schemaErrorFormatter: formatValidationErrors,
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    // Node would refuse a request without Host itself, with an empty body: the hook below does.
    http: { requireHostHeader: false },
    return503OnClosing: false
  })
  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(serializerCompiler)
  // Only JSON bodies are accepted; anything else is 415 rather than a string that fails validation.
  app.removeContentTypeParser('text/plain')
  installJsonBodyParser(app)
  // HTTP/1.1 requires a Host header (RFC 9112 §3.2); refused here so the answer is the Error body.
  app.addHook('onRequest', (request, _reply, done) => {
    const missing = request.raw.httpVersion === '1.1' && request.headers.host === undefined
    done(missing ? new ApiError('invalid_request', 'the Host header is required') : undefined)
  })
  // Once closing, a response ends its keep-alive connection: the requests in flight are drained,
  // and the server does not then wait for idle clients (up to keepAliveTimeout) to go away.
  let closing = false
  app.addHook('preClose', async () => { closing = true })
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id)
    if (closing) reply.header('connection', 'close')
    // Responses leave together at the end of the event-loop turn (see atEndOfTurn), except on a
    // connection about to close (shutdown, or a refused body the client may still be sending):
    // batching gains nothing there, and answering at once leaves it less unread data at close.
    if (reply.getHeader('connection') === 'close') done(null, payload)
    else atEndOfTurn(() => { done(null, payload) })
  })

  await app.register(errorHandling)
  await app.register(securityHeaders)
  await app.register(storage, {
    databaseUrl: config.databaseUrl,
    storeOptions: { poolMax: config.databasePoolMax, timeoutMs: config.databaseTimeoutMs },
    seed: config.seed,
    store: options.store
  })
  await app.register(health)
  await app.register(docs, { document, publicBaseUrl: config.publicBaseUrl })
  await app.register(api, {
    prefix: '/v1',
    document,
    handlers,
    publicBaseUrl: config.publicBaseUrl,
    now: options.now ?? Date.now,
    rateLimit: options.rateLimit === false
      ? false
      : {
          banAfter: config.rateLimitBanAfter,
          banSeconds: config.rateLimitBanSeconds,
          redis: config.redisUrl === undefined ? undefined : { url: config.redisUrl, keyPrefix: config.redisKeyPrefix, commandTimeoutMs: config.redisCommandTimeoutMs }
        }
  })
  return app
}
