import type { FastifyInstance } from 'fastify'
import type { ErrorBody } from '../errors.js'
import { methodNotAllowed } from '../plugins/app/error-handling.js'

type ReadinessCheck = () => Promise<void>

/**
 * /healthz: the process is alive. /readyz: every dependency that registered a check answers
 * (storage always; the rate-limit store when one is configured), else 503.
 */
export default async function health (app: FastifyInstance) {
  const checks = new Map<string, ReadinessCheck>([['storage', () => app.store.ping()]])
  if (app.rateLimitStore.engine === 'redis') checks.set('rate-limit-store', () => app.rateLimitStore.ping())

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))

  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    const results = await Promise.all([...checks].map(async ([name, check]) => {
      try {
        await check()
        return [name, 'ok'] as const
      } catch (error) {
        request.log.warn({ err: error, check: name }, 'readiness check failed')
        return [name, 'unavailable'] as const
      }
    }))
    const failing = results.filter(([, state]) => state !== 'ok').map(([name]) => name)
    if (failing.length > 0) {
      return reply.code(503).send({ code: 'service_unavailable', message: `not ready: ${failing.join(', ')} unavailable`, status: 503 } satisfies ErrorBody)
    }
    return { status: 'ok', checks: Object.fromEntries(results) }
  })
  methodNotAllowed(app, '/healthz', ['GET'])
  methodNotAllowed(app, '/readyz', ['GET'])
}
