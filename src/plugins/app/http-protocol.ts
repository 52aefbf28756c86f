import type { FastifyInstance, FastifyRequest, preParsingHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../../contract/errors.js'

// RFC 9110 §7.2 / RFC 3986 §3.2.2: a reg-name (or IPv4 address) or a bracketed IP literal, then an
// optional port. Nothing else, no space, no userinfo, no path.
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]+)(?::\d{0,5})?$/

/** How often a header name occurs in the request as sent (Node keeps only the first Host and Authorization). */
function occurrences (request: FastifyRequest, name: string): number {
  const raw = request.raw.rawHeaders
  let count = 0
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === name.length && raw[i]!.toLowerCase() === name) count++
  }
  return count
}

/**
 * What breaks HTTP's framing rules in a request, if anything: Host must be sent exactly once (once
 * at most in HTTP/1.0) and be a valid host[:port] (RFC 9112 §3.2); a request with two
 * Authorization headers names two credentials, and which one counts must not be left to a guess.
 */
function protocolError (request: FastifyRequest): ApiError | undefined {
  const hosts = occurrences(request, 'host')
  if (hosts === 0 && request.raw.httpVersion !== '1.0') return new ApiError('invalid_request', 'the Host header is required')
  if (hosts > 1) return new ApiError('invalid_request', 'the Host header must be sent once')
  if (hosts === 1 && !HOST.test(request.headers.host ?? '')) return new ApiError('invalid_request', 'the Host header must be a host name or address, with an optional port')
  if (occurrences(request, 'authorization') > 1) return new ApiError('invalid_request', 'the Authorization header must be sent once')
  return undefined
}

/** A coded request body is refused (the preParsing hook of the routes that take a body). */
const refuseCodedBody: preParsingHookHandler = (request, _reply, payload, done) => {
  const coding = request.headers['content-encoding']
  const hasBody = request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] ?? '0') !== '0'
  if (coding === undefined || !hasBody) return done(null, payload)
  done(new ApiError('unsupported_media_type', 'request body must not have a Content-Encoding: send it uncompressed'), payload)
}

/** A route option that takes one hook or several, as an array. */
const hooksOf = <T>(hooks: T | T[] | undefined): T[] => hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]

const isV1 = (url: string) => url.startsWith('/v1/') || url === '/v1' || url.startsWith('/v1?')

/**
 * HTTP conventions every response follows: a request that breaks HTTP's framing rules (Host,
 * Authorization) is refused with the Error body, the request id goes back as X-Request-Id, and
 * while the server drains (close) every response ends its keep-alive connection, so shutdown does
 * not wait for idle clients (up to keepAliveTimeout).
 */
async function httpProtocol (app: FastifyInstance) {
  app.decorateRequest('protocolError', null)
  // Outside /v1 the refusal is immediate. Under /v1 it is kept for the authentication hook, which
  // counts the request (per client address: no key is trusted from such a request) and answers it
  // with the rate-limit headers, like every /v1 error. Node itself would refuse a request without
  // Host with an empty body (the server option requireHostHeader is off for that reason).
  app.addHook('onRequest', (request, _reply, done) => {
    const error = protocolError(request)
    if (error === undefined || !isV1(request.url)) return done(error)
    request.protocolError = error
    done()
  })

  // A coded body (gzip, br…) is not decoded: 415 says so, instead of a parse error about bytes the
  // client never meant as JSON. Only on the routes whose operation takes a body (the others ignore
  // one): a route-level hook, so that the many requests without a body skip Fastify's preParsing
  // step altogether (it binds a function and makes a runner per request for any hook it has).
  app.addHook('onRoute', (route) => {
    if (route.schema?.body === undefined) return
    route.preParsing = [...hooksOf(route.preParsing), refuseCodedBody]
  })
  let closing = false
  app.addHook('preClose', async () => { closing = true })
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id)
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Under /v1: the framing rule the request breaks, answered once it has been counted. */
    protocolError: ApiError | null
  }
}

export default fp(httpProtocol, { name: 'http-protocol' })
