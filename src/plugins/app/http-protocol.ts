import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../../errors.js'

/**
 * HTTP conventions every response follows: a request without Host is refused with the Error body,
 * the request id goes back as X-Request-Id, and while the server drains (close) every response ends
 * its keep-alive connection, so shutdown does not wait for idle clients (up to keepAliveTimeout).
 */
async function httpProtocol (app: FastifyInstance) {
  // HTTP/1.1 requires a Host header (RFC 9112 §3.2). Node would refuse it with an empty body
  // (the server option requireHostHeader is off for that reason): refused here instead.
  app.addHook('onRequest', (request, _reply, done) => {
    const missing = request.raw.httpVersion === '1.1' && request.headers.host === undefined
    done(missing ? new ApiError('invalid_request', 'the Host header is required') : undefined)
  })

  let closing = false
  app.addHook('preClose', async () => { closing = true })
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id)
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
}

export default fp(httpProtocol, { name: 'http-protocol' })
