import type { FastifyInstance } from 'fastify'
import type { ErrorBody } from '../contract/errors.js'
import { methodNotAllowed } from '../plugins/app/error-handling.js'

export { READINESS_REUSE_MS } from '../plugins/app/dependencies.js'

/**
 * /healthz: the process is alive. /readyz: every dependency answers (storage always, and writes
 * pass; the rate-limit store when one is configured), else 503 naming the ones that do not. The
 * checks and the reuse of their result are the dependencies plugin's (app.dependencies):
 * however often /readyz is called, the dependencies are asked about at most once a second.
 */
export default async function health (app: FastifyInstance) {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const results = await app.dependencies.readiness()
    const failing = results.filter(([, state]) => state !== 'ok').map(([name]) => name)
    if (failing.length > 0) {
      return reply.code(503).send({ code: 'service_unavailable', message: `not ready: ${failing.join(', ')} unavailable`, status: 503 } satisfies ErrorBody)
    }
    return { status: 'ok', checks: Object.fromEntries(results) }
  })
  methodNotAllowed(app, '/healthz', ['GET'])
  methodNotAllowed(app, '/readyz', ['GET'])
}
