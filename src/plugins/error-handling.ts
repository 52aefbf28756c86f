import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import FindMyWay, { type HTTPMethod, type HTTPVersion } from 'find-my-way'
import { ApiError, type ErrorCode, type ErrorBody, StoreUnavailableError } from '../errors.js'

const BEARER_REALM = 'Bearer realm="petstore"'

// Fastify's and its plugins' own errors, by code, mapped to the API's error codes.
const frameworkCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
  FST_ERR_BAD_URL: 'invalid_request',
  FST_ERR_ASYNC_CONSTRAINT: 'invalid_request',
  FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER: 'unauthorized',
  FST_BEARER_AUTH_INVALID_AUTHORIZATION_HEADER: 'unauthorized'
}

const messages: Partial<Record<ErrorCode, string>> = {
  payload_too_large: 'request body is larger than the server accepts',
  unsupported_media_type: 'request body must be application/json'
}

function unauthorized (request: FastifyRequest, error: FastifyError): { body: ErrorBody, challenge: string } {
  const header = request.headers.authorization
  if (error.code === 'FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER' || header === undefined) {
    return { body: { code: 'unauthorized', message: 'missing Authorization header: send Authorization: Bearer <API_KEY>', status: 401 }, challenge: BEARER_REALM }
  }
  if (!/^bearer /i.test(header)) {
    return { body: { code: 'unauthorized', message: 'the Authorization header must use the Bearer scheme', status: 401 }, challenge: `${BEARER_REALM}, error="invalid_request"` }
  }
  return { body: { code: 'unauthorized', message: 'invalid or revoked API key', status: 401 }, challenge: `${BEARER_REALM}, error="invalid_token"` }
}

/** Turns any error into the Error body of PRODUCT.md §2; internals never leave the process. */
function toErrorBody (error: FastifyError, request: FastifyRequest, reply: FastifyReply): ErrorBody {
  if (error instanceof ApiError) {
    reply.headers(error.headers)
    return error.toBody()
  }
  if (error instanceof StoreUnavailableError) {
    request.log.error({ err: error }, 'storage unavailable')
    return { code: 'service_unavailable', message: 'storage is unavailable, retry later', status: 503 }
  }
  if (error.validation) {
    return { code: 'invalid_request', message: error.message, status: 400 }
  }
  const mapped = frameworkCodes[error.code]
  if (mapped === 'unauthorized') {
    const { body, challenge } = unauthorized(request, error)
    reply.header('www-authenticate', challenge)
    return body
  }
  if (mapped !== undefined) {
    const status = mapped === 'invalid_request' ? 400 : (error.statusCode ?? 400)
    return { code: mapped, message: messages[mapped] ?? error.message, status }
  }
  const status = error.statusCode ?? 500
  if (status >= 400 && status < 500) {
    // JSON syntax errors and prototype poisoning arrive as plain 400s from the body parser.
    const message = error instanceof SyntaxError ? `body is not valid JSON: ${error.message}` : error.message
    return { code: 'invalid_request', message, status: 400 }
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
  void reply.code(body.status).type('application/json; charset=utf-8').send(body)
}

/**
 * Fastify's `clientErrorHandler` option: requests Node's HTTP parser refuses (malformed request
 * line or header, an unknown method, Content-Length with Transfer-Encoding, headers over the
 * size limit) never reach Fastify; they are answered here with the Error body, then the
 * connection is closed, as Node does.
 */
export function answerClientError (error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const message = error.code === 'HPE_HEADER_OVERFLOW'
    ? 'request headers are larger than the server accepts'
    : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'the request did not arrive in time' : 'malformed HTTP request'
  const body = JSON.stringify({ code: 'invalid_request', message, status: 400 } satisfies ErrorBody)
  if (socket.writable) {
    socket.write(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
  }
  socket.destroy(error)
}

const httpMethods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

async function errorHandling (app: FastifyInstance) {
  // A table of every route, to tell "no such path" (404) from "not with this method" (405).
  const routes = FindMyWay<HTTPVersion.V1>({ ignoreTrailingSlash: false })
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    for (const method of methods.map((m) => m.toUpperCase() as HTTPMethod)) {
      if (!routes.hasRoute(method, route.url)) routes.on(method, route.url, () => {})
    }
  })

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const body = toErrorBody(error, request, reply)
    if (body.status < 500) request.log.info({ code: body.code, reason: body.message }, 'request rejected')
    return reply.code(body.status).type('application/json; charset=utf-8').send(body)
  })

  app.decorate('notFoundHandler', (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?', 1)[0] ?? '/'
    const allowed = httpMethods.filter((m) => routes.find(m, path) !== null)
    // A route that matches with this very method (a static file route, say) but found nothing is a 404.
    if (allowed.length > 0 && !allowed.includes(request.method as typeof allowed[number])) {
      reply.header('allow', allowed.join(', '))
      return reply.code(405).send({ code: 'method_not_allowed', message: `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`, status: 405 } satisfies ErrorBody)
    }
    return reply.code(404).send({ code: 'not_found', message: `no route ${request.method} ${path}`, status: 404 } satisfies ErrorBody)
  })
  app.setNotFoundHandler(app.notFoundHandler)
}

declare module 'fastify' {
  interface FastifyInstance {
    notFoundHandler: (request: FastifyRequest, reply: FastifyReply) => FastifyReply
  }
}

export default fp(errorHandling, { name: 'error-handling' })
