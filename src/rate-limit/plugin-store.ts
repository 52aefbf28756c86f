import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { RateLimitStore } from './store.js'
import { windowAt } from './windows.js'

type IncrCallback = Parameters<FastifyRateLimitStore['incr']>[1]

/**
 * Presents a RateLimitStore as a `@fastify/rate-limit` store, so the plugin is the one path to the
 * counters and the bans. `incr` counts the request in the clock-aligned window of the limiter's
 * `timeWindow`. A banned client is reported the way the plugin recognises a ban (a count more than
 * `ban` past `max`), with the time left in the ban as its ttl.
 */
export function pluginStore (store: RateLimitStore, now: () => number, banMs: number): FastifyRateLimitStoreCtor {
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
      const answer = ({ count, bannedUntil }: { count: number, bannedUntil: number | undefined }) => {
        if (bannedUntil === undefined) callback(null, { current: count, ttl: windowAt(at, lengthMs).end - at })
        else callback(null, { current: limit + this.banAfter + 1, ttl: bannedUntil - at })
      }
      let result
      try {
        result = store.hit(key, lengthMs, at, { max: limit, banAfter: this.banAfter, banMs })
      } catch (error) {
        callback(error as Error)
        return
      }
      // A synchronous store answers in this same call: no promise per request.
      if ('then' in result) result.then(answer, (error: Error) => callback(error))
      else answer(result)
    }

    // Each limiter (one per window) gets a child that knows its `ban` threshold; the counters are
    // keyed by window length already, so every child shares the same counters and bans.
    child (limiterOptions: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore {
      // At run time these are the limiter's merged options (its `ban` included), not a route's.
      return new PluginStore(limiterOptions as { ban?: unknown })
    }
  }
  return PluginStore as unknown as FastifyRateLimitStoreCtor
}
