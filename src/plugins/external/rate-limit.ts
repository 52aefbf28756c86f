import fastifyRateLimit, { type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { maskPassword } from '../../config.js'
import { MemoryRateLimitStore } from '../../rate-limit/memory-store.js'
import { RedisRateLimitStore } from '../../rate-limit/redis-store.js'
import type { HitResult, RateLimitStore } from '../../rate-limit/store.js'
import { windowAt } from '../../rate-limit/windows.js'

export interface RateLimitStoreOptions {
  banSeconds: number
  /** Counters and bans in Redis, shared by every instance; in process memory when absent. */
  redis?: { url: string, keyPrefix: string, commandTimeoutMs: number } | undefined
  /** Milliseconds since the epoch. */
  now: () => number
}

/**
 * @fastify/rate-limit over the service's own counter store (memory, or Redis for several
 * instances). No limiter is global: the rate-limit policy (src/plugins/app/rate-limit-policy.ts)
 * creates them, per window and limit, with the key each request is counted under, and every count and ban
 * goes through the plugin to this store.
 */
async function rateLimit (app: FastifyInstance, options: RateLimitStoreOptions) {
  let store: RateLimitStore
  if (options.redis) {
    const redis = new RedisRateLimitStore({
      ...options.redis,
      onConnectionError: (error) => app.log.debug({ err: error }, 'rate-limit store connection error')
    })
    store = redis
    const first = await redis.connected(Math.max(1000, options.redis.commandTimeoutMs * 5))
    if (first.state === 'refused') {
      await redis.close()
      throw new Error(`REDIS_URL=${maskPassword(options.redis.url)}: ${first.reason}: name a database the server has (its databases setting), or none for 0`)
    }
    if (first.state === 'unreachable') {
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
    // Failures reach the policy, which serves the request uncounted (fail open) and says so.
    skipOnError: false
  })
}

type IncrCallback = Parameters<FastifyRateLimitStore['incr']>[1]

/**
 * Presents a RateLimitStore as a `@fastify/rate-limit` store, so the plugin is the one path to the
 * counters and the bans. `incr` counts the request in the clock-aligned window of the limiter's
 * `timeWindow`. A banned client is reported the way the plugin recognises a ban (a count more than
 * `ban` past `max`), with the time left in the ban as its ttl.
 */
function pluginStore (store: RateLimitStore, now: () => number, banMs: number): FastifyRateLimitStoreCtor {
  class PluginStore implements FastifyRateLimitStore {
    private readonly banAfter: number

    // The plugin constructs the store with its options, and a child per limiter with the limiter's.
    constructor (options: { ban?: unknown } = {}) {
      this.banAfter = typeof options.ban === 'number' && options.ban >= 0 ? options.ban : Number.POSITIVE_INFINITY
    }

    incr (key: string, callback: IncrCallback, timeWindow?: number, max?: number): void {
      const at = now()
      const lengthMs = timeWindow ?? 0
      const limit = max ?? 0
      let result
      try {
        result = store.hit(key, lengthMs, at, { max: limit, banAfter: this.banAfter, banMs })
      } catch (error) {
        callback(error as Error)
        return
      }
      // A synchronous store answers in this same call: no promise per request.
      if ('then' in result) result.then((hit) => { this.answer(hit, callback, at, lengthMs, limit) }, (error: Error) => callback(error))
      else this.answer(result, callback, at, lengthMs, limit)
    }

    private answer ({ count, bannedUntil }: HitResult, callback: IncrCallback, at: number, lengthMs: number, limit: number): void {
      if (bannedUntil === undefined) callback(null, { current: count, ttl: windowAt(at, lengthMs).end - at })
      else callback(null, { current: limit + this.banAfter + 1, ttl: bannedUntil - at })
    }

    // Each limiter (per window and limit) gets a child that knows its `ban` threshold; the counters are
    // keyed by window length already, so every child shares the same counters and bans.
    child (limiterOptions: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore {
      // At run time these are the limiter's merged options (its `ban` included), not a route's.
      return new PluginStore(limiterOptions as { ban?: unknown })
    }
  }
  return PluginStore as unknown as FastifyRateLimitStoreCtor
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimitStore: { engine: 'redis' | 'memory', ping: () => Promise<void> }
  }
}

export default fp(rateLimit, { name: 'rate-limit' })
