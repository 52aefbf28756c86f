import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { ErrorBody } from '../errors.js'

type ReadinessCheck = () => Promise<void>

/**
 * /healthz: the process is alive. /readyz: every dependency that registered a check answers
 * (storage always; the rate-limit store when one is configured), else 503.
 */
async function health (app: FastifyInstance) {
  const checks = new Map<string, ReadinessCheck>()
  app.decorate('addReadinessCheck', (name: string, check: ReadinessCheck) => { checks.set(name, check) })
  app.addReadinessCheck('storage', () => app.store.ping())

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
}

declare module 'fastify' {
  interface FastifyInstance {
    addReadinessCheck: (name: string, check: ReadinessCheck) => void
  }
}

export default fp(health, { name: 'health', dependencies: ['storage'] })
