import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type CorsOptions, isPreflight, originCheck } from '../external/cors.js'

/**
 * A preflight from an origin that CORS_ORIGINS does not list gets no CORS header
 * (src/plugins/external/cors.ts), and would go on to its route: under /v1, to authentication.
 * It is answered 204 here instead, since it is no attempt to authenticate; the browser refuses it
 * for want of Access-Control-Allow-Origin. A request that broke HTTP's rules is left to its 400.
 * Registered at the root right after the CORS plugin, so that its hook runs after the library's.
 */
async function corsPreflights (app: FastifyInstance, options: Pick<CorsOptions, 'origins'>) {
  const allowed = originCheck(options.origins)
  app.addHook('onRequest', (request, reply, done) => {
    if (isPreflight(request) && !allowed(request.headers.origin) && request.protocolError === null) return void reply.code(204).send()
    done()
  })
}

export default fp(corsPreflights, { name: 'cors-preflights', dependencies: ['cors'] })
