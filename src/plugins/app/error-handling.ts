import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError, type ErrorCode, type ErrorBody, StoreUnavailableError } from '../../contract/errors.js'

// Fastify's and its plugins' own errors, by code, mapped to the API's error codes.
const frameworkCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
  FST_ERR_BAD_URL: 'invalid_request',
  FST_ERR_ASYNC_CONSTRAINT: 'invalid_request'
}

const messages: Partial<Record<string, string>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'request body is larger than the server accepts',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'request body must be application/json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'body is empty; send a JSON object',
  // Fastify's JSON parser (onProtoPoisoning and onConstructorPoisoning: 'error') refuses malformed
  // JSON and poisoning keys with this one error, and does not say which.
  FST_ERR_CTP_INVALID_JSON_BODY: 'body is not valid JSON, or holds a "__proto__" or "constructor.prototype" key'
}

/** Turns any error into the Error body of openapi.yaml; internals never leave the process. */
function toErrorBody (error: FastifyError, request: FastifyRequest, reply: FastifyReply): ErrorBody {
  if (error instanceof ApiError) {
    reply.headers(error.headers)
    return error.toBody()
  }
  if (error instanceof StoreUnavailableError) {
    // Logged once per outage, not per request (src/plugins/app/dependencies.ts), and counted.
    request.server.dependencies.of('storage').failed(error)
    // Unreachable or locked storage is usually back within moments.
    reply.header('retry-after', '1')
    return { code: 'service_unavailable', message: 'storage is unavailable, retry later', status: 503 }
  }
  if (error.validation) {
    return { code: 'invalid_request', message: error.message, status: 400 }
  }
  const mapped = frameworkCodes[error.code]
  if (mapped !== undefined) {
    const status = mapped === 'invalid_request' ? 400 : (error.statusCode ?? 400)
    return { code: mapped, message: messages[error.code] ?? error.message, status }
  }
  const status = error.statusCode ?? 500
  if (status >= 400 && status < 500) {
    return { code: 'invalid_request', message: error.message, status: 400 }
  }
  request.log.error({ err: error }, 'internal error')
  return { code: 'internal_error', message: 'internal server error', status: 500 }
}

/**
 * Fastify's `frameworkErrors` option: errors Fastify raises before routing (malformed
 * percent-encoding, an over-long path parameter) bypass the error handler, and would otherwise
 * answer with Fastify's own body instead of the Error body.
 */
export function answerFrameworkError (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const body: ErrorBody = error.code === 'FST_ERR_BAD_URL'
    ? { code: 'invalid_request', message: 'the URL is not valid: malformed percent-encoding', status: 400 }
    : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? { code: 'invalid_request', message: 'a path parameter is longer than the server accepts', status: 400 }
      : { code: 'internal_error', message: 'internal server error', status: 500 }
  if (body.status < 500) request.log.info({ code: body.code, reason: error.message }, 'request rejected')
  else request.log.error({ err: error }, 'internal error')
  // No hook runs before routing, so the id http-protocol.ts sets on every other response is set here.
  reply.header('x-request-id', request.id)
  void reply.code(body.status).type('application/json; charset=utf-8').send(body)
}

/** The latest response of each connection: errorHandling records it, answerClientError reads it. */
const latestResponses = new WeakMap<Socket, ServerResponse>()

/**
 * Whether the request whose bytes are still arriving on this connection already has its answer.
 * An answer may go out before its request's body has arrived (a 401 decided from the headers, a
 * 415 from Content-Type); Node then reads and discards the rest of the body, and the request is in
 * progress, for the request time-out too, until its last byte.
 */
function answeredEarly (socket: Socket): boolean {
  const response = latestResponses.get(socket)
  return response !== undefined && response.headersSent && !response.req.complete
}

/**
 * Fastify's `clientErrorHandler` option: requests Node's HTTP parser refuses (malformed request
 * line or header, an unknown method, Content-Length with Transfer-Encoding, headers over the
 * size limit) never reach Fastify; they are answered here with the Error body, then the
 * connection is closed, as Node does. So is a request whose headers and body have not all arrived
 * within REQUEST_TIMEOUT_MS (408). A request already answered gets no second answer: its
 * connection is closed without one, so a client or proxy never reads it as the answer to its
 * next request.
 */
export function answerClientError (error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const body: ErrorBody = error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? { code: 'request_timeout', message: 'the request did not arrive in time: send its headers and body without pausing', status: 408 }
    : { code: 'invalid_request', message: error.code === 'HPE_HEADER_OVERFLOW' ? 'request headers are larger than the server accepts' : 'malformed HTTP request', status: 400 }
  // A response already under way on this connection cannot be followed by another one.
  const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true
  if (socket.writable && !answering && !answeredEarly(socket)) {
    const text = JSON.stringify(body)
    const reason = body.status === 408 ? 'Request Timeout' : 'Bad Request'
    socket.write(`HTTP/1.1 ${body.status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`)
  }
  socket.destroy(error)
}

/** 404 with the Error body; set as the not-found handler of the root and of /v1 (behind authentication there). */
export function notFound (request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split('?', 1)[0] ?? '/'
  return reply.code(404).send({ code: 'not_found', message: `no route ${request.method} ${path}`, status: 404 } satisfies ErrorBody)
}

/**
 * A route answering 405 with `Allow` for every method `url` does not have. Fastify's router has no
 * 405 of its own and offers no lookup by concrete path, so each path that has routes gets this one
 * for its other methods (HEAD comes with GET).
 */
export function methodNotAllowed (app: FastifyInstance, url: string, methods: readonly string[]): void {
  const allowed = methods.includes('GET') && !methods.includes('HEAD') ? [...methods, 'HEAD'] : [...methods]
  const others = app.supportedMethods.filter((method) => !allowed.includes(method))
  const allow = allowed.join(', ')
  app.route({
    method: others,
    url,
    schema: { hide: true },
    handler: async (request, reply) => {
      const path = request.url.split('?', 1)[0] ?? url
      reply.header('allow', allow)
      return reply.code(405).send({ code: 'method_not_allowed', message: `${request.method} is not allowed on ${path}; allowed: ${allow}`, status: 405 } satisfies ErrorBody)
    }
  })
}

async function errorHandling (app: FastifyInstance) {
  // Every response, whichever way it is sent (hooks, the error handler, frameworkErrors before
  // routing), is the latest of its connection until the next request arrives on it.
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => { latestResponses.set(request.socket, response) })
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const body = toErrorBody(error, request, reply)
    if (body.status < 500) request.log.info({ code: body.code, reason: body.message }, 'request rejected')
    return reply.code(body.status).type('application/json; charset=utf-8').send(body)
  })
  app.setNotFoundHandler(notFound)
}

export default fp(errorHandling, { name: 'error-handling' })
