import fastifyRateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { MemoryRateLimitStore } from '../../rate-limit/memory-store.js'
import { pluginStore } from '../../rate-limit/plugin-store.js'
import { RedisRateLimitStore } from '../../rate-limit/redis-store.js'
import type { RateLimitStore } from '../../rate-limit/store.js'

export interface RateLimitStoreOptions {
  banSeconds: number
  /** Counters and bans in Redis, shared by every instance; in process memory when absent. */
  redis?: { url: string, keyPrefix: string, commandTimeoutMs: number } | undefined
  /** Milliseconds since the epoch. */
  now: () => number
}

/**
 * @fastify/rate-limit over the service's own counter store (memory, or Redis for several
 * instances). No limiter is global: the rate-limit policy creates one per window, and every count
 * and ban goes through the plugin to this store.
 */
async function rateLimit (app: FastifyInstance, options: RateLimitStoreOptions) {
  let store: RateLimitStore
  if (options.redis) {
    const redis = new RedisRateLimitStore({
      ...options.redis,
      onConnectionError: (error) => app.log.debug({ err: error }, 'rate-limit store connection error')
    })
    store = redis
    if (!await redis.connected(Math.max(1000, options.redis.commandTimeoutMs * 5))) {
      app.log.warn(`cannot connect to Redis at ${new URL(options.redis.url).host}: serving requests without rate limits (fail open) until it answers`)
    }
  } else {
    store = new MemoryRateLimitStore()
  }
  app.decorate('rateLimitStore', { engine: options.redis ? 'redis' : 'memory', ping: () => store.ping() } as const)
  app.addHook('onClose', async () => { await store.close() })

  await app.register(fastifyRateLimit, {
    global: false,
    store: pluginStore(store, options.now, options.banSeconds * 1000),
    keyGenerator: (request) => {
      if (request.rateLimitClient === null) throw new Error('the request has no rate-limit client')
      return request.rateLimitClient.key
    },
    // Failures reach the policy, which serves the request uncounted (fail open) and says so.
    skipOnError: false
  })
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimitStore: { engine: 'redis' | 'memory', ping: () => Promise<void> }
  }
}

export default fp(rateLimit, { name: 'rate-limit' })
