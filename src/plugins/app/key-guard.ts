import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { KeyGuard } from '../../authentication/key-guard.js'
import type { ApiKeyRecord } from '../../store/types.js'

/** How often the key guard's expired entries are swept, a bounded batch each time. */
const SWEEP_INTERVAL_MS = 1000

/**
 * The key guard (src/authentication/key-guard.ts) over the API keys repository: which presented
 * keys are worth a lookup. Authentication asks it before each lookup; the rate-limit policy tells
 * it which client addresses are limited.
 */
/**
 * `maxWaitMs`: how long a key may wait for its lookup before it is answered 503: the storage's
 * own time limit (DATABASE_TIMEOUT_MS), since a lookup is a storage operation like any other.
 */
async function keyGuard (app: FastifyInstance, options: { now: () => number, maxWaitMs: number }) {
  const guard = new KeyGuard<ApiKeyRecord>({
    now: options.now,
    maxWaitMs: options.maxWaitMs,
    lookups: app.apiKeysRepository
  })
  const sweeper = setInterval(() => { guard.sweep() }, SWEEP_INTERVAL_MS).unref()
  app.addHook('onClose', async () => {
    clearInterval(sweeper)
    guard.clear()
  })
  app.decorate('keyGuard', guard)
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Which presented keys are worth a store lookup (src/authentication/key-guard.ts). */
    keyGuard: KeyGuard<ApiKeyRecord>
  }
}

export default fp(keyGuard, { name: 'key-guard', dependencies: ['repositories'] })
