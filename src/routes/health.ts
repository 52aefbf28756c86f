import type { FastifyInstance } from 'fastify'
import type { ErrorBody } from '../contract/errors.js'
import { methodNotAllowed } from '../plugins/app/error-handling.js'

type ReadinessCheck = () => Promise<void>
type Readiness = [name: string, state: 'ok' | 'unavailable'][]

/** How long one readiness result is reused: /readyz needs no key and has no limit. */
export const READINESS_REUSE_MS = 1000

/**
 * /healthz: the process is alive. /readyz: every dependency that registered a check answers
 * (storage always; the rate-limit store when one is configured), else 503. A result is reused
 * for READINESS_REUSE_MS after it was obtained, and calls that arrive while the checks run wait
 * for those same checks: however often /readyz is called, the dependencies are asked about at
 * most once a second.
 */
export default async function health (app: FastifyInstance, options: { clock?: () => number } = {}) {
  // Monotonic time, not the app's clock: the tests move that one to drive rate-limit windows.
  const clock = options.clock ?? (() => performance.now())
  const checks = new Map<string, ReadinessCheck>([['storage', () => app.store.ping()]])
  if (app.rateLimitStore.engine === 'redis') checks.set('rate-limit-store', () => app.rateLimitStore.ping())

  const runChecks = (): Promise<Readiness> => Promise.all([...checks].map(async ([name, check]) => {
    try {
      await check()
      return [name, 'ok'] as const
    } catch (error) {
      app.log.warn({ err: error, check: name }, 'readiness check failed')
      return [name, 'unavailable'] as const
    }
  }))

  let current: { readiness: Promise<Readiness>, validUntil: number } | undefined
  const readiness = (): Promise<Readiness> => {
    const now = clock()
    if (current !== undefined && now < current.validUntil) return current.readiness
    const entry = { readiness: runChecks(), validUntil: Number.POSITIVE_INFINITY }
    void entry.readiness.then(() => { entry.validUntil = clock() + READINESS_REUSE_MS })
    current = entry
    return entry.readiness
  }

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const results = await readiness()
    const failing = results.filter(([, state]) => state !== 'ok').map(([name]) => name)
    if (failing.length > 0) {
      return reply.code(503).send({ code: 'service_unavailable', message: `not ready: ${failing.join(', ')} unavailable`, status: 503 } satisfies ErrorBody)
    }
    return { status: 'ok', checks: Object.fromEntries(results) }
  })
  methodNotAllowed(app, '/healthz', ['GET'])
  methodNotAllowed(app, '/readyz', ['GET'])
}
